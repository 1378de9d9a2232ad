"""slugify: text to a URL slug.

Lower-cases the text and turns every run of characters other than ASCII letters and
digits into a single "-", with none at either end.

Command line: `python -m slug TEXT` prints the slug of TEXT.
"""

import re
import sys


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


if __name__ == "__main__":
    print(slugify(" ".join(sys.argv[1:])))
