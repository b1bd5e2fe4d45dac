"""The subcommands of `python -m byoc_compiler` (see byoc_compiler/__main__.py's COMMANDS table)."""
