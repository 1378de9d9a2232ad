"""Which files of a workspace are test files (a convention shared by the grading tree).

A tool check is only as good as the tests it runs: an agent that rewrites the task's
tests to pass, deletes them, or adds its own turns "the tests pass" into a proxy signal
that proves nothing (spec §7: `proxy_signals⇒insufficient`). The grader therefore runs
every check over a grading tree (`harness.grading.tree`) in which the task's test files
are restored from the template and test files the template did not have are left out;
this module says which files those are.

What counts as a test file is a convention: the usual names of pytest, unittest, Go and
JavaScript test runners (`test_*.py`, `*_test.py`, `*_test.go`, `*.test.ts`,
`*.spec.jsx`, `conftest.py`), C, C++, shell, Ruby and Perl tests by the same names
(`test_calc.c`, `*_test.cc`, `test_run.sh`), and anything under a `test`, `tests`,
`__tests__` or `spec` folder. Files a check relies on beyond these are protected when
the check's command names them (`harness.grading.tree`).
"""

from __future__ import annotations

import re

#: Test sources of languages with no runner of their own here (C, C++, shell, Ruby, Perl):
#: a task's `test_calc.c` was the agent's to rewrite as `int main(void) {return 0;}`.
_OTHER = r"c|cc|cpp|cxx|rb|pl|sh|bats"
_TEST_FILE = re.compile(
    rf"(?:^|/)(?:test_[^/]*\.(?:py|{_OTHER})|[^/]*_test\.(?:py|go|{_OTHER})"
    r"|[^/]*\.(?:test|spec)\.[cm]?[jt]sx?|conftest\.py)$"
    r"|(?:^|/)(?:tests?|__tests__|spec)/"
)


def is_test_file(relative: str) -> bool:
    """Is this workspace-relative path (with `/`) a test file by convention?"""
    return _TEST_FILE.search(relative) is not None
