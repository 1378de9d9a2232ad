"""`ilh certify`: Diylisis (spec/DIYLISIS.md), the portability certification of a handoff
for a zero-memory receiver. The contract (F0), the deterministic legs (F1-F4, F6 lints),
the repair loop, the zero-memory refuter as a fresh subagent (F5), the Certificate (F7)
and the receiver's re-check."""
