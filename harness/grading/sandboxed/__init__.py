"""Files the grader mounts read-only into a check's sandbox (never imported by the
harness itself): the test runner `ilh_runner.py` and an empty pytest configuration."""
