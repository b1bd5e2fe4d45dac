"""`byoc config [FILE]`: check a config.toml and show what it enables."""
from __future__ import annotations


def add_arguments(parser) -> None:
    parser.add_argument("file", nargs="?", help="the config file (default: $BYOC_CONFIG, ./config.toml, the repo's)")


def run(args) -> int:
    from ..config import load_config
    from ..toolchain import check_toolchain
    from ..errors import ByocError

    config = load_config(args.file)
    print(f"{config.path}: ok")
    for name, (module, flag, enabled) in config.target_modules().items():
        print(f"  target {name:<12} {'enabled ' if enabled else 'disabled'}  {flag} -> {module}")
    for name, tc in config.toolchains.items():
        try:
            check_toolchain(tc)
            state = "installed"
        except ByocError as exc:
            state = f"missing ({exc})"
        run = " ".join(tc.run) if tc.run else "runs here"
        print(f"  toolchain {name:<17} {tc.cc:<26} {tc.arch:<8} {run}: {state}")
    b = config.build
    print(f"  build defaults: toolchains={','.join(b.toolchains)} executor={b.executor} interface={b.interface} "
          f"opt={b.opt} models={','.join(b.models)}")
    return 0
