"""Model clients behind one interface: the message and reply types, the scripted
agent, and `clients/` (Anthropic, OpenAI, the local model, record and replay).

May import: `workspace` (tool call shapes), `inputs`, `budgets`.
Must never: import the run loop, the record, `enforce` or `cli`; a client answers calls,
it never decides what a reply means.
"""
