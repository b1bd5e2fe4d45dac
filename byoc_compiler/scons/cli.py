"""The SCons command line of byoc: variables, their validation, `scons -h`, and the check table.

Every mistake on the command line ends the build with one sentence naming the
variable and what is allowed, before anything is built.
"""
from __future__ import annotations

# Modules imported inside functions: byoc_compiler's frontend, build, checker, toolchain and target registry, where a
# step needs them (SCons reads the build on every run, `scons -h` and null builds included, and stays cheap).

import difflib
import sys
from dataclasses import dataclass
from pathlib import Path

from SCons.Script import ARGUMENTS, BoolVariable, EnumVariable, ListVariable, Variables

from byoc_compiler.config import CONSTANTS, EXECUTORS, INTERFACES, OPT_LEVELS


def fail(message: str) -> None:
    sys.stderr.write(f"scons: byoc: {message}\n")
    sys.exit(2)


def make_variables(config, config_path: str) -> Variables:
    targets = list(config.target_modules()) + ["host"]
    variables = Variables(None)
    variables.Add("target", "BYOC target to build for (host = no partitioning)", "", )
    variables.Add(ListVariable("toolchain", "toolchains from config.toml", list(config.build.toolchains),
                               list(config.toolchains)))
    variables.Add("model", "comma-separated zoo names or model files (.txt, .onnx, .tflite)", ",".join(config.build.models))
    variables.Add(EnumVariable("executor", "how the model runs", config.build.executor, EXECUTORS))
    variables.Add(EnumVariable("interface", "calling convention of generated functions", config.build.interface,
                               INTERFACES))
    variables.Add(EnumVariable("opt", "optimisation flag for generated code (empty: none)", config.build.opt,
                               OPT_LEVELS))
    variables.Add(EnumVariable("constants", "large constants: linked into the binary, loaded at init from "
                               "constants.bin (params), or auto (params from 64 MiB of them)", config.build.constants,
                               CONSTANTS))
    variables.Add("config", "the config file", config_path)
    variables.Add("cache", "a CacheDir shared between builds (empty: none)", "")
    variables.Add(BoolVariable("verbose", "print full compiler command lines", False))
    variables.Add("build_root", "directory for build outputs and SCons's signature file (one per concurrent build)",
                  "build")
    variables._byoc_targets = targets
    return variables


def help_text(variables, env, config) -> str:
    targets = ", ".join(f"{name}{'' if enabled else ' (disabled: ' + flag + ' = false)'}"
                        for name, (_, flag, enabled) in config.target_modules().items())
    return ("usage: scons target=NAME [variable=value ...] [check]\n\n"
            f"targets: {targets}, host\n\n" + variables.GenerateHelpText(env))


def reject_unknown(variables) -> None:
    unknown = variables.UnknownVariables()
    if unknown:
        name = next(iter(unknown))
        known = [opt.key for opt in variables.options]
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean {close[0]}=?)" if close else ""
        fail(f"unknown variable {name}={unknown[name]}{hint}; variables: {', '.join(known)} (see scons -h)")


@dataclass
class Request:
    target: str          # one target, or several joined by commas (partitioned in that priority order)
    toolchains: list[str]
    models: list[str]
    executor: str
    interface: str
    opt: str
    constants: str = "linked"
    given: tuple[str, ...] = ()     # the variables named on the command line

    def lane(self, tc) -> tuple[str, str, str]:
        """(executor, interface, constants) for one toolchain: a freestanding one (bare metal) builds AOT +
        unpacked with linked constants unless the command line says otherwise (then the build says why not)."""
        if not tc.freestanding:
            return self.executor, self.interface, self.constants
        pick = {"executor": "aot", "interface": "unpacked", "constants": "linked"}
        return tuple(getattr(self, k) if k in self.given else v for k, v in pick.items())


def _check_target(target: str, modules, config) -> None:
    if target == "host":
        return
    if target not in modules:
        close = difflib.get_close_matches(target, modules, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        fail(f"unknown target {target!r}{hint}; targets: {', '.join(list(modules) + ['host'])}")
    module, flag, enabled = modules[target]
    if not enabled:
        fail(f"target {target!r} is disabled: set {flag} = true in [backends] of {config.path}")


def _check_target_builds(names, toolchains, config) -> None:
    """One sentence before anything is built if a target cannot build here: a CPU it does not build for
    (oneDNN on aarch64) or a system library that is not installed (naming the package)."""
    from byoc_compiler.target import get_target
    from byoc_compiler.errors import ByocError

    for name in names:
        if name == "host":
            continue
        try:
            target = get_target(name)
        except ByocError as exc:
            fail(str(exc))
        for toolchain in toolchains:
            problem = target.problem(config.toolchain(toolchain))
            if problem:
                fail(problem)


def resolve(env, config) -> Request:
    if env.GetOption("help"):
        return Request("", [], [], "", "", "")
    target = env["target"]
    modules = config.target_modules()
    if not target:
        fail(f"say which target to build: scons target=NAME; targets: {', '.join(list(modules) + ['host'])}")
    names = [t.strip() for t in target.split(",") if t.strip()] or [""]
    if len(names) > 1 and "host" in names:
        fail("target=host means no partitioning; it cannot be combined with other targets")
    for target in names:
        _check_target(target, modules, config)
    target = ",".join(names)
    toolchains = list(env["toolchain"])
    if not toolchains:
        fail("toolchain= selects no toolchain; name at least one of: " + ", ".join(config.toolchains))
    _check_target_builds(names, toolchains, config)
    models = [m.strip() for m in env["model"].split(",") if m.strip()]
    if not models:
        fail("model= names no model; give zoo names or model files, e.g. model=mlp")
    from byoc_compiler.load import check_model_spec
    for spec in models:
        problem = check_model_spec(spec)
        if problem:
            fail(problem)
    given = tuple(k for k in ("executor", "interface", "constants") if k in ARGUMENTS)
    return Request(target, toolchains, models, env["executor"], env["interface"], env["opt"], env["constants"], given)


def print_check_table(target, source, env):
    from byoc_compiler.check import CheckResult, format_table

    results = [CheckResult.from_json(Path(str(s)).read_text()) for s in source]
    print(format_table(results))
    Path(str(target[0])).write_text("\n".join(r.to_json() for r in results))
    return 0 if all(r.passed for r in results) else 1
