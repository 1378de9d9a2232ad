"""Command-line settings that shape how model clients are built (`ilh run --base-url`,
`--record`), passed to `harness.run.setup.client_for`."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict


class ClientOptions(BaseModel):
    model_config = ConfigDict(frozen=True)

    base_url: str | None = None
    """Another server for `openai:` or `anthropic:` (an OpenAI-compatible one, a proxy)."""
    record: Path | None = None
    """Append every call of the run's agent model to this recording (`replay:` reads it)."""


NO_OPTIONS = ClientOptions()
