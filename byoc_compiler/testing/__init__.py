"""Testing helpers: the numpy reference interpreter (the oracle), tolerances, random graphs,
conv/pool as explicit loops, ...

Kept light: each helper module is imported on first use.
"""
from importlib import import_module

# public name -> module of this package that defines it
_LAZY = {
    "run_reference": "reference",
    "node_values": "reference",
    "conv2d_loops": "loops",
    "pool2d_loops": "loops",
}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'byoc_compiler.testing' has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value
    return value
