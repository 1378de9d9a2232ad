"""`python -m harness` is `ilh`."""

from harness.cli.main import main

main()
