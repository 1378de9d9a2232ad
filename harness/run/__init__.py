"""The round loop of `ilh run`: the orchestrator, run setup (task → clients, store,
workspace), batches (`--concurrency`), resume, live progress.

May import: `grading`, `context`, `record`, `models`, `enforce`, `workspace`, `inputs`,
and `graders`, `budgets`, `envelopes`.
Must never: import `cli` or `conformance`, or write a status other than through
`enforce.lifecycle`.
"""
