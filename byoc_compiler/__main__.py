"""`python -m byoc_compiler <command>` (also installed as `byoc`).

Subcommands are rows of COMMANDS: name -> (module, one-line help). Each module
defines `add_arguments(parser)` and `run(args) -> int`, and imports what it
needs inside `run`, so `--help` stays fast. Add a command by adding a row.
A ByocError, or an OSError on a path the user named, is printed as one line, without a
traceback, and exits with 2.
"""
from __future__ import annotations

import argparse
import os
import sys
from importlib import import_module

from .errors import ByocError

COMMANDS: dict[str, tuple[str, str]] = {
    "targets": ("byoc_compiler.cli.targets", "list the known targets: enabled, flag, ops, patterns, codegen"),
    "partition": ("byoc_compiler.cli.partition", "partition a model for targets; print, summarize, draw it"),
    "ops": ("byoc_compiler.cli.ops", "list every op: inputs, attributes with defaults, family"),
    "config": ("byoc_compiler.cli.config", "check config.toml; show targets and whether each toolchain is installed"),
    "compare": ("byoc_compiler.cli.compare", "build, run with a dump of every step, compare each step with the reference"),
    "zoo": ("byoc_compiler.cli.zoo", "list the zoo's models; export an ONNX-built one (resnet50, ...) as .onnx"),
    "bisect": ("byoc_compiler.cli.bisect", "shrink a failing model to a small failing subgraph; write it as a reproducer"),
    "profile": ("byoc_compiler.cli.profile", "per-step and per-target times, GFLOP/s, builds side by side, a trace"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="byoc", description="bring your own codegen: partition models for vendor targets and inspect, debug and profile their builds (build and check with scons)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        cmd = sub.add_parser(name, help=help_text, description=help_text)
        import_module(module).add_arguments(cmd)
        cmd.set_defaults(_module=module)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        code = int(import_module(args._module).run(args) or 0)
        sys.stdout.flush()  # inside the try: a closed pipe surfaces here, not at interpreter exit
        return code
    except BrokenPipeError:
        # `byoc ops | head -1`: the reader has gone; stop quietly like a Unix tool (128 + SIGPIPE)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except ByocError as exc:
        print(f"byoc {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:          # an output or input path the user named: unwritable, a directory, ...
        where = f" {exc.filename}" if exc.filename else ""
        print(f"byoc {args.command}: error:{where}: {exc.strerror or exc}; check the path", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
