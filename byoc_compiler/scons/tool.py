"""SCons tool `byoc` (loaded through site_tools/byoc.py): build models for one BYOC target on configured toolchains, and check them.

Thin by design: codegen is byoc_compiler's (called from a Python action), and
compiling/linking is SCons's own Object/Program/SharedLibrary with flags taken
from byoc_compiler.toolchain, so `-j`, header scanning and CacheDir work as
they do for any C project and no compiler knowledge lives here.

Builders
  ByocCodegen  model spec -> generated sources, graph.json, params, metadata
               (the emitter lists every per-region file, so SCons knows them
               before the action runs)
  ByocCheck    runner -> check.json (run on deterministic inputs, compared with
               the numpy reference of the unpartitioned model)
Pseudo-builder
  env.ByocModel(spec, target=..., toolchain=..., ...) wires both with the
  compile and link steps and returns the check node.
"""
from __future__ import annotations

# Modules imported inside functions: byoc_compiler's frontend, build, checker, toolchain and target registry, where a
# step needs them (SCons reads the build on every run, `scons -h` and null builds included, and stays cheap).

import atexit
import os
import sys
from pathlib import Path

import SCons.Action
import SCons.Builder
import SCons.Errors
from SCons.Script import Value

from byoc_compiler.linker_script import LINKER_SCRIPT

from . import codegen as _codegen
from . import store as _store


def _codegen_emitter(target, source, env):
    request = _codegen.CodegenRequest.from_env(env)
    outdir = Path(request.outdir)
    files = _codegen.planned_files(request)
    targets = [env.File(str(outdir / rel)) for rel in files]
    # Codegen changes when the code that generates it changes: the core for everything,
    # each enabled target's own package for its regions.
    env.Depends(targets, [env.File(p) for p in _codegen.generator_sources(request)])
    return targets, source


def _codegen_action(target, source, env):
    request = _codegen.CodegenRequest.from_env(env)
    try:
        _codegen.write_outputs(request, [str(t) for t in target])
    except _codegen.ByocError as exc:
        sys.stderr.write(f"byoc: {exc}\n")
        return 1
    return 0


def _codegen_message(target, source, env):
    r = _codegen.CodegenRequest.from_env(env)
    return f"byoc codegen  {r.model_name:<16} target={r.target} toolchain={r.toolchain} " \
           f"executor={r.executor} interface={r.interface}"


def _check_action(target, source, env):
    from byoc_compiler.check import check_runner
    request = _codegen.CodegenRequest.from_env(env)
    tc = _codegen.load_config(request.config).toolchain(request.toolchain)
    mod = _codegen.load_unpartitioned(request.model_spec)
    constants = Path(request.outdir) / "constants.bin"      # params builds ("params", or "auto" when large)
    runner_args = ["--constants", str(constants)] if request.constants != "linked" and constants.exists() else []
    result = check_runner(Path(str(source[0])), list(tc.run), request.model_name, mod,
                          toolchain=request.toolchain, executor=request.executor,
                          interface=request.interface, target=request.target, runner_args=runner_args,
                          timeout=tc.timeout)
    if not result.passed and result.max_abs_err != float("inf") and not tc.freestanding:
        # (a bare-metal image has no --dump: it runs one model once over semihosting)
        # Where it goes wrong: the same runner again, dumping every step, compared step by step.
        from byoc_compiler.check import deterministic_inputs
        from byoc_compiler.debug.compare import explain_failure
        result.where = explain_failure(_codegen.build_result(request), mod, deterministic_inputs(mod),
                                       runner=Path(str(source[0])), run_prefix=list(tc.run),
                                       model=request.model_name)
    Path(str(target[0])).write_text(result.to_json())
    return 0


def _check_message(target, source, env):
    r = _codegen.CodegenRequest.from_env(env)
    return f"byoc check    {r.model_name:<16} target={r.target} toolchain={r.toolchain}"


