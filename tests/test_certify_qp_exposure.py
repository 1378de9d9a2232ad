"""Qp, the premise gate (DIYLISIS Rule 32): it fires only when something is carried
downstream (a repair, a named certificate file, premises); its answer (who receives the
record, where its authoritative copy lives) is inscribed in the certificate; an
authoritative location must resolve and its line must be leak-clean. And the F6 exposure
scan: a dropped item still readable in a granted source is a content-free residual that
only a Defer settles."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from harness.certify.certificate import Certificate
from harness.certify.gate import PromptGate
from harness.certify.render import render_markdown
from tests.certify_helpers import certify, copy_example

ROLE = ("--role", "implementer", "--source", "project")


def repair(tmp_path: Path, premise: dict[str, object] | None) -> Path:
    folder = copy_example("certify_repair", tmp_path)
    answers = json.loads((folder / "answers.json").read_text())
    if premise is not None:
        answers["premise_gate"] = premise
    (folder / "answers.json").write_text(json.dumps(answers))
    return folder


def test_a_bare_already_portable_run_does_not_fire_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = copy_example("certify_clean", tmp_path)
    code, cert, _ = certify(folder, monkeypatch, "handoff.md", *ROLE)
    assert code == 0
    assert cert["premise_gate"] == {
        "fired": False,
        "answered_by": None,
        "consumer_profile": None,
        "authority_copy": None,
    }


def test_a_repair_fires_it_and_the_answer_is_inscribed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = repair(
        tmp_path,
        {"recipient_class": "human", "substrate_access": False, "authority": "project/fizz.py"},
    )
    code, cert, _ = certify(
        folder, monkeypatch, "handoff.md", *ROLE, "--answers", "answers.json", "--apply"
    )
    assert code == 0, cert.get("reason")
    gate = cert["premise_gate"]
    assert gate["fired"] is True and gate["answered_by"] == "answers"
    assert gate["consumer_profile"] == {"recipient_class": "human", "substrate_access": False}
    assert gate["authority_copy"]["kind"] == "AuthoritativeAt"
    text = render_markdown(Certificate.model_validate(cert))
    assert "derived copy, authoritative at project/fizz.py" in text


def test_without_an_answer_the_copy_claims_no_authority(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = repair(tmp_path, None)
    code, cert, _ = certify(
        folder, monkeypatch, "handoff.md", *ROLE, "--answers", "answers.json", "--apply"
    )
    assert code == 0
    gate = cert["premise_gate"]
    assert (gate["fired"], gate["answered_by"]) == (True, "default")
    assert gate["authority_copy"] == {"kind": "Derived"}


@pytest.mark.parametrize("where", ["/tmp/authority.md", "project/missing.md"])
def test_an_authority_that_does_not_resolve_is_not_certified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    folder = repair(
        tmp_path, {"recipient_class": "agent", "substrate_access": True, "authority": where}
    )
    code, cert, _ = certify(
        folder, monkeypatch, "handoff.md", *ROLE, "--answers", "answers.json", "--apply"
    )
    assert code == 1 and cert["certified"] is False
    assert cert["reason"].startswith("Qp (Rule 32)") and where in cert["reason"]


def test_a_named_certificate_file_fires_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = copy_example("certify_clean", tmp_path)
    code, cert, _ = certify(
        folder, monkeypatch, "handoff.md", *ROLE, "--certificate", "out.cert.json"
    )
    assert code == 0 and cert["premise_gate"]["fired"] is True
    written = json.loads((folder / "out.cert.json").read_text())
    assert written["premise_gate"] == cert["premise_gate"]


def test_the_prompt_re_asks_after_a_failing_answer() -> None:
    replies = iter(["human", "yes", "/tmp/x"])
    asked: list[str] = []

    def ask(prompt: object, **kwargs: object) -> str:
        asked.append(str(prompt))
        return next(replies)

    out = StringIO()
    gate = PromptGate(Console(file=out), ask=ask)
    answer = gate.premise("the authoritative location '/tmp/old' does not resolve")
    assert answer is not None
    assert (answer.recipient_class, answer.substrate_access, answer.authority) == (
        "human",
        True,
        "/tmp/x",
    )
    assert "does not resolve" in out.getvalue() and len(asked) == 3


# --- the F6 exposure scan --------------------------------------------------------------


def exposing(tmp_path: Path, findings: list[dict[str, str]]) -> Path:
    folder = copy_example("certify_clean", tmp_path)
    handoff = folder / "handoff.md"
    handoff.write_text(handoff.read_text() + "\nContext: session_id=a81f9c2e77b4 (ignore).\n")
    (folder / "project" / "notes.txt").write_text("left over: session_id=a81f9c2e77b4\n")
    (folder / "answers.json").write_text(json.dumps({"findings": findings}))
    return folder


DROP = {"token": "session_id=a81f9c2e77b4", "answer": "Drop"}


def test_a_dropped_item_still_in_a_granted_source_is_an_exposure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = exposing(tmp_path, [DROP])
    code, cert, result = certify(
        folder, monkeypatch, "handoff.md", *ROLE, "--answers", "answers.json", "--apply"
    )
    assert code == 1 and cert["certified"] is False
    exposures = [r for r in cert["residuals"] if r["reason"] == "exposure"]
    assert [r["finding"]["location"] for r in exposures] == ["exposure:project/notes.txt"]
    assert exposures[0]["finding"]["quoted_token"] == "dropped#1"
    assert "a81f9c2e77b4" not in result.stdout  # the residual itself is content-free


def test_a_deferred_exposure_travels_as_a_premise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    defer = {"token": "dropped#1", "answer": "Defer", "value": "until the notes are cleaned"}
    folder = exposing(tmp_path, [DROP, defer])
    code, cert, result = certify(
        folder, monkeypatch, "handoff.md", *ROLE, "--answers", "answers.json", "--apply"
    )
    assert code == 0, cert["reason"]
    premises = cert["reception_procedure"]["premises"]
    assert premises and premises[0]["deferral"] == "until the notes are cleaned"
    assert "a81f9c2e77b4" not in result.stdout


def test_a_drop_not_found_in_the_sources_is_no_exposure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = exposing(tmp_path, [DROP])
    (folder / "project" / "notes.txt").write_text("session_id=a81f9c2e77b45 is another\n")
    code, cert, _ = certify(
        folder, monkeypatch, "handoff.md", *ROLE, "--answers", "answers.json", "--apply"
    )
    assert code == 0, cert["reason"]
