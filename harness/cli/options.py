"""Options that several `ilh` commands share, spelled once."""

from __future__ import annotations

import click

from harness.workspace.sandbox import SandboxOverrides

GRADER_MODEL_OPTION = click.option(
    "--grader-model",
    "grader_model",
    metavar="URI",
    help="Model URI of the grader for model-judged criteria (without one they stay unknown).",
)

SANDBOX_OPTION = click.option(
    "--sandbox",
    "sandbox_mode",
    type=click.Choice(["bwrap", "none"]),
    default=None,
    help="How commands and tool checks are confined: bwrap (the default; refused where no "
    "sandbox can be made) or none (UNCONFINED: the harness user's rights, network and "
    "files; the record and every output say so).",
)

NETWORK_OPTION = click.option(
    "--network",
    type=click.Choice(["none", "host"]),
    default=None,
    help="Network inside the sandbox: none (the default) or host (recorded and shown). "
    "Overrides the task file's [sandbox] network.",
)


def sandbox_overrides(mode: str | None, network: str | None) -> SandboxOverrides:
    return SandboxOverrides.model_validate({"mode": mode, "network": network})
