"""A byoc project's whole SConstruct: `scons target=ccompiler [toolchain=gcc,clang] [model=mlp]
[executor=aot] [interface=unpacked] [check]`.

Builds the configured models for one target on every selected toolchain under
build/<target>/<toolchain>/<model>/, and with `check` runs each runner and
compares its outputs with the numpy reference of the unpartitioned model.

A project's SConstruct is one line (the repository's is this line too; docs/build.md, "SCons"):

    import byoc_compiler.scons; byoc_compiler.scons.main()

The settings are the project's own (byoc.toml, [tool.byoc] in pyproject.toml or a config.toml of byoc's
tables, found from the SConstruct's directory upward; `config=FILE` or BYOC_CONFIG names another).
"""
import os
import sys

from SCons.Script import (ARGUMENTS, Action, Alias, AlwaysBuild, CacheDir, Default, Depends, Dir, Environment,
                          GetOption, Help, SConsignFile)

from ..config import find_config_path, load_config
from ..errors import ByocError
from . import TOOLPATH, cli, decider


def main() -> None:
    """Read the settings and the command line, and declare every model's build (and check)."""
    # Targets named by module path in the settings' [targets] may live in the project.
    sys.path.insert(0, Dir("#").abspath)
    config_path = os.path.abspath(ARGUMENTS.get("config") or str(find_config_path()))
    # Everything byoc_compiler loads in this process (the target registry included) reads this config.
    os.environ["BYOC_CONFIG"] = config_path
    try:
        config = load_config(config_path)
    except ByocError as exc:
        cli.fail(str(exc))
    env = _environment(config, config_path)
    if GetOption("help"):
        return      # `scons -h` prints the variables; it never plans a model
    request = cli.resolve(env, config)
    build_root = _build_root(env)
    _declare_builds(env, request, config, config_path, build_root)


def _environment(config, config_path: str):
    variables = cli.make_variables(config, config_path)
    env = Environment(variables=variables, tools=["default", "byoc"], toolpath=[TOOLPATH],
                      ENV={"PATH": os.environ["PATH"]})
    Help(cli.help_text(variables, env, config))
    cli.reject_unknown(variables)
    # A file's content hash is trusted while its timestamp is unchanged (a null build does not re-read the
    # generated sources and the linked weights), except the Python generator sources (decider.py).
    env.Decider(decider.changed)
    return env


def _build_root(env) -> str:
    if env.get("cache"):
        # SCons creates the cache directory itself (atomically, for builds starting at once), not its parents.
        os.makedirs(os.path.dirname(os.path.abspath(env["cache"])), exist_ok=True)
        CacheDir(env["cache"])
    build_root = env["build_root"]
    if build_root != "build":
        # Builds running at once each keep their own signature database (the default one is shared).
        SConsignFile(os.path.join(Dir(build_root).abspath, ".sconsign"))
    return build_root


def _declare_builds(env, request, config, config_path: str, build_root: str) -> None:
    checks, built = [], []
    for toolchain in request.toolchains:
        for spec in request.models:
            try:
                executor, interface, constants = request.lane(config.toolchain(toolchain))
                outputs, check = env.ByocModel(spec, target=request.target, toolchain=toolchain,
                                               executor=executor, interface=interface,
                                               opt=request.opt, config=config_path, constants=constants,
                                               build_root=build_root)
            except ByocError as exc:
                cli.fail(f"model {spec}, toolchain {toolchain}: {exc}")
            Default(outputs)
            built += outputs
            checks += check
    if checks:
        summary = env.Command(build_root + "/.check-summary-" + request.target, checks,
                              Action(cli.print_check_table, "byoc check table"))
        AlwaysBuild(summary)
        Depends(summary, built)  # the table comes last, after every library is linked
        Alias("check", [summary] + built)
