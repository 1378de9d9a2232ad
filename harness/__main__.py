"""`python -m harness` is `ilh`."""

from harness.cli import main

main()
