"""The agent's hands: the run's workspace folder and its confined file tools, the
command runner, and stopping running commands on Ctrl-C.

May import: `inputs`.
Must never: import a model client, the run loop or the record; every path it touches
is confined to the workspace it was given.
"""
