"""byoc's built-in targets, one package each, imported as `byoc_compiler.contrib.<name>` (TVM's
`relay.op.contrib.<name>`): ccompiler, examplejson, dnnl. byoc finds them through entry points of the
group `byoc.targets` (pyproject.toml), exactly as it finds a vendor's target shipped as a package.

Their sources are the repository's top-level `targets/` folder. The wheel installs `targets/<name>` here
(setup.py maps them); in a checkout this package's path is that folder. Either way each target has this
one import name, so the registry never sees one target twice under two names.
"""
from ..plugins import checkout_root

_ROOT = checkout_root()
if _ROOT is not None:
    __path__.append(str(_ROOT / "targets"))
