"""`scripted:PATH`: an agent whose every word is written in a JSONL file, one model turn
per line (DESIGN §5). Used by the offline examples and the enforcement tests."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from budgets.estimate import estimate_tokens
from harness.inputs.errors import InputError
from harness.inputs.jsonl import read_jsonl
from harness.models.interface import AgentEnded, ModelReply, ModelRequest, Usage
from harness.workspace.tools import ToolCall


class ScriptedCall(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    arguments: dict[str, object] = Field(default_factory=dict)


class ScriptedUsage(BaseModel):
    # Strict: pydantic's lax mode charged `"5"` as 5 tokens and `true` as 1, silently.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)


class ScriptedTurn(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = ""
    tool_calls: list[ScriptedCall] = Field(default_factory=list)
    usage: ScriptedUsage | None = None


def load_script(path: Path, what: str = "the agent script") -> list[ScriptedTurn]:
    turns = read_jsonl(path, ScriptedTurn, what)
    if not turns:
        raise InputError(path, "E303", f"{what} has no turns: a scripted model needs one or more")
    return turns


class ScriptedClient:
    """Serves the script's turns in order; raises AgentEnded when it runs out."""

    def __init__(self, turns: list[ScriptedTurn], label: str, start: int = 0) -> None:
        self._turns = turns
        self._next = start
        self._label = label

    @classmethod
    def from_file(
        cls, path: Path, start: int = 0, what: str = "the agent script"
    ) -> ScriptedClient:
        return cls(load_script(path, what), f"scripted:{path.name}", start)

    @property
    def name(self) -> str:
        return self._label

    @property
    def turns(self) -> tuple[ScriptedTurn, ...]:
        """The whole script as loaded (the run record keeps it for `--resume`)."""
        return tuple(self._turns)

    @property
    def position(self) -> int:
        return self._next

    async def complete(self, request: ModelRequest) -> ModelReply:
        if self._next >= len(self._turns):
            raise AgentEnded(f"the script has {len(self._turns)} turn(s)")
        turn = self._turns[self._next]
        self._next += 1
        if turn.usage is not None:
            usage = Usage(
                input_tokens=turn.usage.input_tokens, output_tokens=turn.usage.output_tokens
            )
        else:
            prompt = "\n".join(m.content for m in request.messages)
            usage = Usage(
                input_tokens=estimate_tokens(prompt),
                output_tokens=estimate_tokens(turn.text),
                estimated=True,
            )
        calls = tuple(
            ToolCall(name=c.name, arguments=dict(c.arguments), id=f"call_{self._next}_{i}")
            for i, c in enumerate(turn.tool_calls)
        )
        return ModelReply(text=turn.text, tool_calls=calls, usage=usage, stop_reason="scripted")
