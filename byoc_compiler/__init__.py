"""byoc: bring your own codegen to neural-network models.

The public API is re-exported here lazily, so `import byoc_compiler` stays
cheap and a module that is not needed is never imported.
"""
from importlib import import_module

_LAZY = {
    "ir": ("byoc_compiler.ir", None),
    "op": ("byoc_compiler.op", None),
    "transform": ("byoc_compiler.transform", None),
    "testing": ("byoc_compiler.testing", None),
    "frontend": ("byoc_compiler.frontend", None),
    "runtime": ("byoc_compiler.runtime", None),
    "zoo": ("byoc_compiler.zoo", None),
    "IRModule": ("byoc_compiler.ir", "IRModule"),
    "parse": ("byoc_compiler.text", "parse"),
    "text": ("byoc_compiler.text", None),
    "partition_for": ("byoc_compiler.partition", "partition_for"),
    "targets": ("byoc_compiler.target", "targets"),
    "build": ("byoc_compiler.backend.build", "build"),
    "load_model": ("byoc_compiler.load", "load_model"),
}


def __getattr__(name):
    if name == "__version__":
        return _version()
    try:
        module_name, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'byoc_compiler' has no attribute {name!r}") from None
    module = import_module(module_name)
    value = module if attr is None else getattr(module, attr)
    globals()[name] = value
    return value


def _version() -> str:
    """The installed distribution's version (pyproject.toml's, through the package metadata)."""
    from importlib import metadata   # start-up: only `__version__` reads the metadata

    try:
        return metadata.version("byoc_compiler")
    except metadata.PackageNotFoundError:   # a checkout used without `pip install`
        return "0+unknown"


def __dir__():
    return sorted(list(globals()) + list(_LAZY))
