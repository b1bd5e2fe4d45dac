"""`byoc targets`: every known target, whether it is enabled and by which flag, what it takes, and which
package (distribution and version) or settings file declares it."""
from __future__ import annotations

import sys

from ..columns import columns

# What a command needs is imported inside its functions: `byoc --help` imports every command module
# (__main__.py), and stays fast.


def add_arguments(parser) -> None:
    parser.add_argument("--ops", action="store_true", help="list every supported op and pattern")


def run(args) -> int:
    from ..target import targets

    rows = targets()
    header = ("target", "enabled", "flag", "from", "module", "ops", "patterns", "codegen", "state")
    table = [header]
    for t in rows:
        table.append((t.name, "yes" if t.enabled else "no", t.flag or "-", t.origin or "-", t.module or "-",
                      str(len(t.ops)),
                      str(len(t.patterns)), "yes" if t.has_codegen else ("error" if t.error else "no"),
                      _state(t)))
    print(columns(table, rule=False))
    for t in rows:
        if t.conflict:
            print(f"\n{t.name}: {t.conflict}")
        if t.error:
            print(f"\n{t.name}: {t.error}")
        elif t.missing:
            print(f"\n{t.name}: {t.missing}")
        elif args.ops:
            print(f"\n{t.name} ({t.description}):\n  ops: {', '.join(t.ops) or '-'}")
            print(f"  patterns: {', '.join(t.patterns) or '-'}")
    broken = [t for t in rows if (t.error and not _optional_and_absent(t)) or t.conflict]
    if broken:
        # a gate for CI: a target package that fails to import (or claims another's name) is an error
        print(f"byoc targets: error: {len(broken)} target(s) failed to load: "
              + "; ".join(f"{t.name}: {t.error or t.conflict}" for t in broken), file=sys.stderr)
        return 1
    return 0


def _optional_and_absent(t) -> bool:
    """A disabled target whose package is simply not there (e.g. targets/dnnl before it is installed)."""
    return not t.enabled and t.error == f"module {t.module} not found"


def _state(t) -> str:
    """ready | error | missing library (the package is printed below the table) | disabled; and its CPUs."""
    if t.error:
        state = "broken (below)"
    elif t.missing:
        state = "missing library (below)"
    elif not t.enabled:
        state = "disabled"
    else:
        state = "ready"
    limits = ([f"{', '.join(t.archs)} only"] if t.archs else []) + \
        (["hosted only"] if t.profiles is not None and "freestanding" not in t.profiles else [])
    return state + (f" ({'; '.join(limits)})" if limits else "")
