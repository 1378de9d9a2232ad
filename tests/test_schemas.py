"""`ilh schema`: JSON Schemas generated from the models, and what the examples and the
commands actually produce validates against them (jsonschema, draft 2020-12)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from graders.report import GradeJSON
from harness.cli.main import ilh
from harness.cli.schema import SCHEMAS, schema_for

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def validator(name: str) -> Draft202012Validator:
    schema = schema_for(name)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def errors(name: str, instance: Any) -> list[str]:
    return [e.message for e in validator(name).iter_errors(instance)]


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_the_command_prints_each_schema(name: str) -> None:
    result = CliRunner().invoke(ilh, ["schema", name])
    assert result.exit_code == 0
    assert json.loads(result.stdout) == schema_for(name)


@pytest.mark.parametrize("task", sorted(EXAMPLES.glob("*/task.toml")), ids=lambda p: p.parent.name)
def test_every_example_task_file_validates(task: Path) -> None:
    assert errors("task", tomllib.loads(task.read_text())) == []


def test_the_task_schema_refuses_what_the_loader_refuses() -> None:
    assert errors("task", {"task": {"id": "x", "objective": "y"}, "budgets": {}})
    assert errors("task", {"task": {"id": "x", "objective": "y"}, "sandbox": {"mode": "none"}})
    sizes = {"task": {"id": "x", "objective": "y"}, "sandbox": {"memory": "2GiB"}}
    assert errors("task", sizes) == []  # what people write, not only numbers


def test_run_and_grade_outputs_validate(tmp_path: Path) -> None:
    runner = CliRunner()
    run = runner.invoke(
        ilh, ["run", str(EXAMPLES / "honest" / "task.toml"), "--json", "--store",
              str(tmp_path / "r.db")],
    )  # fmt: skip
    assert run.exit_code == 0 and errors("run", json.loads(run.stdout)) == []
    for example, code in (("grade_true", 0), ("grade_false", 1)):
        folder = EXAMPLES / example
        args = ["grade", str(folder / "task.toml"), "--workspace", str(folder / "workspace")]
        graded = runner.invoke(ilh, [*args, "--json"])
        assert graded.exit_code == code
        out = json.loads(graded.stdout)
        assert errors("grade", out) == []
        GradeJSON.model_validate(out)
    assert errors("grade", {"verdict": "verified_complete"})  # incomplete objects fail


def test_certificates_validate() -> None:
    cert = json.loads((EXAMPLES / "certify_handoff" / "handoff.cert.json").read_text())
    assert errors("certificate", cert) == []
    assert errors("certificate", {**cert, "target_identity": "md5:abc"})
