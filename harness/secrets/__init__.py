"""Secrets the harness holds, kept out of everything it records, shows or sends.

The values of credential-like variables of the harness's environment and the keys it is
given (model API keys) are collected (`harness.secrets.names`, `harness.secrets.registry`)
and removed, with their common encodings, from every text that leaves a tool, a grader
check, a model reply or the run store (`harness.secrets.values`).

May import: nothing else of `harness`.
Must never: log, record or print a value it holds.
"""

from harness.secrets.names import credential_items, is_credential_name
from harness.secrets.registry import harness_secrets, register_secret
from harness.secrets.values import SecretValues

__all__ = [
    "SecretValues",
    "credential_items",
    "harness_secrets",
    "is_credential_name",
    "register_secret",
]
