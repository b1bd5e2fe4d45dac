"""The sources of byoc's built-in targets, one package each (docs/writing-a-target.md: the target contract).

They are imported as `byoc_compiler.contrib.<name>` (byoc_compiler/contrib), from a checkout and from an
installed wheel alike; this folder is not a package of its own, so that no target has two import names
(and so that no top-level `targets` package is installed). Each package creates `target = Target(...)`
from `byoc_compiler.vendor` and declares the ops and composite patterns it takes; its codegen and runtime
sources are set by other files of the same package. The [backends] flags of the settings enable them.
"""
raise ImportError("the built-in targets are imported as byoc_compiler.contrib.<name> (e.g. "
                  "byoc_compiler.contrib.ccompiler), not from the repository's targets/ folder")
