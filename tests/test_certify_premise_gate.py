"""Qp, the premise gate (DIYLISIS Rule 32): it fires only when something is carried
downstream (a repair, a named certificate file, premises); its answer (who receives the
record, where its authoritative copy lives) is inscribed in the certificate; an
authoritative location must resolve and its line must be leak-clean."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from harness.certify.certificate import Certificate
from harness.certify.gate import PromptGate
from harness.certify.render import render_markdown
from tests.certify_helpers import certify, copy_example

ROLE = ("--role", "implementer", "--source", "project")


def repair(tmp_path: Path, premise: dict[str, object] | None) -> Path:
    folder = copy_example("certify_repair", tmp_path)
    answers = json.loads((folder / "answers.json").read_text())
    if premise is not None:
        answers["premise_gate"] = premise
    (folder / "answers.json").write_text(json.dumps(answers))
    return folder


def test_a_bare_already_portable_run_does_not_fire_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = copy_example("certify_clean", tmp_path)
    code, cert, _ = certify(folder, monkeypatch, "handoff.md", *ROLE)
    assert code == 0
    assert cert["premise_gate"] == {
        "fired": False,
        "answered_by": None,
        "consumer_profile": None,
        "authority_copy": None,
    }


def test_a_repair_fires_it_and_the_answer_is_inscribed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = repair(
        tmp_path,
        {"recipient_class": "human", "substrate_access": False, "authority": "project/fizz.py"},
    )
    code, cert, _ = certify(
        folder, monkeypatch, "handoff.md", *ROLE, "--answers", "answers.json", "--apply"
    )
    assert code == 0, cert.get("reason")
    gate = cert["premise_gate"]
    assert gate["fired"] is True and gate["answered_by"] == "answers"
    assert gate["consumer_profile"] == {"recipient_class": "human", "substrate_access": False}
    assert gate["authority_copy"]["kind"] == "AuthoritativeAt"
    text = render_markdown(Certificate.model_validate(cert))
    assert "derived copy, authoritative at project/fizz.py" in text


def test_without_an_answer_the_copy_claims_no_authority(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = repair(tmp_path, None)
    code, cert, _ = certify(
        folder, monkeypatch, "handoff.md", *ROLE, "--answers", "answers.json", "--apply"
    )
    assert code == 0
    gate = cert["premise_gate"]
    assert (gate["fired"], gate["answered_by"]) == (True, "default")
    assert gate["authority_copy"] == {"kind": "Derived"}


@pytest.mark.parametrize("where", ["/tmp/authority.md", "project/missing.md"])
def test_an_authority_that_does_not_resolve_is_not_certified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    folder = repair(
        tmp_path, {"recipient_class": "agent", "substrate_access": True, "authority": where}
    )
    code, cert, _ = certify(
        folder, monkeypatch, "handoff.md", *ROLE, "--answers", "answers.json", "--apply"
    )
    assert code == 1 and cert["certified"] is False
    assert cert["reason"].startswith("Qp (Rule 32)") and where in cert["reason"]


def test_a_named_certificate_file_fires_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = copy_example("certify_clean", tmp_path)
    code, cert, _ = certify(
        folder, monkeypatch, "handoff.md", *ROLE, "--certificate", "out.cert.json"
    )
    assert code == 0 and cert["premise_gate"]["fired"] is True
    written = json.loads((folder / "out.cert.json").read_text())
    assert written["premise_gate"] == cert["premise_gate"]


def test_the_prompt_re_asks_after_a_failing_answer() -> None:
    replies = iter(["human", "yes", "/tmp/x"])
    asked: list[str] = []

    def ask(prompt: object, **kwargs: object) -> str:
        asked.append(str(prompt))
        return next(replies)

    out = StringIO()
    gate = PromptGate(Console(file=out), ask=ask)
    answer = gate.premise("the authoritative location '/tmp/old' does not resolve")
    assert answer is not None
    assert (answer.recipient_class, answer.substrate_access, answer.authority) == (
        "human",
        True,
        "/tmp/x",
    )
    assert "does not resolve" in out.getvalue() and len(asked) == 3
