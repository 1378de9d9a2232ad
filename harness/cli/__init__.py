"""The command line (`ilh`): one module per command, on top of every other room.

Holds: argument parsing, terminal output (rich), exit codes, logging set-up.
May import: every room of `harness`, and `graders`, `budgets`, `envelopes`.
Must never: decide a status, write the run record itself, or assemble a prompt; it
calls the rooms that do.
"""
