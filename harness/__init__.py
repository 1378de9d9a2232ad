"""The ilang-harness runtime, in rooms (see ARCHITECTURE.md), top to bottom:

`cli` → `conformance` → `run` → `grading` → `context` → `record` | `models` | `enforce`
→ `workspace` → `inputs`. A room imports only rooms below it; `lint-imports` checks it.
"""
