"""The Python API (`harness.api`): the README's snippets run as written, and the API
writes nothing to the caller's stdout."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from harness.api import grade_async, lint, run_task
from harness.inputs.errors import InputError

REPO = Path(__file__).resolve().parents[1]


def readme_snippets() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("## Python API", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.DOTALL)


@pytest.fixture
def at_repo_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The snippets' relative paths, from a folder whose `examples` is the repository's
    (so the run store they write lands in the temporary folder)."""
    (tmp_path / "examples").symlink_to(REPO / "examples")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_readme_snippets_run(at_repo_copy: Path, capfd: pytest.CaptureFixture[str]) -> None:
    snippets = readme_snippets()
    assert snippets
    for code in snippets:
        exec(compile(code, "README.md", "exec"), {})
    out = capfd.readouterr().out
    # The only stdout is the snippet's own print: the API itself writes nothing there.
    assert out.strip().splitlines() == [
        "::STATUS{@TASK|state:complete|verified_by:@GRADER|by:@RUNTIME|authority:commit}"
    ]


def test_bad_input_raises_with_its_code(at_repo_copy: Path) -> None:
    with pytest.raises(InputError) as caught:
        run_task("examples/nope/task.toml")
    assert caught.value.code == "E500"


def test_the_async_twin_runs_inside_an_event_loop() -> None:
    folder = REPO / "examples" / "grade_true"

    async def caller() -> str:  # a caller with its own running loop
        report = await grade_async(folder / "task.toml", folder / "workspace")
        return report.verdict

    assert asyncio.run(caller()) == "verified_complete"


def test_lint_returns_findings() -> None:
    assert lint("[READ:@FILE|path=a.txt]\n") == []
