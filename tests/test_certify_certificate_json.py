"""A certificate file says one thing to every reader: a key written twice
(`"certified": false, …, "certified": true`) is read one way by a first-wins reader and
the other by ilh, and the seal covers only what ilh kept. Refused as bad input (exit 2),
by `--check` and by `ilh run`'s `[handoff]` binding alike. Before: `--check` said OK."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.certify.check import load_authentic_certificate
from harness.inputs.errors import InputError
from tests.certify_helpers import certified_clean, invoke


def test_a_certificate_repeating_a_key_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, _ = certified_clean(tmp_path, monkeypatch)
    path = folder / "h.cert.json"
    text = path.read_text(encoding="utf-8")
    assert invoke(folder, monkeypatch, "certify", "--check", "h.cert.json").exit_code == 0
    # A first-wins reader now sees "not certified"; ilh's parser keeps the last value.
    path.write_text(text.replace("{", '{"certified": false, ', 1), encoding="utf-8")
    result = invoke(folder, monkeypatch, "certify", "--check", "h.cert.json")
    assert result.exit_code == 2, result.output
    assert "E303" in result.output and "'certified' twice" in result.output
    assert "Traceback" not in result.output
    with pytest.raises(InputError, match="'certified' twice"):
        load_authentic_certificate(path)
    # Nested objects too.
    path.write_text(
        text.replace('"outcome": {', '"outcome": {"kind": "Repaired", ', 1), encoding="utf-8"
    )
    with pytest.raises(InputError, match="'kind' twice"):
        load_authentic_certificate(path)
