"""BYOC targets, one package each (docs/writing-a-target.md: the target contract).

Each package creates `target = Target(...)` from `byoc_compiler.vendor`
and declares the ops and composite patterns it takes; its codegen and runtime
sources are set by other files of the same package. config.toml's [backends]
flags say which of them are enabled.
"""
