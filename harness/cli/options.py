"""Options that several `ilh` commands share, spelled once."""

from __future__ import annotations

import click

GRADER_MODEL_OPTION = click.option(
    "--grader-model",
    "grader_model",
    metavar="URI",
    help="Model URI of the grader for model-judged criteria (without one they stay unknown).",
)
