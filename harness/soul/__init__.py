"""GENE correction across runs (SPEC-v5.0 Part IV): the agent's SOUL file, the correction
cycle (add, promote, end the session), persistence before every session ends, review."""
