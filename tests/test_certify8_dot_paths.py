"""Paths under a dot-folder are references like any other (certify8).

`.notes/plan.md` and `.github/workflows/ci.yml` in a handoff were never checked for
existence: the path pattern could not start at a dot, so a receiver was handed a missing
file and the record still certified. They are now judged as other paths are, except the
harness's and the tools' own layout names (`.ilh/`, `.ilh/runs.db`, `.venv/`, `.git/`)
when nothing of them is in the reach: there they are vocabulary (DESIGN.md speaks of
`.ilh/runs.db`), not a file handed over."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.certify_helpers import certify, certify_project, copy_example, tokens


def handoff(folder: Path, extra: str) -> None:
    target = folder / "handoff.md"
    target.write_text(target.read_text() + "\n" + extra + "\n")


@pytest.mark.parametrize("path", [".notes/plan.md", ".github/workflows/ci.yml"])
def test_a_missing_dot_folder_path_is_a_residual(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    folder = copy_example("certify_clean", tmp_path)
    handoff(folder, f"Follow the plan in {path} before you start.")
    code, cert, result = certify_project(folder, monkeypatch)
    assert code == 1, result.output
    assert path in tokens(cert), tokens(cert)


def test_an_existing_dot_folder_path_resolves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = copy_example("certify_clean", tmp_path)
    workflow = folder / "project" / ".github" / "workflows" / "ci.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text("on: push\n")
    handoff(folder, "CI runs .github/workflows/ci.yml on every push.")
    code, cert, result = certify_project(folder, monkeypatch)
    assert code == 0, result.output
    located = [j["verdict"].get("stable_ref", {}).get("locator") for j in cert["judgments"]]
    assert ".github/workflows/ci.yml" in located, cert["judgments"]


@pytest.mark.parametrize("words", ["`.ilh/runs.db`", "`.ilh/`", "`.venv/`", "`.git/`"])
def test_the_layout_names_stay_vocabulary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, words: str
) -> None:
    folder = copy_example("certify_clean", tmp_path)
    handoff(folder, f"The tools keep their own state in {words}, which you never edit.")
    code, cert, result = certify_project(folder, monkeypatch)
    assert code == 0, (result.output, tokens(cert))


@pytest.mark.shared
def test_design_md_keeps_its_one_residual(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_dir: Path
) -> None:
    # DESIGN.md speaks of `.ilh/runs.db` and `.ilh/runs/RUN/…`: vocabulary, not pointers.
    code, cert, _ = certify(
        tmp_path, monkeypatch, str(shared_dir / "DESIGN.md"), "--role", "implementer",
        "--source", str(shared_dir),
    )  # fmt: skip
    assert code == 1 and len(cert["residuals"]) == 1, tokens(cert)


def test_a_virtual_environments_interpreter_stays_vocabulary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `.venv/bin/python` is a link out of the source (to the system's python): it "exists
    # outside the granted sources", and is still the layout named, never a residual.
    folder = copy_example("certify_clean", tmp_path)
    python = folder / "project" / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.symlink_to("/usr/bin/python3")
    handoff(folder, "Run the tests:\n\n```sh\n.venv/bin/python -m unittest -q\n```")
    code, cert, result = certify_project(folder, monkeypatch)
    assert code == 0, (result.output, tokens(cert))
