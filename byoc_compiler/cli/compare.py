"""`byoc compare MODEL -t TARGET [--toolchain T] [--executor E] [--interface I] [--opt O]`: build, run with a
dump of every step, compare each step with the reference; the first step beyond tolerance is marked and,
when it is a region, diagnosed (wrong by itself or inherited; which op inside it). Exit 1 if any step or
output is beyond tolerance."""
from __future__ import annotations

from .build_args import add_build_arguments, inputs_of, load, targets_of

# What a command needs is imported inside its functions: `byoc --help` imports every command module
# (__main__.py), and stays fast.


def add_arguments(parser) -> None:
    add_build_arguments(parser)
    parser.add_argument("--no-diagnose", action="store_true",
                        help="do not re-run the first failing region alone (saves two builds)")


def run(args) -> int:
    from ..backend.build import build
    from ..debug.compare import compare_build

    mod, part, options = load(args)
    lib = build(part, **options)
    inputs = inputs_of(args, mod)
    report = compare_build(lib, mod, inputs, model=args.model, target=",".join(targets_of(args)) or "host",
                           diagnose=not args.no_diagnose)
    print(report.table())
    return 0 if report.passed else 1
