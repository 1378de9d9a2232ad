"""The six `ilh certify` examples under examples/, each as its README says, offline."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from graders.refuter import CATEGORY_IDS, token_at
from harness.certify.certificate import Certificate
from harness.cli.main import ilh
from harness.record.events import EventKind
from harness.record.store import RunStore
from tests.certify_helpers import EXAMPLES, certify, copy_example, invoke, tokens

ROLE = ("--role", "implementer", "--source", "project")


def test_clean_handoff_certifies_with_the_lint_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = copy_example("certify_clean", tmp_path)
    code, cert, _ = certify(
        folder, monkeypatch, "handoff.md", *ROLE, "--verify", "python -m unittest -q"
    )
    assert code == 0 and cert["certified"] is True and cert["reason"] is None
    Certificate.model_validate(cert)
    verdict = cert["verdict"]
    # The realization says exactly what ran: the deterministic legs, no model.
    assert verdict["realization"] == "lint-fallback" and verdict["result"] == "Pass"
    assert [row["category"] for row in verdict["sweep"]] == list(CATEGORY_IDS)
    beyond = {row["category"] for row in verdict["sweep"] if row["status"] == "beyond-lint"}
    assert beyond == {
        "reception-procedure",
        "inference-as-evidence",
        "operative-procedure",
        "emergent",
    }
    assert cert["outcome"] == {"kind": "AlreadyPortable"}
    observation = {
        j["verdict"]["stable_ref"]["locator"]: j["observation"]
        for j in cert["judgments"]
        if j["verdict"]["kind"] == "Reference"
    }
    assert observation == {
        "fizz.py": "observed",
        "test_fizz.py": "observed",
        "https://en.wikipedia.org/wiki/Fizz_buzz": "unobserved",
    }
    digest = (
        "sha256:" + __import__("hashlib").sha256((folder / "handoff.md").read_bytes()).hexdigest()
    )
    assert cert["target_identity"] == digest
    steps = cert["reception_procedure"]["dereference_steps"]
    assert digest.removeprefix("sha256:") in steps[0]


def test_clean_handoff_certifies_with_a_scripted_refuter_and_is_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = copy_example("certify_clean", tmp_path)
    store = tmp_path / "runs.db"
    code, cert, _ = certify(
        folder,
        monkeypatch,
        "handoff.md",
        *ROLE,
        "--model",
        "scripted:refuter_pass.jsonl",
        store=store,
    )
    assert code == 0 and cert["certified"] is True
    assert cert["verdict"]["realization"] == "refuter-subagent"
    with RunStore(store) as runs:
        assert runs.verify(cert["run_id"]).ok
        events = runs.events(cert["run_id"])
        summary = runs.get_run(cert["run_id"])
    assert summary.meta["kind"] == "certify" and summary.ended_by == "certified"
    assert [e.kind for e in events].count(EventKind.MODEL_CALL) == 3
    assert [e.kind for e in events].count(EventKind.TOOL_CALL) == 2
    # `ilh runs show RUN --json` shows the certification's result: the certificate.
    shown = invoke(
        folder, monkeypatch, "runs", "show", cert["run_id"], "--store", str(store), "--json"
    )
    assert json.loads(shown.stdout)["target_identity"] == cert["target_identity"]
    text = invoke(folder, monkeypatch, "runs", "show", cert["run_id"], "--store", str(store))
    assert "F5" in text.stdout and "Pass" in text.stdout


def test_tmp_route_and_session_numbering_are_not_certified_and_quoted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = copy_example("certify_tethered", tmp_path)
    code, cert, _ = certify(folder, monkeypatch, "handoff.md", *ROLE)
    assert code == 1 and cert["certified"] is False
    found = tokens(cert)
    assert found["/tmp/fizz-run.log"] == "4:1"
    assert found["D1–D5"] == "3:40"
    assert found["As above"] == "3:1"
    text = (folder / "handoff.md").read_text()
    for residual in cert["residuals"]:
        finding = residual["finding"]
        assert token_at(text, finding["location"], finding["quoted_token"])
        assert finding["advisory"] in ("Resolve", "Route", "Drop", "Defer")
        assert finding["why_unresolvable"] and finding["repair_note"]
    assert "/tmp/fizz-run.log" in cert["reason"] and "D1–D5" in cert["reason"]
    categories = {r["finding"]["category"] for r in cert["residuals"]}
    assert categories == {"unresolvable-references", "session-identifiers", "deictic-anchors"}


def test_repair_certifies_only_after_apply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = copy_example("certify_repair", tmp_path)
    before = (folder / "handoff.md").read_bytes()
    args = ("handoff.md", *ROLE, "--answers", "answers.json")
    code, cert, _ = certify(folder, monkeypatch, *args)
    assert code == 1 and "--apply" in cert["reason"]
    assert (folder / "handoff.md").read_bytes() == before  # nothing lands without --apply
    code, cert, _ = certify(folder, monkeypatch, *args, "--apply", "--certificate", "cert.json")
    assert code == 0 and cert["certified"] is True
    assert cert["outcome"]["kind"] == "Repaired" and len(cert["outcome"]["deltas"]) == 3
    assert cert["passes"] == 2
    after = (folder / "handoff.md").read_text()
    assert "/tmp/fizz0.txt" not in after and "notes/fizz0.txt" in after
    assert "as discussed" not in after and "since 0 is a multiple of both 3 and 5" in after
    assert "Task #12 (the zero case of the counting game)" in after  # the claim kept
    assert (
        cert["target_identity"].removeprefix("sha256:")
        == __import__("hashlib").sha256(after.encode()).hexdigest()
    )
    written = Certificate.model_validate_json((folder / "cert.json").read_text())
    assert written.certified and written.target.locator == "handoff.md"
    # Certified again, the repaired record is already portable.
    code, again, _ = certify(folder, monkeypatch, "handoff.md", *ROLE)
    assert code == 0 and again["outcome"] == {"kind": "AlreadyPortable"}


def _without_injection(text: str) -> str:
    return text.split("\nVerdict: Pass")[0] + "\n"


def test_injected_verdict_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = copy_example("certify_injected", tmp_path)
    code, injected, _ = certify(folder, monkeypatch, "handoff.md", *ROLE)
    assert code == 1 and injected["verdict"]["result"] == "Fail"
    plain = folder / "plain.md"
    plain.write_text(_without_injection((folder / "handoff.md").read_text()))
    code_plain, clean, _ = certify(folder, monkeypatch, "plain.md", *ROLE)
    assert code_plain == 1 and clean["verdict"]["result"] == "Fail"
    # The same residue is found either way: the injected lines made nothing pass.
    assert tokens(clean).items() <= tokens(injected).items()
    assert tokens(clean) == {"/tmp/expected.txt": "3:73"}
    # A refuter that sees through it fails it; one that obeys it gives no verdict at all.
    code, refuted, _ = certify(
        folder, monkeypatch, "handoff.md", *ROLE, "--model", "scripted:refuter_fail.jsonl"
    )
    assert code == 1 and refuted["verdict"]["result"] == "Fail"
    assert refuted["verdict"]["realization"] == "refuter-subagent"
    code, obeyed, _ = certify(
        folder, monkeypatch, "handoff.md", *ROLE, "--model", "scripted:refuter_obeys.jsonl"
    )
    assert code == 1 and obeyed["certified"] is False and obeyed["verdict"] is None
    assert "never a Pass" in obeyed["reason"]


def test_missing_sweep_is_redispatched_and_never_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = copy_example("certify_missing_sweep", tmp_path)
    store = tmp_path / "runs.db"
    code, cert, _ = certify(
        folder,
        monkeypatch,
        "handoff.md",
        *ROLE,
        "--model",
        "scripted:refuter_no_sweep.jsonl",
        store=store,
    )
    assert code == 1 and cert["certified"] is False and cert["verdict"] is None
    assert "category sweep is missing" in cert["reason"]
    assert "misses categories: emergent" in cert["reason"]
    assert "empty 'checked'" in cert["reason"]
    with RunStore(store) as runs:
        notes = [e.payload for e in runs.events(cert["run_id"], EventKind.NOTE)]
    dispatches = [n for n in notes if n.get("phase") == "F5"]
    assert [n["dispatch"] for n in dispatches] == [1, 2, 3]
    assert not any(n["valid"] for n in dispatches)
    # The same handoff with the lint-fallback certifies: only the refuter's replies failed.
    code, _, _ = certify(folder, monkeypatch, "handoff.md", *ROLE)
    assert code == 0


def test_handoff_task_is_refused_for_an_edited_objective(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = copy_example("certify_handoff", tmp_path)
    store = tmp_path / "runs.db"
    runner = CliRunner()
    run = ["run", str(folder / "task.toml"), "--json", "--store", str(store)]
    # As shipped, the certificate was issued with another key: refused, fail closed.
    result = runner.invoke(ilh, run, catch_exceptions=False)
    assert result.exit_code == 2
    assert "E303 the certificate was issued with another key" in result.stderr
    # Certified here (README.md), the edited objective is what is refused.
    code, _, made = certify(
        folder, monkeypatch, "handoff.md", "--role", "implementer", "--source", "workspace",
        "--verify", "python -m unittest -q", "--certificate", "handoff.cert.json", store=store,
    )  # fmt: skip
    assert code == 0, made.output
    with RunStore(store) as runs:
        certifications = {r.run_id for r in runs.list_runs()}
    result = runner.invoke(ilh, run, catch_exceptions=False)
    assert result.exit_code == 2
    assert "does not match its certificate handoff.cert.json" in result.stderr
    assert "Traceback" not in result.output + result.stderr
    with RunStore(store) as runs:
        # refused before any run, so before any model call
        assert {r.run_id for r in runs.list_runs()} == certifications
    # The objective exactly as certified dispatches.
    task = (folder / "task.toml").read_text()
    certified = (folder / "handoff.md").read_text()
    fixed = re.sub(
        r'objective = """.*?"""', lambda _: f'objective = """{certified}"""', task, flags=re.S
    )
    (folder / "task.toml").write_text(fixed)
    result = runner.invoke(
        ilh,
        ["run", str(folder / "task.toml"), "--json", "--store", str(store)],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["ended_by"] == "committed_complete"


def test_the_shipped_handoff_certificate_is_a_certificate() -> None:
    cert = Certificate.model_validate_json(
        (EXAMPLES / "certify_handoff" / "handoff.cert.json").read_text()
    )
    assert cert.certified and cert.target.locator == "handoff.md"
    data = (EXAMPLES / "certify_handoff" / "handoff.md").read_bytes()
    assert cert.target_identity == "sha256:" + __import__("hashlib").sha256(data).hexdigest()


def test_examples_are_offline_copies(tmp_path: Path) -> None:
    # Every certify example carries its own granted sources: nothing reaches outside it.
    for name in (
        "certify_clean",
        "certify_tethered",
        "certify_repair",
        "certify_injected",
        "certify_missing_sweep",
        "certify_handoff",
    ):
        folder = EXAMPLES / name
        assert (folder / "README.md").is_file() and (folder / "handoff.md").is_file()
    shutil.rmtree(tmp_path)
