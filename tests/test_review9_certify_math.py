"""A formula's Greek letters are not look-alikes hiding a word. The specs this project
certifies write `∫₀ᵗ S(τ)dτ` (SPEC.md, ILANG-v5-OVERVIEW.md, SPEC-v5.0*.md) and
`Σ λ_k · ρ_k(a) / (1 - ρ_k(a))`: `dτ` and `ρ_k` were "words mixing Latin letters with
look-alikes from another script", hidden text that since this afternoon cannot be
deferred, so none of those specs could be certified (review9, `ilh certify` of
../shared/spec on main). A differential (`d` and one Greek letter) and a Greek variable
with a subscript are notation; a Greek letter inside a word that reads as English stays
hidden text."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.certify_helpers import certify_project, clean_with, tokens


@pytest.mark.parametrize(
    "line",
    [
        "Ψ(t) = (G ⊗ B) · E(t) · ∫₀ᵗ S(τ)dτ",  # SPEC.md line 522
        "| ∫S(τ)dτ | Accumulated session history | Session-bound |",  # SPEC.md line 534
        "The cost is B(a) = Σ_{k=1}^{4} λ_k · ρ_k(a) / (1 - ρ_k(a)).",  # SPEC-v5.0.md 232
        "The angle changes by dθ per step, and σ_ij is the stress.",
    ],
)
def test_greek_notation_is_not_hidden_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str
) -> None:
    folder = clean_with(tmp_path, line + "\n")
    code, cert, result = certify_project(folder, monkeypatch)
    assert code == 0 and cert["certified"] is True, (result.output, tokens(cert))


@pytest.mark.parametrize(
    ("line", "token"),
    [
        ("Implement it αs above.", "αs"),  # a Greek alpha: "as above" to the eye
        ("Implement the οther one.", "οther"),
        ("Keep dτo as it is.", "dτo"),  # more than a differential
        ("Then dο the same.", "dο"),  # a Greek omicron: "do"
        ("Implement it аs аbove.", "аs"),  # Cyrillic, never notation
    ],
)
def test_look_alikes_in_words_stay_hidden_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str, token: str
) -> None:
    folder = clean_with(tmp_path, line + "\n")
    code, cert, result = certify_project(folder, monkeypatch)
    assert code == 1 and cert["certified"] is False, result.output
    assert token in tokens(cert), tokens(cert)
