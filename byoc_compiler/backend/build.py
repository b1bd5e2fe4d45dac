"""The build driver: a (partitioned or not) IRModule -> sources, graph.json, params, and binaries.

    lib = build(mod, toolchain="gcc", executor="graph", interface="packed", opt="-O2")
    lib.get_source()              # host C (kernels + executor glue + descriptor), nothing compiled
    lib.get_source("ccompiler")   # a target's sources, or its blob text
    lib.export("out/")            # one self-describing directory
    lib.export_library("m.so")    # host toolchains; load with byoc_compiler.runtime.load
    lib.run_runner([x])           # any toolchain: the standalone runner, under qemu for foreign CPUs

Steps: InferType; inline composite calls left in main (the host has no composites); lower
main to a flat Program (backend/program.py); each external function -> its target's codegen
-> artifact; each host op call -> a generated kernel; then graph.json + params (both
executors) and the executor's C (graph: function table + embedded graph.json/params;
aot: the run function over a static arena). Sources go to one host.c plus each target's
files; BuildResult (result.py) compiles them with the commands of byoc_compiler/toolchain.py.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..config import EXECUTORS, INTERFACES, OPT_LEVELS
from ..ctext import c_string, core_signature, identifier_part, is_identifier
from ..errors import ByocError
from ..ir.module import IRModule
from . import aot as aot_gen
from . import constants as constmod
from . import graph_c
from .artifact import BlobArtifact, CSourceArtifact
from .graph_json import graph_json
from .memory_plan import aot_arena, graph_storage, instance_bytes
from .model_c import HEADER, BlobRegion, blob_section, descriptor, instance_struct
from .program import inline_composites, lower_main
from .result import BuildResult


def _combinations(config) -> str:
    return (f"executor 'graph' or 'aot', each with interface 'packed' or 'unpacked', on a toolchain of "
            f"{config.path} ({', '.join(config.toolchains) or 'none defined'})")


def _load_config(config):
    from ..config import Config, load_config

    return config if isinstance(config, Config) else load_config(config)


def _emit_kernel(call, symbol):
    from .host_kernels import emit_kernel

    try:
        return emit_kernel(call, symbol)
    except ByocError:
        raise
    except ValueError as exc:       # a rule that cannot handle this call (HostKernelError passed above)
        raise ByocError(f"host codegen failed for {symbol}: {exc}") from None


def _codegen(target_name: str, func, symbol: str):
    from .target import require_codegen

    target = require_codegen(target_name)
    try:
        artifact = target.codegen(func, symbol)
    except ByocError as exc:
        raise ByocError(f"codegen of target {target_name!r} failed for region {symbol}: {exc}") from None
    except Exception as exc:
        raise ByocError(f"codegen of target {target_name!r} failed for region {symbol}: "
                        f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(artifact, (CSourceArtifact, BlobArtifact)):
        raise ByocError(f"codegen of target {target_name!r} returned {type(artifact).__name__} for region {symbol}; "
                        "it must return a CSourceArtifact or a BlobArtifact (byoc_compiler.backend.artifact)")
    if artifact.symbol != symbol:
        raise ByocError(f"codegen of target {target_name!r} returned an artifact for {artifact.symbol!r} "
                        f"when asked for region {symbol!r}")
    if isinstance(artifact, CSourceArtifact) and not any(
            re.search(rf"\b{re.escape(symbol)}\b", text) for text in artifact.sources.values()):
        # caught here, the linker's "undefined reference" would not say which target or what to write
        raise ByocError(f"codegen of target {target_name!r} returned C for region {symbol} that never mentions "
                        f"{symbol}; its sources ({', '.join(artifact.sources)}) must define the region's entry "
                        f"point {symbol} (byoc_compiler.ctext.entry_points, vendor.entry_points writes it; docs/runtime-abi.md)")
    return target, artifact


_DEFAULT = object()


def build(mod: IRModule, toolchain: str = "gcc", executor: str = "graph", interface: str = "packed",
          opt: str = "-O2", mod_name: str = "default", config=None,
          large_constant_bytes=_DEFAULT, constants: str = "linked") -> BuildResult:
    """Generate everything a model needs to run; compiles nothing (see BuildResult).

    Constants (weights, the params blob, target blobs) of at least `large_constant_bytes` bytes
    (default constants.LARGE_CONSTANT_BYTES; None keeps every constant a C literal) are written as
    raw bytes in the toolchain CPU's byte order and linked with the assembler's .incbin
    (src/byoc_constants.S + .bin), never through the C parser. constants="params" keeps them out of
    the binary instead: the same bytes are constants.bin, which the model's init is given
    (runner --constants FILE, runtime.load(path, constants=...), byoc_set_constants).
    """
    if constants not in constmod.MODES:
        raise ByocError(f"build: constants must be one of {', '.join(repr(m) for m in constmod.MODES)} "
                        f"(linked into the binary, or loaded at init from constants.bin), got {constants!r}")
    if large_constant_bytes is _DEFAULT:
        large_constant_bytes = constmod.LARGE_CONSTANT_BYTES
    if large_constant_bytes is not None and (not isinstance(large_constant_bytes, int)
                                             or isinstance(large_constant_bytes, bool) or large_constant_bytes < 1):
        raise ByocError(f"build: large_constant_bytes must be a positive number of bytes or None, "
                        f"got {large_constant_bytes!r}")
    with constmod.threshold(large_constant_bytes):
        return _build(mod, toolchain, executor, interface, opt, mod_name, config, constants)


def _build(mod, toolchain, executor, interface, opt, mod_name, config, constants_mode) -> BuildResult:
    cfg = _load_config(config)
    problems = []
    if executor not in EXECUTORS:
        problems.append(f"executor {executor!r}")
    if interface not in INTERFACES:
        problems.append(f"interface {interface!r}")
    if toolchain not in cfg.toolchains:
        problems.append(f"toolchain {toolchain!r}")
    if problems:
        raise ByocError(f"build: {' and '.join(problems)} not available; valid combinations: {_combinations(cfg)}")
    if opt not in OPT_LEVELS:
        raise ByocError(f"build: opt {opt!r} is not an optimization level; use one of "
                        f"{', '.join(repr(o) for o in OPT_LEVELS)} (other flags go in a toolchain's cflags in "
                        f"{cfg.path})")
    if not isinstance(mod, IRModule):
        raise ByocError(f"build: expected an IRModule, got {type(mod).__name__}; wrap an expression with "
                        "IRModule.from_expr(...)")
    if "main" not in mod:
        raise ByocError("build: the module has no `main` function")
    from ..transform import InferType

    mod = InferType()(mod)
    mod, changed = inline_composites(mod)
    if changed:
        mod = InferType()(mod)
    # Part of identifiers (tvmgen_<mod>_run), never one by itself: only the characters need mending.
    c_mod_name = identifier_part(mod_name) or "default"
    prog = lower_main(mod, c_mod_name)

    pool = constmod.ConstantPool(constmod.byte_order(cfg.toolchains[toolchain].arch), constants_mode)
    # constants="params": the model's init first copies constants.bin into the room the .S reserved.
    pre_init = "  if (byoc_constants_init() != 0) return -1;\n" if constants_mode == "params" else ""
    types = {s.symbol: ([prog.tensors[t].type for t in s.inputs], [prog.tensors[t].type for t in s.outputs])
             for s in prog.steps}
    artifacts: dict[str, Any] = {}
    region_targets: dict[str, Any] = {}
    cfg_tc = cfg.toolchains[toolchain]
    for symbol, (gname, func) in prog.regions.items():
        if not is_identifier(symbol):
            raise ByocError(f"build: external function @{gname} has global_symbol {symbol!r}, which is not a valid "
                            "C identifier; partition the model again (PartitionGraph makes valid symbols)")
        target, artifact = _codegen(str(func.attrs["Compiler"]), func, symbol)
        problem = target.arch_problem(cfg_tc)    # a foreign CPU is known now; a missing library only matters
        if problem:                              # when compiling (get_source works without it)
            raise ByocError(f"build: {problem}")
        artifacts[symbol] = artifact
        region_targets[symbol] = target
        if isinstance(artifact, CSourceArtifact):
            _pool_region_constants(pool, target.name, artifact)

    kernels = {}
    for step in prog.steps:
        if step.kind == "host" and step.symbol not in kernels:
            kernels[step.symbol] = _emit_kernel(step.call, step.symbol)

    params = {prog.tensors[t].name: np.array(prog.tensors[t].data) for t in prog.consts}
    from ..runtime.params import save_params

    params_blob = save_params(params)
    gjson = graph_json(prog)

    # ---- host.c ------------------------------------------------------------------------------
    parts = [HEADER, "\n"]
    for ks in kernels.values():
        parts.append(ks.code + "\n")
    c_regions = [s for s, a in artifacts.items() if isinstance(a, CSourceArtifact)]
    if c_regions:
        parts.append("/* ---- entry points of C-source regions (defined in their own files) ---- */\n")
    region_workspace = {s: int(artifacts[s].workspace_bytes) for s in c_regions}
    for symbol in c_regions:
        ins, outs = types[symbol]
        if interface == "unpacked":
            parts.append(core_signature(symbol, ins, outs, workspace=bool(region_workspace[symbol])) + ";\n")
        else:
            parts.append(f"int32_t {symbol}(const ByocValue* args, const int32_t* type_codes, int32_t num_args,"
                         " void* resource_handle);\n")
    blob_symbols = [s for s, a in artifacts.items() if isinstance(a, BlobArtifact)]
    blob_regions = [BlobRegion(i, s, artifacts[s].kind, artifacts[s].blob, *types[s], constants=artifacts[s].constants)
                    for i, s in enumerate(blob_symbols)]
    if pre_init:
        parts.append("static int32_t byoc_constants_init(void);\n")
    blob_index = {r.symbol: r.index for r in blob_regions}
    n_funcs = len(dict.fromkeys(s.symbol for s in prog.steps))
    parts.append(instance_struct(len(blob_regions), executor, n_funcs))
    parts.append(blob_section(blob_regions, interface, pool))

    if executor == "aot":
        plan = aot_arena(prog)
        run_fn = aot_gen.run_function_name(c_mod_name)
        text, workspace = aot_gen.aot_executor_source(prog, plan, run_fn, interface, region_workspace, blob_index,
                                                      pool, pre_init)
        parts.append(text)
    else:
        # graph storage plus the regions' workspace: what one instance allocates
        workspace = instance_bytes(graph_storage(prog).temp_bytes,
                                   max([region_workspace.get(s.symbol, 0) for s in prog.steps] + [0]))
        run_fn = graph_c.RUN_FUNCTION
        parts.append(graph_c.graph_executor_source(prog, params_blob, types, interface, region_workspace,
                                                   blob_index, pool, pre_init))

    input_entries = [(prog.tensors[t].name, prog.tensors[t].type) for t in prog.inputs]
    output_entries = [(f"output{k}", prog.tensors[t].type) for k, t in enumerate(prog.outputs)]
    if pre_init:
        parts.append(pool.init_source(c_string(str(mod_name))))
    parts.append("\n/* ---- model descriptor ---- */\n")
    parts.append(descriptor(mod_name, executor, interface, input_entries, output_entries, workspace,
                            "byoc_model_init", run_fn, "byoc_model_deinit"))
    host_c = "".join(parts)

    large_constant_bytes_now = constmod.large_constant_bytes()
    metadata = {
        "mod_name": mod_name,
        "executor": executor,
        "interface": interface,
        "toolchain": toolchain,
        "arch": cfg_tc.arch,
        "flags": {"cc": cfg_tc.cc, "cflags": list(cfg_tc.cflags), "opt": opt, "ldflags": list(cfg_tc.ldflags),
                  "defines": ["BYOC_UNPACKED_API"] if interface == "unpacked" else []},
        "inputs": [{"name": n, "shape": list(t.shape), "dtype": t.dtype} for n, t in input_entries],
        "outputs": [{"name": n, "shape": list(t.shape), "dtype": t.dtype} for n, t in output_entries],
        "workspace_bytes": int(workspace),
        "params": {n: {"shape": list(a.shape), "dtype": str(a.dtype)} for n, a in params.items()},
        "large_constants": {"mode": constants_mode, "threshold_bytes": large_constant_bytes_now,
                            "byte_order": "big" if pool.order == ">" else "little",
                            "count": len(pool.entries), "bytes": sum(len(e.data) for e in pool.entries)},
        "host_kernels": list(kernels),
        "targets": sorted({t.name for t in region_targets.values()}),
        "libraries": sorted({lib for t in region_targets.values() for lib in t.libraries}),
        "regions": [{"symbol": s, "target": region_targets[s].name,
                     "artifact": "c" if isinstance(a, CSourceArtifact) else a.kind,
                     "inputs": [{"shape": list(t.shape), "dtype": t.dtype} for t in types[s][0]],
                     "outputs": [{"shape": list(t.shape), "dtype": t.dtype} for t in types[s][1]]}
                    for s, a in artifacts.items()],
    }
    if executor == "aot":
        metadata["run_function"] = run_fn
    return BuildResult(mod=mod, program=prog, host_c=host_c, artifacts=artifacts, region_targets=region_targets,
                       graph_json=gjson, params=params, params_blob=params_blob, metadata=metadata,
                       toolchain=cfg_tc, opt=opt, config=cfg, constants=pool)


def _pool_region_constants(pool, target_name: str, artifact: CSourceArtifact) -> None:
    """A C-source region's large constants join the pool under the names its source declares."""
    for name, array in artifact.constants.items():
        if not (isinstance(name, str) and is_identifier(name) and name.startswith(artifact.symbol)):
            raise ByocError(f"codegen of target {target_name!r} returned constant {name!r} for region "
                            f"{artifact.symbol}; constant names are global C symbols and must start with the "
                            "region's symbol")
        if not isinstance(array, np.ndarray):
            raise ByocError(f"codegen of target {target_name!r}: constant {name!r} of region {artifact.symbol} "
                            f"is a {type(array).__name__}; give a numpy array")
        try:
            pool.add_array(name, array, f"constant of region {artifact.symbol}")
        except ValueError as exc:
            raise ByocError(f"codegen of target {target_name!r}, region {artifact.symbol}: {exc}") from None
