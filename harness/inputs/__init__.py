"""What users write, read safely: the task file, JSONL inputs (scripted agents,
recordings, cases), durations, and the one error type for bad input (a location and a
code, exit 2).

May import: nothing else of `harness`.
Must never: run anything a file names; it validates and hands on.
"""