def toolchain_env(env, toolchain: str, opt: str, interface: str, config_path: str):
    """A construction environment compiling and linking C for one configured toolchain."""
    from byoc_compiler import toolchain as tcmod
    from byoc_compiler.runtime import dlpack_include_dir

    tc = _codegen.load_config(config_path).toolchain(toolchain)
    tcmod.check_toolchain(tc)
    flags = tcmod.scons_flags(tc, opt=opt, after_dirs=[dlpack_include_dir()])
    clone = env.Clone(CC=tc.cc, SHCC=tc.cc, LINK=tc.cc, SHLINK=tc.cc, **flags)
    if not env.get("verbose"):
        # One short line per step, naming the toolchain; `verbose=1` shows the full commands.
        for var, verb in (("CCCOMSTR", "compile"), ("SHCCCOMSTR", "compile"), ("ASPPCOMSTR", "assemble"),
                          ("SHASPPCOMSTR", "assemble"), ("LINKCOMSTR", "link"), ("SHLINKCOMSTR", "link")):
            clone[var] = f"{verb:<8} [{toolchain}] $TARGET"
    # Toolchain flags carry -fPIC where a shared library is wanted, so static objects serve both.
    clone["STATIC_AND_SHARED_OBJECTS_ARE_THE_SAME"] = 1
    clone["ENV"]["PATH"] = os.environ.get("PATH", clone["ENV"].get("PATH", ""))
    return clone, tc


def byoc_model(env, spec: str, *, target: str, toolchain: str, executor: str, interface: str, opt: str,
               config: str, build_root: str = "build", constants: str = "linked"):
    """Codegen + compile + link (+ check) of one model for one toolchain; returns (runner, check node)."""
    outdir = Path(build_root) / target / toolchain / _codegen.model_name(spec)
    other = _MODEL_DIRS.setdefault(str(outdir), spec)
    if other != spec:
        # SCons would only say "Multiple ways to build the same target"
        sys.stderr.write(f"scons: byoc: model={other} and model={spec} would both build into {outdir}/ (a "
                         f"model's build directory is named after its file stem); rename one of the files\n")
        sys.exit(2)
    request = _codegen.CodegenRequest(spec, target, toolchain, executor, interface, opt, str(config), str(outdir),
                                      constants)
    _sweep_store_after_clean(env, build_root)
    cg_env = env.Clone()
    request.to_env(cg_env)
    generated = cg_env.ByocCodegen(str(outdir), [Value(request.signature())] + _codegen.model_files(spec))
    tc_env, tc = toolchain_env(env, toolchain, opt, interface, config)

    generated_includes, shared_sources, runner_only = _codegen.compile_plan(request)
    runtime_objs, runner_objs = _shared_objects(env, tc_env, Path(build_root) / "_runtime" / toolchain
                                                / _shared_dir_name(opt, shared_sources), shared_sources, runner_only)
    model_objs = []
    by_rel = {Path(str(node)).relative_to(outdir).as_posix(): node for node in generated}
    for rel, node in by_rel.items():
        if rel.endswith(".c"):
            obj = outdir / "obj" / Path(rel).with_suffix(".o")
            includes, defines = generated_includes[rel]
            model_objs += tc_env.Object(str(obj), node, CPPPATH=list(includes), CPPDEFINES=list(defines))
        elif rel.endswith(".S"):
            # The linked constants (byoc_compiler/backend/constants.py): the assembler pulls the
            # .bin in with .incbin, which SCons's scanner does not see, so the dependency is explicit:
            # a weights-only edit re-assembles this one object and relinks.
            obj = outdir / "obj" / Path(rel).with_suffix(".o")
            from byoc_compiler.toolchain import assembler_include_flags

            objs = tc_env.Object(str(obj), node, ASFLAGS=list(tc.cflags) + assembler_include_flags(str(node)))
            tc_env.Depends(objs, [n for r, n in by_rel.items() if r.endswith(".bin") and r.startswith("src/")])
            model_objs += objs
    # Targets' system libraries (oneDNN's -ldnnl) come before the toolchain's own (-lm).
    libs, lib_dirs = _codegen.link_libraries(request)
    link = {"LIBS": libs + list(tc_env["LIBS"]), "LIBPATH": lib_dirs}
    from byoc_compiler.toolchain import can_load_here
    if can_load_here(tc):
        # The runner links the model's library (found beside it: rpath $ORIGIN) instead of a second copy of
        # the model's objects, so a model's linked weights are in the build directory once more, not twice.
        library = tc_env.SharedLibrary(str(outdir / f"lib{request.model_name}.so"), model_objs + runtime_objs,
                                       SHLIBPREFIX="", SHLIBSUFFIX=".so", **link)
        origin = ["-Wl,-rpath,\\$$ORIGIN"]       # SCons makes $$ a $, the shell's backslash keeps it literal
        runner = tc_env.Program(str(outdir / "runner"), runner_objs, LIBS=[request.model_name] + link["LIBS"],
                                LIBPATH=[str(outdir)] + lib_dirs, LINKFLAGS=tc_env["LINKFLAGS"] + origin)
        return list(runner) + list(library), _check(env, request, outdir, runner)
    script = by_rel.get(LINKER_SCRIPT)      # a bare-metal image: laid out by its board's linker script
    if script is not None:
        link["LINKFLAGS"] = list(tc_env["LINKFLAGS"]) + ["-T", str(script)]
    runner = tc_env.Program(str(outdir / "runner"), model_objs + runtime_objs + runner_objs, **link)
    if script is not None:
        tc_env.Depends(runner, script)
    return list(runner), _check(env, request, outdir, runner)


