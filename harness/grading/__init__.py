"""The grader's conversation: the independent grading of a completion claim (tool
checks, then model-judged criteria in a fresh context) and the grader's own context.

May import: `context`, `models`, `record` (result shapes), `enforce`, `workspace`,
`inputs`, and `graders`, `budgets`, `envelopes`.
Must never: import `run` or `cli`, or see the agent's conversation: it is built from the
objective, the rubric and the evidence only.
"""
