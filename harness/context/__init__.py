"""Model contexts: the ordered segments of one model call (DESIGN's *envelope*) and
their rendering to provider-neutral messages. Called `context` so it does not clash with
the `envelopes` package (the iLang text layer).

Holds: the agent's system contract and envelope builder; every user, tool and file text
is wrapped `::UNTRUSTED` here and nowhere else.
May import: `models`, `enforce`, `workspace` (tool shapes), `envelopes`.
Must never: import `run`, `grading`, `record` or `cli`.
"""
