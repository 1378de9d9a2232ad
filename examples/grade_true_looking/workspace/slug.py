"""slugify: text to a URL slug.

Lower-cases the text and turns every run of characters other than ASCII letters and
digits into a single "-", with none at either end.
"""

import re


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
