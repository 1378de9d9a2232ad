"""Time values in task files: a number of seconds, or a string with a unit (DESIGN §5)."""

from __future__ import annotations

import math
import re

_DURATION = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|h)?\s*\Z")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(value: object) -> float:
    """Seconds from `300`, `2.5`, `"300s"`, `"5m"`, `"1h"`, `"250ms"`; ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError("a duration is a number of seconds or a string like '300s' or '5m'")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and (match := _DURATION.match(value)):
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    else:
        raise ValueError(f"not a duration: {value!r} (use seconds or e.g. '300s', '5m')")
    # TOML has `inf` and `nan` (and `1e400` overflows to inf): the budget ledger cannot
    # hold either, and would fail later with a traceback instead of naming the key.
    if not math.isfinite(seconds):
        raise ValueError(f"a duration must be a finite number of seconds, not {value!r}")
    if seconds < 0:
        raise ValueError("a duration cannot be negative")
    return seconds
