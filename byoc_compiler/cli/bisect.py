"""`byoc bisect MODEL -t TARGET [build options] --out DIR [--name repro]`: for a model whose build fails the
check, find a small failing subgraph (starting at the op `compare` blames) and write it as a text-IR model
plus its inputs as .npy; prints the `scons` command that reproduces it."""
from __future__ import annotations

import shlex
from pathlib import Path

from .build_args import add_build_arguments, inputs_of, load, targets_of

# What a command needs is imported inside its functions: `byoc --help` imports every command module
# (__main__.py), and stays fast.


def add_arguments(parser) -> None:
    add_build_arguments(parser)
    parser.add_argument("--out", type=Path, default=Path("repro"), help="directory for the reproducer (./repro)")
    parser.add_argument("--name", default="repro", help="file name of the reproducer model (repro -> repro.txt)")
    parser.add_argument("--max-tries", type=int, default=60, help="builds the shrinker may try (default 60)")


def run(args) -> int:
    from ..debug.bisect import bisect_failure

    mod, _, options = load(args)
    targets = targets_of(args)
    result = bisect_failure(mod, targets, options, inputs_of(args, mod), args.out, args.name, args.max_tries)
    for line in result.log:
        print(f"  {line}")
    print(f"smallest failing subgraph: {result.op_count} op(s), after {result.tries} builds")
    print(f"wrote {result.model_path} and its inputs in {result.inputs_dir}/")
    cmd = ["scons", f"target={','.join(targets) or 'host'}", f"model={result.model_path}",
           f"toolchain={options['toolchain']}", f"executor={options['executor']}",
           f"interface={options['interface']}", f"opt={options['opt']}", "check"]
    print("reproduce: " + " ".join(shlex.quote(c) for c in cmd))
    print(f"   or: python -m byoc_compiler compare {shlex.quote(str(result.model_path))} -t "
          f"{','.join(targets) or 'host'} --inputs {shlex.quote(str(result.inputs_dir))}")
    return 0
