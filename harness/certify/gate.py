"""The gates where a person decides (DIYLISIS Constitution): the F0 contract-provenance
gate (Confirm | Correct), the Qd residual gate (exactly Resolve, Route, Drop, Defer) and
the Qp premise gate (who receives the record, where its authoritative copy lives).

Answers come from `--answers FILE` first; then, on an interactive terminal, from rich
prompts; otherwise there is no answer, and the residual stays open (not certified).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from rich.console import Console
from rich.prompt import Prompt

from graders.refuter import ADVISORIES, Finding
from harness.certify.certificate import GateAnswer
from harness.certify.contract import PremiseAnswer
from harness.secrets.terminal import shown

ContractAnswer = tuple[Literal["confirm"], None] | tuple[Literal["correct"], str]


class UserLeft(Exception):
    """The person left a gate (Ctrl-C, end of input): no certificate (DIYLISIS Esc)."""


class Gate(Protocol):
    def contract(self, field: str, value: str) -> ContractAnswer | None: ...

    def residual(self, finding: Finding) -> GateAnswer | None: ...

    def premise(self, problem: str | None) -> PremiseAnswer | None: ...


class NoGate:
    """Non-interactive: nobody to ask."""

    def contract(self, field: str, value: str) -> ContractAnswer | None:
        return None

    def residual(self, finding: Finding) -> GateAnswer | None:
        return None

    def premise(self, problem: str | None) -> PremiseAnswer | None:
        return None


@dataclass
class PromptGate:
    """Rich prompts on the terminal. Context is printed before the question; the
    question offers only the four options (Rules 13-14)."""

    console: Console
    ask: Callable[..., str] = Prompt.ask

    def _ask(self, *args: object, **kwargs: object) -> str:
        try:
            return self.ask(*args, console=self.console, **kwargs)
        except (KeyboardInterrupt, EOFError):
            raise UserLeft() from None

    def contract(self, field: str, value: str) -> ContractAnswer | None:
        self.console.print(f"[bold]{field}[/] was not written by you: [italic]{shown(value)}[/]")
        choice = self._ask("Confirm or correct it?", choices=["confirm", "correct"])
        if choice == "confirm":
            return ("confirm", None)
        return ("correct", self._ask(f"Your own words for {field}"))

    def residual(self, finding: Finding) -> GateAnswer | None:
        self.console.print(
            f"\n[bold]{shown(finding.quoted_token)}[/] at {shown(finding.location)} "
            f"({shown(finding.category)}): {shown(finding.why_unresolvable)}\n"
            f"  advisory: {finding.advisory} — {shown(finding.repair_note)}"
        )
        self.console.print(
            "  1. Resolve — supply the definition or reference that resolves it\n"
            "  2. Route — carry it by a stable reference the receiver resolves\n"
            "  3. Drop — the activity does not need it; release it\n"
            "  4. Defer — set it aside until a named condition is met"
        )
        tag = self._ask(
            "How should this item be handled?", choices=list(ADVISORIES), default=finding.advisory
        )
        prompts = {
            "Resolve": "The definition, inline evidence or reference",
            "Route": "The stable reference (path, URL or id)",
            "Defer": "The condition that re-triggers it",
        }
        if tag == "Drop":
            return GateAnswer(tag="Drop")
        value = self._ask(prompts[tag]).strip()
        if not value:
            return None
        return GateAnswer.model_validate({"tag": tag, "value": value})

    def premise(self, problem: str | None) -> PremiseAnswer | None:
        if problem:
            self.console.print(f"[bold red]{shown(problem)}[/]")
        self.console.print(
            "\n[bold]Qp[/]: this record is carried downstream (a repair, a certificate "
            "file or premises). Who receives it, and where does its authoritative copy live?"
        )
        recipient = self._ask("Recipient", choices=["agent", "human"], default="agent")
        access = self._ask("Can the recipient read the granted sources?", choices=["yes", "no"])
        authority = self._ask(
            "Authoritative copy: 'derived', or its stable location", default="derived"
        ).strip()
        return PremiseAnswer(
            recipient_class="human" if recipient == "human" else "agent",
            substrate_access=access == "yes",
            authority=authority or "derived",
        )
