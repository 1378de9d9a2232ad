"""`ilh view` in a real headless browser (Debian's Chromium, driven over the DevTools
protocol by `tests/chromium.py`): the report of a real scripted run is opened from its
file, and what the browser rendered is checked, not the HTML text.

The layout guard is geometric, not a golden image: no horizontal overflow at 1280 px and
at a phone's 390 px, the sections stacked in order without overlap, recorded text kept
inside its box, and the screenshot's own pixels checked where the geometry says the header,
the page background and the untrusted marker are. A pixel-exact comparison would break on
every Chromium or font update without saying anything about the layout.

Without a Chromium these tests skip with one line; with `ILH_REQUIRE_BROWSER=1` (CI, once
it installed Chromium) they fail instead.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.cli.main import ilh
from tests.chromium import Chromium, Page, chromium, find_chromium, png_pixels
from tests.view_runs import HOSTILE, forged_then_honest, run_with_hostile_output

pytestmark = pytest.mark.browser

SECTIONS = ["timeline", "grader", "proposals", "violations", "budgets", "rounds"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    binary = find_chromium()
    if binary is None:
        reason = "no Chromium (apt-get install chromium, or set ILH_CHROMIUM): browser tests"
        if os.environ.get("ILH_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{reason} required by ILH_REQUIRE_BROWSER=1")
        pytest.skip(f"{reason} skipped")
    with chromium(binary) as opened:
        yield opened


def report_of(store: Path, run_id: str, folder: Path) -> Path:
    out = folder / f"{run_id}.html"
    done = CliRunner().invoke(ilh, ["view", run_id, "--store", str(store), "--out", str(out)])
    assert done.exit_code == 0, done.output
    return out


def made(folder: Path, scripted: Callable[[Path], tuple[Path, str]]) -> tuple[Path, dict[str, Any]]:
    """The report of a scripted run, and the run's result (`runs show --json`)."""
    store, run_id = scripted(folder)
    result = CliRunner().invoke(ilh, ["runs", "show", run_id, "--store", str(store), "--json"])
    return report_of(store, run_id, folder), json.loads(result.stdout)


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    return made(tmp_path_factory.mktemp("hostile"), run_with_hostile_output)


@pytest.fixture(scope="module")
def forged_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    return made(tmp_path_factory.mktemp("forged"), forged_then_honest)


def rounds_of(result: dict[str, Any]) -> int:
    used: int = next(b["used"] for b in result["budgets"] if b["kind"] == "rounds")
    return used


def texts(page: Page, selector: str) -> list[str]:
    found: list[str] = page.evaluate(
        f"[...document.querySelectorAll({json.dumps(selector)})].map(e => e.textContent)"
    )
    return found


def test_the_rendered_page_shows_the_run(
    browser: Chromium, hostile_report: tuple[Path, dict[str, Any]]
) -> None:
    report, result = hostile_report
    page = browser.page(report.as_uri(), 1280)
    ids = page.evaluate("[...document.querySelectorAll('main > section')].map(s => s.id)")
    assert ids == SECTIONS
    # The status history, in the order the runtime decided it.
    timeline = texts(page, "#timeline li")
    assert "state:running" in timeline[0] and "state:complete" in timeline[-1]
    assert any("verified_complete" in line for line in timeline)
    # A block per model call; the runtime's lines and the agent's text in each.
    rounds = page.evaluate("document.querySelectorAll('#rounds .round').length")
    assert rounds == rounds_of(result) and rounds >= 4
    assert all("::BUDGET" in t for t in texts(page, "#rounds pre.runtime"))
    # The hostile tool output: text (the script never ran, no element was made of it),
    # inside a block the browser draws with the untrusted label and its orange edge.
    assert HOSTILE in texts(page, "#rounds pre.untrusted")
    assert page.evaluate("document.scripts.length") == 0
    label = page.evaluate(
        "getComputedStyle(document.querySelector('pre.untrusted'), '::before').content"
    )
    assert label == '"untrusted: tool output"'
    edge = page.evaluate(
        "getComputedStyle(document.querySelector('pre.untrusted')).borderLeftColor"
    )
    assert edge == "rgb(217, 130, 43)"
    # Proposals with their dispositions, the grader's criteria with evidence.
    assert texts(page, "#proposals tr.accepted td:nth-child(2)") == ["accepted"]
    criteria = texts(page, "#grader tr.pass td:first-child")
    assert sorted(criteria) == sorted(c["id"] for c in result["grader"]["criteria"])
    assert "Ran 2 tests" in "".join(texts(page, "#grader td.ev"))
    assert texts(page, "#violations td") == ["none"]


