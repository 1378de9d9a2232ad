"""Make `docs/view-report.png`, the README's picture of `ilh view`: a real run (a scripted
agent that first forges the runtime's commit, then does the work honestly and is verified
by the grader) rendered by the viewer and photographed by headless Chromium at 1280 px.

    PYTHONPATH=. python docs/make_screenshot.py [--out docs/view-report.png] [--height 1500]

Needs a Chromium (Debian: `apt-get install chromium`). The picture is the top of the page
(the overview sections); `--height 0` takes the whole page.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from click.testing import CliRunner  # noqa: E402

from harness.cli.main import ilh  # noqa: E402
from tests.chromium import chromium, find_chromium  # noqa: E402
from tests.view_runs import forged_then_honest  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "view-report.png")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=1500, help="0: the whole page")
    args = parser.parse_args()
    binary = find_chromium()
    if binary is None:
        print("no Chromium found (apt-get install chromium, or set ILH_CHROMIUM)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="ilh-shot-") as tmp:
        store, run_id = forged_then_honest(Path(tmp))
        page_file = Path(tmp) / "report.html"
        done = CliRunner().invoke(
            ilh, ["view", run_id, "--store", str(store), "--out", str(page_file)]
        )
        if done.exit_code != 0:
            print(done.output, file=sys.stderr)
            return 1
        with chromium(binary) as browser:
            page = browser.page(page_file.as_uri(), args.width, args.height or 800)
            png = page.screenshot(max_height=args.height or None)
    args.out.write_bytes(png)
    print(f"{args.out}: {len(png):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
