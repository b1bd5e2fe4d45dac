"""Moved to byoc_compiler.transform.named_pass (the passes' own infrastructure); this name stays only until
the branches written against it have landed."""
from ..transform.named_pass import *  # noqa: F401,F403
