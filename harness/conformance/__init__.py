"""The conformance runner: the shared execution cases as task files, the honest
and adversarial agents that play them, and the suite that counts breaches.

May import: `run`, `record`, `enforce`, `models`, `inputs`, `envelopes`.
Must never: be imported by the runtime itself (only by tests and benchmarks).
"""
