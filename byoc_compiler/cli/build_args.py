"""The build options shared by `compare`, `profile` and `bisect`: model, targets, toolchain, executor,
interface, opt, inputs. Defaults come from config.toml's [build] table."""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import ByocError

# What a command needs is imported inside its functions: `byoc --help` imports every command module
# (__main__.py), and stays fast.


def add_build_arguments(parser, target_required: bool = True) -> None:
    parser.add_argument("model", help="a zoo model name or a model file (.txt/.relay text IR, .onnx, .tflite)")
    parser.add_argument("--target", "-t", action="append", required=target_required,
                        help="a target, highest priority first (repeat for several); `host` for no partitioning")
    parser.add_argument("--toolchain", help="a toolchain of config.toml (default: the first of [build].toolchains)")
    parser.add_argument("--executor", choices=("graph", "aot"), help="default: config.toml's [build].executor")
    parser.add_argument("--interface", choices=("packed", "unpacked"), help="default: [build].interface")
    parser.add_argument("--opt", help="optimization level, e.g. -O3 (default: [build].opt)")
    parser.add_argument("--config", help="config.toml to use (default: $BYOC_CONFIG or ./config.toml)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the deterministic inputs (as `scons check`)")
    parser.add_argument("--inputs", type=Path, metavar="DIR",
                        help="read the inputs from DIR/<input name>.npy instead of making deterministic ones")
    parser.add_argument("--shape", action="append", default=[], metavar="NAME=D1,D2,...",
                        help="static shape of an ONNX input with dynamic dimensions (repeatable)")


def targets_of(args) -> list[str]:
    names = [t for item in (args.target or []) for t in item.split(",") if t]
    return [] if names in ([], ["host"]) else names


def load(args):
    """(unpartitioned module, partitioned module, config, build options) from the parsed arguments."""
    from ..config import load_config
    from ..load import load_model
    from ..partition import partition_for
    from .partition import parse_shapes

    if args.config:
        # The whole command reads this config (the target registry too), as `scons config=` does.
        from ..target import reload_targets

        os.environ["BYOC_CONFIG"] = str(Path(args.config).resolve())
        reload_targets()
    config = load_config(args.config)
    mod = load_model(args.model, shape=parse_shapes(args.shape))
    targets = targets_of(args)
    part = partition_for(targets, mod) if targets else mod
    options = dict(toolchain=args.toolchain or config.build.toolchains[0],
                   executor=args.executor or config.build.executor,
                   interface=args.interface or config.build.interface,
                   opt=args.opt if args.opt is not None else config.build.opt, config=config)
    return mod, part, options


def inputs_of(args, mod) -> dict:
    """The model's inputs: deterministic ones (check.deterministic_inputs), or read from --inputs DIR."""
    import numpy as np

    from ..check import deterministic_inputs

    if args.inputs is None:
        return deterministic_inputs(mod, args.seed)
    out = {}
    for param in mod["main"].params:
        path = args.inputs / f"{param.name_hint}.npy"
        if not path.is_file():
            raise ByocError(f"--inputs {args.inputs}: no {path.name} for input {param.name_hint!r}; write one .npy "
                            "per input, named after it")
        out[param.name_hint] = np.load(path)
    return out
