"""Moved to byoc_compiler.transform.annotations (the passes' own infrastructure); this name stays only until
the branches written against it have landed."""
from ..transform.annotations import *  # noqa: F401,F403
