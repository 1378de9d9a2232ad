"""The run record: the append-only, hash-chained SQLite store, its event types and
the JSON result of a run.

May import: nothing else of `harness`.
Must never: be reachable from a sandboxed command (it lives outside every workspace) or
import a room above it: every other room may write to it, so it depends on none.
"""