def test_budget_bars_are_drawn_to_scale(
    browser: Chromium, hostile_report: tuple[Path, dict[str, Any]]
) -> None:
    report, result = hostile_report
    page = browser.page(report.as_uri(), 1280)
    bars = page.evaluate(
        """[...document.querySelectorAll('#budgets tr.budget')].map(r => ({
            kind: r.cells[0].textContent,
            used: r.cells[1].textContent,
            track: r.querySelector('.bar').getBoundingClientRect().width,
            fill: r.querySelector('.bar span').getBoundingClientRect().width,
            rounds: [...r.querySelectorAll('.spark span')].map(
                s => s.getBoundingClientRect().height),
        }))"""
    )
    budgets = {row["kind"]: row for row in result["budgets"]}
    assert {bar["kind"] for bar in bars} == set(budgets)
    for bar in bars:
        used, limit = (float(x) for x in bar["used"].split(" / "))
        assert bar["fill"] == pytest.approx(bar["track"] * min(1, used / limit), abs=1.5)
        # One bar per round, never shrinking: a budget is only ever spent.
        assert len(bar["rounds"]) == rounds_of(result)
        assert bar["rounds"] == sorted(bar["rounds"])
    rounds_bar = next(b for b in bars if b["kind"] == "rounds")
    assert rounds_bar["rounds"][-1] > rounds_bar["rounds"][0] > 0


def test_rejections_and_violations_are_shown(
    browser: Chromium, forged_report: tuple[Path, dict[str, Any]]
) -> None:
    report, result = forged_report
    page = browser.page(report.as_uri(), 1280)
    rows = texts(page, "#violations tr.violation")
    assert len(rows) == len(result["violations"]) >= 2
    assert any("authority_forgery" in row for row in rows)
    rejected = page.evaluate(
        "[...document.querySelectorAll('#proposals tr.rejected')].map("
        "r => [r.cells[1].textContent, getComputedStyle(r).color])"
    )
    assert rejected and all(cells == ["rejected", "rgb(179, 38, 30)"] for cells in rejected)


def test_the_page_asks_for_nothing(
    browser: Chromium, hostile_report: tuple[Path, dict[str, Any]]
) -> None:
    report, _ = hostile_report
    page = browser.page(report.as_uri(), 1280)
    # Every request the browser made for this page: the file itself, nothing else.
    assert page.requests() == [report.as_uri()]
    links = page.evaluate(
        "[...document.querySelectorAll('[src],[href],link,script,img,iframe,object')]"
        ".map(e => e.outerHTML)"
    )
    assert links == []
    assert "url(" not in page.evaluate(
        "[...document.styleSheets].map(s => [...s.cssRules].map(r => r.cssText).join()).join()"
    )


GEOMETRY = """(() => {
  const doc = document.documentElement;
  const boxes = [...document.querySelectorAll('main > section')].map(s => {
    const r = s.getBoundingClientRect();
    return {id: s.id, top: r.top + scrollY, bottom: r.bottom + scrollY, left: r.left,
            right: r.right};
  });
  const spill = [...document.querySelectorAll('pre, code, td, th, li, h1, h2, header div')]
    .filter(e => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).display !== 'inline')
    .map(e => e.tagName + '.' + e.className + ': ' + e.textContent.slice(0, 40));
  return {scroll: doc.scrollWidth, width: innerWidth, height: doc.scrollHeight, boxes, spill,
          header: document.querySelector('header').getBoundingClientRect().toJSON()};
})()"""


@pytest.mark.parametrize("width", [1280, 390])
def test_layout_fits_the_width(
    browser: Chromium, forged_report: tuple[Path, dict[str, Any]], width: int
) -> None:
    report, _ = forged_report
    page = browser.page(report.as_uri(), width)
    shape = page.evaluate(GEOMETRY)
    assert shape["scroll"] <= shape["width"], "the page scrolls sideways"
    assert shape["spill"] == [], "text runs out of its box"
    boxes = shape["boxes"]
    assert [b["id"] for b in boxes] == SECTIONS
    for above, below in itertools.pairwise(boxes):
        assert above["bottom"] <= below["top"], f"{above['id']} overlaps {below['id']}"
    for box in boxes:
        assert 0 <= box["left"] < box["right"] <= width
    assert boxes[0]["top"] >= shape["header"]["bottom"]


def test_the_screenshot_is_the_laid_out_page(
    browser: Chromium, forged_report: tuple[Path, dict[str, Any]]
) -> None:
    report, _ = forged_report
    page = browser.page(report.as_uri(), 1280)
    shape = page.evaluate(GEOMETRY)
    marker = page.evaluate(
        "(() => { const r = document.querySelector('pre.untrusted').getBoundingClientRect();"
        " return [r.left + 1, r.top + scrollY + r.height / 2]; })()"
    )
    width, height, rows = png_pixels(page.screenshot())
    assert (width, height) == (1280, shape["height"])

    def pixel(x: float, y: float) -> tuple[int, int, int]:
        at = 3 * int(x)
        red, green, blue = rows[int(y)][at : at + 3]
        return red, green, blue

    header = shape["header"]
    assert pixel(header["right"] - 5, header["top"] + 5) == (0x1D, 0x23, 0x30)
    assert pixel(3, shape["boxes"][0]["top"] + 20) == (0xF6, 0xF7, 0xF9)  # page background
    first = shape["boxes"][0]
    assert pixel(first["right"] - 10, first["top"] + 5) == (0xFF, 0xFF, 0xFF)  # a section
    assert pixel(*marker) == (0xD9, 0x82, 0x2B)  # the untrusted edge, where it was laid out
    # Not blank: anti-aliased text everywhere, so many colours.
    colours = {row[i : i + 3] for row in rows[::7] for i in range(0, len(row), 3)}
    assert len(colours) > 100
