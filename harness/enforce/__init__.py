"""The enforcement core: the only code that decides a status.

Holds: provenance (who wrote a segment), the hostile claim reader, the authority model
that classifies proposals, the spec §4 transition table, and the lifecycle that writes
commits.
May import: `envelopes` only.
Must never: import `run`, `record`, `cli`, a model client or anything that does I/O;
it is pure, so every decision it makes can be tested without a model, a store or a disk.
"""
