"""`ilh certify`: the legs, the contract, the gates, the loop, the certificate, --check,
bad input, and committed (git:) targets."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from harness.certify.certificate import Certificate, schema_text
from tests.certify_helpers import (
    certify,
    copy_example,
    invoke,
    reseal,
    scan_findings,
    scanned,
    tokens,
)

ROLE = ("--role", "implementer", "--source", "project")


def scan(text: str, tmp_path: Path, verify: tuple[str, ...] = ()) -> dict[str, tuple[str, str]]:
    """token -> (location, category) of the findings of the deterministic legs."""
    return scan_findings(text, tmp_path, verify)


# -- the deterministic legs ----------------------------------------------------------------


def test_locators_are_classified_by_resolves_at(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "kept.py").write_text("x = 1\n")
    (tmp_path / "elsewhere.txt").write_text("not granted\n")
    text = (
        "Read kept.py and /tmp/scratch.log and ~/.cache/pip/wheel.whl.\n"
        "Open http://localhost:8080/debug and https://github.com/acme/app/issues/42 and\n"
        "https://example.org/spec and acme/app#7 and elsewhere.txt and missing/gone.py.\n"
    )
    found = scan(text, tmp_path)
    assert found["/tmp/scratch.log"][1] == "unresolvable-references"
    assert found["~/.cache/pip/wheel.whl"][1] == "unresolvable-references"
    assert found["http://localhost:8080/debug"] == ("2:6", "unresolvable-references")
    assert "elsewhere.txt" in found  # exists, but outside the granted sources
    assert "missing/gone.py" in found
    for durable in (
        "kept.py",
        "https://github.com/acme/app/issues/42",
        "https://example.org/spec",
        "acme/app#7",
    ):
        assert durable not in found


def test_durable_but_unreachable_is_unobserved_never_resolved(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    result = scanned("See https://github.com/acme/app/pull/9 for the why.\n", tmp_path, role="r")
    [judgment] = [j for j in result.judgments if j.verdict.kind == "Reference"]
    assert judgment.observation == "unobserved"
    assert "unobserved" in judgment.basis and "resolved" not in judgment.basis.replace(
        "unobserved", ""
    )


def test_session_identifiers_need_a_definition(tmp_path: Path) -> None:
    text = (
        "Apply D1–D5, then R2, then fix #4 and Task #9; ask agent_9f8e7d6c5b.\n"
        "Keep D7 as is.\n\n"
        "D7: the decision to keep the cache.\n"
    )
    found = scan(text, tmp_path)
    assert found["D1–D5"] == ("1:7", "session-identifiers")
    assert found["R2"][1] == "session-identifiers"
    assert found["#4"][1] == "session-identifiers"
    assert found["Task #9"][1] == "session-identifiers"
    assert found["agent_9f8e7d6c5b"][1] == "session-identifiers"
    assert "D7" not in found  # defined in the target


def test_numbering_defined_in_a_granted_source_resolves(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "decisions.md").write_text("- D1: sqlite\n- D2: no ORM\n")
    assert "D1–D2" not in scan("Follow D1–D2 from decisions.md.\n", tmp_path)


def test_coined_names_and_acronyms(tmp_path: Path) -> None:
    text = (
        "Run the ZMR over the FooBarizer output; the QPS (queries per second) stays; "
        "JSON is fine.\n"
    )
    found = scan(text, tmp_path)
    assert found["ZMR"] == ("1:9", "coined-names")
    assert found["FooBarizer"][1] == "coined-names"
    assert "QPS" not in found and "JSON" not in found


def test_deictic_anchors_in_english_and_korean(tmp_path: Path) -> None:
    found = scan(
        "Do it as discussed, with that file.\n위와 같이 처리하고 그 파일을 고친다.\n", tmp_path
    )
    assert found["as discussed"] == ("1:7", "deictic-anchors")
    assert found["that file"][1] == "deictic-anchors"
    assert found["위와 같이"] == ("2:1", "deictic-anchors")
    assert found["그 파일"][1] == "deictic-anchors"


@pytest.mark.parametrize(
    ("sentence", "anchor"),
    [
        ("Fix the bug we discussed earlier in app.py.", "we discussed"),
        ("Use the fix you mentioned for the parser.", "you mentioned"),
        ("Apply the patch from my last message.", "my last message"),
        ("The output above shows the failure.", "The output above"),
        ("Keep the naming we agreed on in this conversation.", "we agreed on"),
        ("Revert what landed yesterday.", "yesterday"),
        ("Like I said, the cache is stale.", "Like I said"),
    ],
)
def test_conversation_anchors(tmp_path: Path, sentence: str, anchor: str) -> None:
    """What a conversation refers back to is an anchor: the receiver was not in it."""
    found = scan(sentence + "\n", tmp_path)
    assert found[anchor][1] == "deictic-anchors"


@pytest.mark.parametrize(
    "sentence",
    [
        "Earlier versions of Python lack tomllib.",
        "The previous release kept the old format.",
        "Say yes when asked to confirm.",
        "Write the thread-safe queue in queue.py.",
        "Raise the same error type as the reader does.",
    ],
)
def test_plain_prose_has_no_anchor(tmp_path: Path, sentence: str) -> None:
    found = scan(sentence + "\n", tmp_path)
    assert not [t for t, (_, cat) in found.items() if cat == "deictic-anchors"]


def test_anchors_in_code_are_not_prose(tmp_path: Path) -> None:
    assert scan("Run `grep 'as above' notes` now.\n\n```\nas above\n```\n", tmp_path) == {}


def test_rendering_accidents(tmp_path: Path) -> None:
    text = (
        "It takes 1~2 days, maybe 3~4 days.\n\n"
        "An `unbalanced backtick here.\n\n"
        "This sentence ends here.\n---\n\n"
        "# of retries is three\n\n"
        "```python\nprint(1)\n"
    )
    found = scan(text, tmp_path)
    assert found["~2 days, maybe 3~"] == ("1:11", "rendering-accidents")
    assert found["`"] == ("3:4", "rendering-accidents")
    assert found["---"] == ("6:1", "rendering-accidents")
    assert found["# of retries is three"][1] == "rendering-accidents"
    assert found["```"] == ("10:1", "rendering-accidents")


def test_a_home_path_is_not_a_tilde_pair(tmp_path: Path) -> None:
    assert "~/x" not in "".join(scan("Copy ~/notes to ~/backup now.\n", tmp_path))


def test_verify_commands_naming_missing_files(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "tests").mkdir()
    found = scan("Fix it.\n", tmp_path, verify=("pytest tests/ scripts/check.py", "make lint"))
    assert found == {"scripts/check.py": ("contract:verification_commands", "reception-procedure")}


def test_decisions_need_a_ledger_pointer(tmp_path: Path) -> None:
    found = scan(
        "We decided to drop Python 3.10.\n"
        "We decided to keep sqlite (https://github.com/acme/app/issues/3).\n",
        tmp_path,
    )
    assert found == {"We decided": ("1:1", "inference-as-evidence")}


def test_a_language_is_a_data_file_away(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = copy_example("certify_clean", tmp_path)
    (folder / "handoff.md").write_text("Implement fizzbuzz in fizz.py, comme convenu.\n")
    (folder / "fr.toml").write_text('language = "fr"\ndeictic = ["comme convenu"]\n')
    code, cert, _ = certify(folder, monkeypatch, "handoff.md", *ROLE)
    assert code == 0
    code, cert, _ = certify(folder, monkeypatch, "handoff.md", *ROLE, "--lexicon", "fr.toml")
    assert code == 1 and tokens(cert) == {"comme convenu": "1:32"}


# -- contract provenance (Rule 29) ------------------------------------------------------------


def _contract_file(folder: Path) -> None:
    (folder / "contract.toml").write_text(
        'target = "handoff.md"\nrole = "implementer"\nsources = ["project"]\n'
        'activity = "implement fizzbuzz and also rewrite the test suite"\n'
    )


def test_ai_authored_contract_fields_end_not_certified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = copy_example("certify_clean", tmp_path)
    _contract_file(folder)
    code, cert, _ = certify(folder, monkeypatch, "--contract", "contract.toml")
    assert code == 1 and cert["certified"] is False and cert["verdict"] is None
    assert cert["awaiting_confirmation"] == ["activity", "allowed_sources"]
    assert "activity" in cert["reason"] and "Rule 29" in cert["reason"]


def test_utterance_makes_fields_user_stated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = copy_example("certify_clean", tmp_path)
    _contract_file(folder)
    code, cert, _ = certify(
        folder,
        monkeypatch,
        "--contract",
        "contract.toml",
        "--utterance",
        "please implement fizzbuzz and also rewrite the test suite, using the project folder",
    )
    assert code == 0 and cert["certified"] is True


def test_answers_confirm_or_correct(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = copy_example("certify_clean", tmp_path)
    _contract_file(folder)
    (folder / "answers.json").write_text(
        json.dumps(
            {
                "contract": {
                    "activity": {"correct": "implement fizzbuzz"},
                    "allowed_sources": "confirm",
                }
            }
        )
    )
    code, cert, _ = certify(
        folder, monkeypatch, "--contract", "contract.toml", "--answers", "answers.json"
    )
    assert code == 0 and cert["awaiting_confirmation"] == []
    # Command-line fields are the user's own words: no confirmation needed.
    code, cert, _ = certify(
        folder, monkeypatch, "handoff.md", *ROLE, "--activity", "anything at all"
    )
    assert code == 0


# -- the gate and the loop --------------------------------------------------------------------


def test_defer_carries_the_gap_as_a_premise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = copy_example("certify_tethered", tmp_path)
    answers = {
        "findings": [
            {"token": "/tmp/fizz-run.log", "answer": "Defer", "value": "the CI log is public"},
            {"token": "As above", "answer": "Defer", "value": "never"},
            {"token": "D1–D5", "answer": "Defer", "value": "the decisions are written down"},
        ]
    }
    (folder / "answers.json").write_text(json.dumps(answers))
    code, cert, _ = certify(folder, monkeypatch, "handoff.md", *ROLE, "--answers", "answers.json")
    assert code == 0 and cert["certified"] is True
    premises = cert["reception_procedure"]["premises"]
    assert {p["deferral"] for p in premises} == {
        "the CI log is public",
        "never",
        "the decisions are written down",
    }
    assert all(r["deferred"] and r["surfaced"] for r in cert["residuals"])
    assert cert["outcome"] == {"kind": "AlreadyPortable"}  # nothing was edited


def test_drop_excises_and_the_certificate_carries_no_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = copy_example("certify_clean", tmp_path)
    handoff = folder / "handoff.md"
    handoff.write_text(handoff.read_text() + "\nContext: session_id=a81f9c2e77b4 (ignore).\n")
    (folder / "answers.json").write_text(
        json.dumps({"findings": [{"token": "session_id=a81f9c2e77b4", "answer": "Drop"}]})
    )
    code, cert, result = certify(
        folder, monkeypatch, "handoff.md", *ROLE, "--answers", "answers.json"
    )
    assert code == 1 and "--apply" in cert["reason"]
    code, cert, result = certify(
        folder, monkeypatch, "handoff.md", *ROLE, "--answers", "answers.json", "--apply"
    )
    assert code == 0
    assert cert["outcome"] == {"kind": "Repaired", "deltas": [{"kind": "ExcisionMark"}]}
    assert "a81f9c2e77b4" not in handoff.read_text()
    assert "a81f9c2e77b4" not in result.stdout  # the emitted certificate never re-leaks it


def test_a_route_that_does_not_resolve_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = copy_example("certify_repair", tmp_path)
    answers = json.loads((folder / "answers.json").read_text())
    answers["findings"][1]["value"] = "/tmp/elsewhere.txt"
    (folder / "answers.json").write_text(json.dumps(answers))
    code, cert, _ = certify(
        folder, monkeypatch, "handoff.md", *ROLE, "--answers", "answers.json", "--apply"
    )
    assert code == 1 and "/tmp/fizz0.txt" in tokens(cert)
    assert "refused" in cert["reason"]


def test_a_redeclared_verify_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = copy_example("certify_clean", tmp_path)
    (folder / "answers.json").write_text(
        json.dumps(
            {"findings": [{"token": "check_all.py", "answer": "Resolve", "value": "test_fizz.py"}]}
        )
    )
    args = ("handoff.md", *ROLE, "--verify", "python check_all.py")
    code, cert, _ = certify(folder, monkeypatch, *args)
    assert code == 1 and tokens(cert) == {"check_all.py": "contract:verification_commands"}
    code, cert, _ = certify(folder, monkeypatch, *args, "--answers", "answers.json")
    assert code == 0
    assert cert["reception_procedure"]["verification_commands"] == ["python test_fizz.py"]


def test_a_content_bearing_verb_is_reformed_at_f0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = copy_example("certify_clean", tmp_path)
    code, cert, _ = certify(
        folder, monkeypatch, "handoff.md", *ROLE, "--verb", "Implement fizzbuzz per {locator}"
    )
    assert code == 0
    assert cert["activation_edge"]["verb"] == "Read handoff.md and execute it"


# -- the certificate and the receiver ---------------------------------------------------------


def test_the_schema_file_is_the_models_schema() -> None:
    shipped = (
        Path(__file__).resolve().parents[1] / "harness" / "certify" / "certificate.schema.json"
    )
    assert shipped.read_text(encoding="utf-8") == schema_text()


def test_emitted_certificates_validate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    schema = json.loads(schema_text())
    for name, args in (("certify_clean", ()), ("certify_tethered", ())):
        folder = copy_example(name, tmp_path)
        _, cert, _ = certify(folder, monkeypatch, "handoff.md", *ROLE, *args)
        Certificate.model_validate(cert)
        assert set(schema["required"]) <= set(cert)
        assert set(cert) <= set(schema["properties"])


def test_check_detects_a_one_byte_edit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = copy_example("certify_clean", tmp_path)
    code, _, _ = certify(folder, monkeypatch, "handoff.md", *ROLE, "--certificate", "cert.json")
    assert code == 0
    ok = invoke(folder, monkeypatch, "certify", "--check", "cert.json", "--json")
    assert ok.exit_code == 0 and json.loads(ok.stdout)["ok"] is True
    data = bytearray((folder / "handoff.md").read_bytes())
    data[10] ^= 0x01
    (folder / "handoff.md").write_bytes(bytes(data))
    changed = invoke(folder, monkeypatch, "certify", "--check", "cert.json")
    assert changed.exit_code == 1 and "changed after certification" in changed.stdout


def test_check_re_checks_dereference_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = copy_example("certify_clean", tmp_path)
    certify(folder, monkeypatch, "handoff.md", *ROLE, "--certificate", "cert.json")
    (folder / "project" / "test_fizz.py").unlink()
    gone = invoke(folder, monkeypatch, "certify", "--check", "cert.json", "--json")
    report = json.loads(gone.stdout)
    assert gone.exit_code == 1 and any("test_fizz.py" in p for p in report["problems"])
    assert any("wikipedia" in u for u in report["unobserved"])
    # A target moved elsewhere is named explicitly.
    moved = tmp_path / "moved.md"
    moved.write_bytes((folder / "handoff.md").read_bytes())
    named = invoke(folder, monkeypatch, "certify", "--check", "cert.json", str(moved), "--json")
    assert json.loads(named.stdout)["target"] == str(moved)


def test_not_certified_writes_no_certificate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = copy_example("certify_tethered", tmp_path)
    code, _, result = certify(
        folder, monkeypatch, "handoff.md", *ROLE, "--certificate", "cert.json"
    )
    assert code == 1 and not (folder / "cert.json").exists()
    assert "no certificate written" in result.stderr


# -- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "code_text"),
    [
        (("missing.md", *ROLE), "E500"),
        (("handoff.md", "--source", "project"), "E303"),
        (("handoff.md", *ROLE, "--certificate", "handoff.md"), "E303"),
        (("handoff.md", "--role", "r", "--source", "nowhere"), "E500"),
        (("project", *ROLE), "E500"),
        (("handoff.md", *ROLE, "--answers", "bad.json"), "E300"),
        (("handoff.md", *ROLE, "--contract", "bad.toml"), "E303"),
        (("handoff.md", *ROLE, "--model", "nomodel"), "E303"),
        (("git:nope:handoff.md", *ROLE), "E500"),
        (("binary.bin", *ROLE), "E300"),
    ],
)
def test_bad_input_is_one_message_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], code_text: str
) -> None:
    folder = copy_example("certify_clean", tmp_path)
    (folder / "bad.json").write_text("{not json")
    (folder / "bad.toml").write_text('role = "r"\nwho = "knows"\n')
    (folder / "binary.bin").write_bytes(b"\xff\xfe\x00bad")
    code, _, result = certify(folder, monkeypatch, *args)
    assert code == 2, result.stderr
    assert code_text in result.stderr and "Traceback" not in result.stderr + result.stdout
    assert len(result.stderr.strip().splitlines()) == 1


def test_check_of_a_broken_certificate_is_bad_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cert.json").write_text('{"format": "nope"}')
    result = invoke(tmp_path, monkeypatch, "certify", "--check", "cert.json")
    assert result.exit_code == 2 and "not a certificate" in result.stderr


# -- committed records ------------------------------------------------------------------------


def _git(folder: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=folder,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def test_a_committed_record_is_certified_by_revision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = copy_example("certify_clean", tmp_path)
    _git(folder, "init", "-q")
    _git(folder, "add", "-A")
    _git(folder, "commit", "-q", "-m", "handoff")
    head = _git(folder, "rev-parse", "HEAD")
    code, cert, _ = certify(folder, monkeypatch, "git:HEAD:handoff.md", *ROLE)
    assert code == 0 and cert["target"] == {"kind": "id", "locator": f"git:{head}:handoff.md"}
    data = (folder / "handoff.md").read_bytes()
    assert cert["target_identity"] == "sha256:" + hashlib.sha256(data).hexdigest()
    # A committed record has no write channel: a repair cannot land, whatever --apply says.
    (folder / "handoff.md").write_text("Read /tmp/x.log first.\n")
    _git(folder, "commit", "-q", "-am", "tethered")
    (folder / "answers.json").write_text(
        json.dumps({"findings": [{"token": "/tmp/x.log", "answer": "Route", "value": "fizz.py"}]})
    )
    code, cert, _ = certify(
        folder, monkeypatch, "git:HEAD:handoff.md", *ROLE, "--answers", "answers.json", "--apply"
    )
    assert code == 1 and "no write channel" in cert["reason"]
    assert (folder / "handoff.md").read_text() == "Read /tmp/x.log first.\n"


# -- interactive gates, Markdown, [handoff] file ----------------------------------------------


def test_the_prompt_gate_offers_exactly_the_four_options() -> None:
    from io import StringIO

    from rich.console import Console

    from graders.refuter import Finding
    from harness.certify.gate import PromptGate, UserLeft

    asked: list[tuple[object, dict[str, object]]] = []
    replies = iter(["Route", "docs/log.txt", "correct", "only the parser"])

    def ask(prompt: object, **kwargs: object) -> str:
        asked.append((prompt, kwargs))
        return next(replies)

    gate = PromptGate(Console(file=StringIO()), ask=ask)
    finding = Finding(
        quoted_token="/tmp/x",
        location="1:1",
        category="unresolvable-references",
        why_unresolvable="temp",
        advisory="Route",
        repair_note="move it",
    )
    answer = gate.residual(finding)
    assert answer is not None and (answer.tag, answer.value) == ("Route", "docs/log.txt")
    assert asked[0][1]["choices"] == ["Resolve", "Route", "Drop", "Defer"]
    assert gate.contract("execution_scope", "everything") == ("correct", "only the parser")

    def leave(prompt: object, **kwargs: object) -> str:
        raise KeyboardInterrupt

    with pytest.raises(UserLeft):
        PromptGate(Console(file=StringIO()), ask=leave).residual(finding)


def test_markdown_rendering_says_what_ran(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = copy_example("certify_tethered", tmp_path)
    certify(folder, monkeypatch, "handoff.md", *ROLE, "--markdown", "cert.md")
    text = (folder / "cert.md").read_text()
    assert text.startswith("# NOT CERTIFIED: handoff.md")
    # The refusal's outcome (AlreadyPortable: nothing repaired) must not read as a pass.
    outcome = next(line for line in text.splitlines() if line.startswith("- outcome:"))
    assert outcome.startswith("- outcome: none, NOT CERTIFIED (no repair applied;")
    assert "is not a pass" in outcome
    assert "**lint-fallback**" in text and "| `/tmp/fizz-run.log` | 4:1 |" in text
    assert "| emergent | beyond-lint |" in text


def test_handoff_file_binding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.certify.check import bind_handoff
    from harness.inputs.errors import InputError

    folder = copy_example("certify_clean", tmp_path)
    certify(folder, monkeypatch, "handoff.md", *ROLE, "--certificate", "cert.json")
    record = (folder / "handoff.md").read_text()
    bind_handoff(folder / "cert.json", objective=record, file=folder / "handoff.md", where="t")
    with pytest.raises(InputError, match="the task's objective does not match"):
        bind_handoff(folder / "cert.json", objective="anything", file=None, where="t")
    (folder / "handoff.md").write_text((folder / "handoff.md").read_text() + " ")
    with pytest.raises(InputError, match=r"the file handoff\.md does not match"):
        bind_handoff(folder / "cert.json", objective="", file=folder / "handoff.md", where="t")
    not_certified = json.loads((folder / "cert.json").read_text()) | {"certified": False}
    (folder / "no.json").write_text(json.dumps(reseal(not_certified)))
    with pytest.raises(InputError, match="not a certificate of portability"):
        bind_handoff(folder / "no.json", objective="", file=None, where="t")
