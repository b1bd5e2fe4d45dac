"""`byoc ops`: every registered op with its inputs, attributes and defaults (what error messages point to)."""
from __future__ import annotations

# What a command needs is imported inside its functions: `byoc --help` imports every command module
# (__main__.py), and stays fast.


def add_arguments(parser) -> None:
    pass


def run(args) -> int:
    from ..op import describe_ops

    print(describe_ops())
    return 0
