"""The one exception family users see: a ByocError's message names the bad input and the fix.

The CLI and the SCons tool print it without a traceback; anything else escaping is a bug.
"""


class ByocError(Exception):
    """Bad input or environment: a model, a config key, a variable, a missing compiler."""
