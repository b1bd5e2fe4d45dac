"""`byoc profile MODEL -t TARGET [--vs TARGET ...] [--repeat N] [--trace out.json]`: per-step and per-target
median times, share of the run and GFLOP/s of conv2d/dense; with --vs, other builds of the same model (e.g.
`--vs host`) profiled too and compared node by node; --trace writes a Chrome trace-event JSON (Perfetto)."""
from __future__ import annotations

from pathlib import Path

from .build_args import add_build_arguments, inputs_of, load

# What a command needs is imported inside its functions: `byoc --help` imports every command module
# (__main__.py), and stays fast.


def add_arguments(parser) -> None:
    add_build_arguments(parser)
    parser.add_argument("--vs", action="append", default=[], metavar="TARGET",
                        help="also profile the model built for these targets (`host`: no partitioning; a,b for "
                             "several) and compare node by node; repeatable")
    parser.add_argument("--repeat", type=int, default=21, help="timed runs (medians are reported); default 21")
    parser.add_argument("--trace", type=Path, help="write a Chrome trace-event JSON (one lane per target)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall time (default) or this thread's CPU time, which leaves out the time other "
                             "processes took: steadier on a loaded machine, wrong for targets that run threads")


def run(args) -> int:
    from ..backend.build import build
    from ..debug.profile import profile_build, side_by_side
    from ..debug.trace import write_trace
    from ..load import load_model
    from ..partition import partition_for

    mod, part, options = load(args)
    inputs = inputs_of(args, mod)
    profiles = [profile_build(build(part, **options), inputs, args.repeat, clock=args.clock)]
    for spec in args.vs:
        targets = [t for t in spec.split(",") if t and t != "host"]
        other = partition_for(targets, load_model(args.model)) if targets else mod
        profiles.append(profile_build(build(other, **options), inputs, args.repeat, clock=args.clock))
    for prof in profiles:
        print(prof.table())
        print()
    if len(profiles) > 1:
        print(side_by_side(profiles, mod, inputs).table())
    if args.trace:
        write_trace(args.trace, profiles)
        print(f"wrote {args.trace} (open in https://ui.perfetto.dev or chrome://tracing)")
    return 0