def _check(env, request, outdir: Path, runner):
    check_env = env.Clone()
    request.to_env(check_env)
    check = check_env.ByocCheck(str(outdir / "check.json"), runner)
    env.AlwaysBuild(check)
    return check


def _shared_dir_name(opt: str, sources) -> str:
    """The directory of the shared objects, named by what their commands depend on besides the toolchain: the
    optimization level and the defines every shared unit gets (the thread count the workspaces are planned
    for), not the executor or the interface, which only choose which of them a build links. SCons's cache key
    includes an object's path, so a graph build and an AOT build of one toolchain and level share them (with
    the executor in the name, the default test matrix compiled every runtime and kernel library twice per
    toolchain and level)."""
    defines = sorted({d for _, _, defs in sources for d in defs})
    threads = [d.split("=", 1)[1] for d in defines if d.startswith("BYOC_MAX_THREADS=")]
    others = [d for d in defines if not d.startswith("BYOC_MAX_THREADS=")]
    if others:   # not what compile_units gives today: keep such objects apart, named by a digest
        import hashlib

        return f"{opt}-{hashlib.sha1(' '.join(defines).encode()).hexdigest()[:10]}"
    return f"{opt}-{threads[0]}threads" if threads else opt


def _shared_objects(env, tc_env, objdir: Path, sources, runner_only):
    """The C runtime and target runtimes: compiled once per toolchain and flags, shared by every model and every
    target set (`build/_runtime/<toolchain>/...`: under `build/<target>/`, the default test matrix compiled
    ccompiler's kernels once per target set holding it, and the C runtime once per target set). Each source's
    objects go under its package and folder (`ccompiler-kernels/`, `runtime-src/`), so two targets' files of one
    name never meet.

    Returns (objects every model links, objects only the runner adds)."""
    model_objs, runner_objs = [], []
    for src, includes, defines in sources:
        folder = Path(src).parent
        obj = objdir / f"{folder.parent.name}-{folder.name}" / (Path(src).stem + ".o")
        key = str(obj)
        if key not in _RUNTIME_CACHE:
            _RUNTIME_CACHE[key] = tc_env.Object(key, env.File(src), CPPPATH=list(includes), CPPDEFINES=list(defines))
        (runner_objs if os.path.realpath(src) in runner_only else model_objs).extend(_RUNTIME_CACHE[key])
    return model_objs, runner_objs


def _sweep_store_after_clean(env, build_root: str) -> None:
    """`scons -c` removes the build directories' constants.bin (targets SCons knows); the store's entries
    they linked (store.py) are not targets: once SCons is done, remove every entry no
    build directory links any more, and the store when that empties it."""
    if not env.GetOption("clean") or env.GetOption("no_exec") or build_root in _SWEPT_ROOTS:
        return
    _SWEPT_ROOTS.add(build_root)
    atexit.register(_store.sweep, env.Dir(build_root).abspath, True)


_SWEPT_ROOTS: set = set()
_RUNTIME_CACHE: dict = {}
_MODEL_DIRS: dict = {}  # build directory -> the model spec that builds there


def generate(env):
    env["BUILDERS"]["ByocCodegen"] = SCons.Builder.Builder(
        action=SCons.Action.Action(_codegen_action, _codegen_message),
        emitter=_codegen_emitter, target_factory=env.fs.Entry, single_source=False)
    env["BUILDERS"]["ByocCheck"] = SCons.Builder.Builder(
        action=SCons.Action.Action(_check_action, _check_message))
    env.AddMethod(byoc_model, "ByocModel")


def exists(env):
    try:
        import byoc_compiler  # noqa: F401
    except ImportError:
        return False
    return True
