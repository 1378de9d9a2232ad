"""`python -m harness` is `ilh`."""

from harness.cli.entry import main

main()
