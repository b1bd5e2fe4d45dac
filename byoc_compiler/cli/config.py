"""`byoc config [FILE]`: check the settings, say which files they were read from, show what they enable."""
from __future__ import annotations

from ..errors import ByocError

# What a command needs is imported inside its functions: `byoc --help` imports every command module
# (__main__.py), and stays fast.


def add_arguments(parser) -> None:
    parser.add_argument("file", nargs="?", help="the settings file (default: $BYOC_CONFIG, else byoc.toml, pyproject.toml's "
                        "[tool.byoc] or a config.toml of byoc's tables, from here upward)")


def problems(config) -> list[str]:
    """What would stop scons from building with this config, beyond what load_config already refuses."""
    from ..target.registry import _import_target

    out = []
    enabled = {name: (module, flag) for name, (module, flag, on) in config.target_modules().items() if on}
    if not enabled:
        flags = ", ".join(flag for _, flag, _ in config.target_modules().values())
        out.append(f"no target is enabled; set one of {flags} = true in [backends]")
    for name, message in config.target_collisions().items():
        out.append(message)
    for name, (module, flag) in enabled.items():
        entry = _import_target(name, module, flag, True, config.target_sources()[name][0].attr)
        if entry.error:
            out.append(f"target {name!r} is enabled ({flag} = true) but cannot be loaded: {entry.error}; "
                       f"create the package {module}, or set {flag} = false")
    if not config.toolchains:
        out.append("no toolchain is defined; add a [toolchains.gcc] table with cc and arch "
                   "(see the packaged byoc_compiler/defaults.toml)")
    else:
        for name in config.build.toolchains:
            if name not in config.toolchains:
                out.append(f"build.toolchains uses {name!r} (the default when [build] does not set it), which "
                           f"is not defined; defined toolchains: {', '.join(config.toolchains)}")
    return out


def run(args) -> int:
    from ..config import ConfigError, load_config
    from ..toolchain import check_toolchain

    config = load_config(args.file)
    found = problems(config)
    if found:
        raise ConfigError(f"{config.path}: " + "; ".join(found))
    print(f"{config.path}: ok")
    for label, path in zip(("packaged defaults", "settings"), config.sources):
        print(f"  read {label:<17} {path}")
    if len(config.sources) == 1:
        print("  (no byoc.toml, [tool.byoc] in pyproject.toml or byoc config.toml here or above; BYOC_CONFIG unset)")
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
