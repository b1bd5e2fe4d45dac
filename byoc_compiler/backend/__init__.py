"""Backend: target registry, host codegen, the build driver. Names load lazily (importing is cheap).

`build` itself is `byoc_compiler.build` (the submodule backend/build.py has the same name, so it is
not re-exported here).
"""
from importlib import import_module

_LAZY = {
    "BuildResult": (".result", "BuildResult"),
    "CSourceArtifact": (".artifact", "CSourceArtifact"),
    "BlobArtifact": (".artifact", "BlobArtifact"),
}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'byoc_compiler.backend' has no attribute {name!r}")
    module, attr = _LAZY[name]
    value = getattr(import_module(module, __name__), attr)
    globals()[name] = value
    return value
