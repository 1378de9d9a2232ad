"""Running `ilh certify` in a copy of an example, offline."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from harness.certify.contract import Contract
from harness.certify.lexicon import load_lexicon
from harness.certify.reach import Reach
from harness.certify.scan import Scan, scan_target
from harness.cli.main import ilh

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
CLEAN = EXAMPLES / "certify_clean"
#: `ilh certify` of a certify example's handoff for an implementer granted its `project`,
#: with no terminal to ask on and its own store.
CERTIFY_PROJECT = ("certify", "handoff.md", "--role", "implementer", "--source", "project",
                   "--non-interactive", "--store", "s.db")  # fmt: skip


def ilh_child(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`ilh ARGS` in a child process from `cwd` (stdin closed), as a user's shell runs it:
    for what an in-process CliRunner cannot show (exit on a signal, a hung read, a file
    descriptor of the process)."""
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
        env={**os.environ, "PYTHONPATH": str(EXAMPLES.parent)}, check=False,
    )  # fmt: skip


def certify_child(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`ilh certify` of `cwd`'s `handoff.md` granted its `project` (`CERTIFY_PROJECT`),
    then `args`, in a child process."""
    return ilh_child(cwd, *CERTIFY_PROJECT, *args)


def copy_example(name: str, tmp_path: Path) -> Path:
    folder = tmp_path / name
    shutil.copytree(EXAMPLES / name, folder)
    return folder


def certify(
    folder: Path, monkeypatch: pytest.MonkeyPatch, *args: str, store: Path | None = None
) -> tuple[int, dict[str, Any], Result]:
    """`ilh certify ARGS --json --non-interactive` from `folder`; (exit, certificate, result)."""
    monkeypatch.chdir(folder)
    runner = CliRunner()
    store = store or folder.parent / "runs.db"
    result = runner.invoke(
        ilh,
        ["certify", *args, "--json", "--non-interactive", "--store", str(store)],
        catch_exceptions=False,
    )
    body: dict[str, Any] = json.loads(result.stdout) if result.stdout.strip() else {}
    return result.exit_code, body, result


def certify_project(
    folder: Path, monkeypatch: pytest.MonkeyPatch, *extra: str, store: Path | None = None
) -> tuple[int, dict[str, Any], Result]:
    """`certify` of an example's `handoff.md` for an implementer granted its `project`."""
    return certify(
        folder, monkeypatch, "handoff.md", "--role", "implementer", "--source", "project",
        *extra, store=store,
    )  # fmt: skip


def certified_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict[str, Any]]:
    """`certify_clean` certified with its certificate written to `h.cert.json`: the
    example's folder and the certificate as JSON."""
    folder = copy_example("certify_clean", tmp_path)
    code, _, result = certify_project(folder, monkeypatch, "--certificate", "h.cert.json")
    assert code == 0, result.output
    return folder, json.loads((folder / "h.cert.json").read_text())


def reseal(cert: dict[str, Any]) -> dict[str, Any]:
    """`cert` sealed with this session's record key, as if the certifier had issued it:
    for tests of what a certifier-issued certificate can carry (its seal is tested on its
    own, in tests/test_certify_seal.py)."""
    from harness.certify.certificate import Certificate
    from harness.certify.seal import issuing_key, seal_certificate

    sealed = seal_certificate(Certificate.model_validate(cert), issuing_key())
    return sealed.model_dump(mode="json")


def invoke(folder: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    monkeypatch.chdir(folder)
    return CliRunner().invoke(ilh, list(args), catch_exceptions=False)


def tokens(cert: dict[str, Any]) -> dict[str, str]:
    """quoted_token -> location of every residual."""
    return {r["finding"]["quoted_token"]: r["finding"]["location"] for r in cert["residuals"]}


def clean_with(tmp_path: Path, addition: str) -> Path:
    """A copy of `certify_clean` whose `handoff.md` ends with `addition` (after a blank
    line): the one-sentence probes of what certify finds in prose."""
    folder = copy_example("certify_clean", tmp_path)
    handoff = folder / "handoff.md"
    handoff.write_text(handoff.read_text(encoding="utf-8") + "\n" + addition, encoding="utf-8")
    return folder


def scanned(
    text: str, tmp_path: Path, *, role: str = "implementer", verify: tuple[str, ...] = ()
) -> Scan:
    """The deterministic legs' scan of `text` for `role`, `tmp_path/src` granted."""
    source = tmp_path / "src"
    source.mkdir(exist_ok=True)
    contract = Contract(
        role=role,
        activity=None,
        sources=(str(source),),
        verify=verify,
        scope=None,
        stop=None,
        certificate=None,
        verb=None,
        base=tmp_path,
    )
    return scan_target(
        text, contract, Reach(sources=[source], cwd=tmp_path, lexicon=load_lexicon())
    )


def scan_findings(
    text: str, tmp_path: Path, verify: tuple[str, ...] = ()
) -> dict[str, tuple[str, str]]:
    """token -> (location, category) of the deterministic legs' findings."""
    found = scanned(text, tmp_path, verify=verify).findings
    return {f.finding.quoted_token: (f.finding.location, f.finding.category) for f in found}
