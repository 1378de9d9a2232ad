"""slugify: text to a URL slug."""

import sys


def slugify(text: str) -> str:
    return text.lower().replace(" ", "-")


if __name__ == "__main__":
    print(slugify(" ".join(sys.argv[1:])))
