"""Independent judges (spec §0 L3, §5–§7): the grader of completion claims.

Modules, in the order a grading uses them:

* `criteria`    — the rubric as the grader applies it; pass/fail/unknown; unknown causes
* `tool_checks` — criteria with `run`: a command in the workspace, exit 0 = pass
* `model_judge` — criteria without `run`: the grader model's structured answer, its
                  validation and its one retry
* `evidence`    — the evidence map: `::EVIDENCE` items per deliverable, and why the
                  agent's own evidence decides nothing
* `scoring`     — weighted score and the verdict rule
* `audit`       — the four-step completion audit of spec §7 (the audit report)
* `report`      — the grade report: DESIGN §6 JSON, the grader's status line, what the
                  runtime does with it, the agent's feedback

Depends on `envelopes` and `budgets` only (DESIGN §2): the harness injects the command
runner and the grader model session (`harness.grading.grader`, `harness.grading.session`).
"""
