"""Options that several `ilh` commands share, spelled once."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar
from urllib.parse import urlsplit

import click

from harness.cli.errors import BadInput
from harness.workspace.sandbox import SandboxOverrides

FC = TypeVar("FC", bound=Callable[..., object])


def checked_model_uri(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A model URI given on the command line must say something: an empty one (an unset
    variable in `--model "$MODEL"`) was taken as no option at all, and the task's own
    model ran instead of the one the person meant."""
    if value is None:
        return None
    if not value.strip():
        where = param.opts[0] if param.opts else "--model"
        raise BadInput(where, "E303", "an empty model URI: name a model, or leave the option out")
    return value


GRADER_MODEL_OPTION = click.option(
    "--grader-model",
    "grader_model",
    metavar="URI",
    callback=checked_model_uri,
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


def checked_base_url(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """`--base-url` must be an http(s) URL with a host: anything else would only fail later
    as a connection error, retried as if the server were down."""
    if value is None:
        return None
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadInput(
            "--base-url",
            "E303",
            f"not an http(s) URL with a host: {value!r} (e.g. http://127.0.0.1:8080/v1)",
        )
    return value.strip()


def base_url_option(help_text: str) -> Callable[[FC], FC]:
    return click.option("--base-url", metavar="URL", help=help_text, callback=checked_base_url)


OTEL_OPTION = click.option(
    "--otel",
    metavar="TARGET",
    help="Export OpenTelemetry traces (GenAI conventions): `console` (stderr) or an "
    "OTLP/HTTP endpoint URL. Needs the `otel` extra.",
)
