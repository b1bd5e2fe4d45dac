"""The build driver: a (partitioned or not) IRModule -> sources, graph.json, params, and binaries.

    lib = build(mod, toolchain="gcc", executor="graph", interface="packed", opt="-O2")
    lib.get_source()              # host C (kernels + executor glue + descriptor), nothing compiled
    lib.get_source("ccompiler")   # a target's sources, or its blob text
    lib.export("out/")            # one self-describing directory
    lib.export_library("m.so")    # host toolchains; load with byoc_compiler.runtime.load
    lib.run_runner([x])           # any toolchain: the standalone runner, under qemu for foreign CPUs

A build is a flat list of named stages (STAGES), each reading and filling one `_Build`, like the
partition pipeline:

    validate       the request: toolchain, executor, interface, opt, module (one ByocError each)
    lower          InferType; composite calls left in main inlined (the host has none); main -> a flat
                   Program (program.py); its params blob and graph.json, each built once
    codegen        each external function -> its target's codegen -> a checked artifact (region_codegen.py);
                   large constants of C regions join the constant pool
    host sections  host.c up to the executor: the host kernels (host_kernels/), prototypes of the C regions'
                   entry points, the instance struct, blob regions' modules (model_c.py), the executor
                   (graph_c.py: function table + embedded graph.json/params | aot.py: the run function over
                   the instance's arena)
    pools          what each memory pool of the board holds (pools.py): constants and io fit, the report
    descriptor     constants="params" init, the model descriptor, metadata.json

C text itself comes from byoc_compiler.ctext (literals, names, arrays, entry points); BuildResult
(result.py) compiles the sources with the commands of byoc_compiler/toolchain.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..config import Config, EXECUTORS, INTERFACES, OPT_LEVELS, load_config
from ..ctext import c_string, core_signature, identifier_part, is_identifier
from ..errors import ByocError
from ..toolchain import host_arch
from ..ir.module import IRModule
from ..runtime.params import save_params
from ..transform import InferType
from . import aot as aot_gen
from . import constants as constmod
from . import cpu_features
from . import graph_c
from . import threads as threadsmod
from .artifact import BlobArtifact, CSourceArtifact
from .graph_json import graph_json, graph_text
from .host_kernels import emit_kernel
from . import memory_plan
from . import pools as poolmod
from .memory_plan import StoragePlan, aot_buffers, graph_storage, instance_bytes, peak_live_bytes
from .firmware import entry as firmware_entry, firmware
from .model_c import END_HOSTED_ONLY, HEADER, HOSTED_ONLY, BlobRegion, blob_section, descriptor, instance_struct
from .host_fusion import fuse_host_chains
from .program import Program, inline_composites, lower_main
from .region_codegen import pool_region_constants, region_codegen
from .result import BuildResult

_DEFAULT = object()


def build(mod: IRModule, toolchain: str = "gcc", executor: str = "graph", interface: str = "packed",
          opt: str = "-O2", mod_name: str = "default", config=None,
          large_constant_bytes=_DEFAULT, constants: str = "linked",
          max_threads: int = threadsmod.DEFAULT_MAX_THREADS) -> BuildResult:
    """Generate everything a model needs to run; compiles nothing (see BuildResult).

    Constants (weights, the params blob, target blobs) of at least `large_constant_bytes` bytes
    (default constants.LARGE_CONSTANT_BYTES; None keeps every constant a C literal) are written as
    raw bytes in the toolchain CPU's byte order and linked with the assembler's .incbin
    (src/byoc_constants.S + .bin), never through the C parser. constants="params" keeps them out of
    the binary instead: the same bytes are constants.bin, which the model's init is given
    (runner --constants FILE, runtime.load(path, constants=...), byoc_set_constants; both find a
    constants.bin beside the runner or library by themselves). constants="auto" is "params" for a model
    with at least constants.AUTO_PARAMS_BYTES (64 MiB) of large constants, else "linked".
    max_threads: how many threads' scratch the workspace holds (backend/threads.py); a run may use more
    threads, but kernels with per-thread scratch then use at most this many.
    """
    threadsmod.check_max_threads(max_threads)
    if constants not in constmod.MODES:
        raise ByocError(f"build: constants must be one of {', '.join(repr(m) for m in constmod.MODES)} "
                        f"(linked into the binary, or loaded at init from constants.bin), got {constants!r}")
    if large_constant_bytes is _DEFAULT:
        large_constant_bytes = constmod.LARGE_CONSTANT_BYTES
    if large_constant_bytes is not None and (not isinstance(large_constant_bytes, int)
                                             or isinstance(large_constant_bytes, bool) or large_constant_bytes < 1):
        raise ByocError(f"build: large_constant_bytes must be a positive number of bytes or None, "
                        f"got {large_constant_bytes!r}")
    state = _Build(mod, toolchain, executor, interface, opt, mod_name, config, constants, max_threads)
    validate(state)     # first: the toolchain's board decides the constants' section and the scratch budget
    with constmod.threshold(large_constant_bytes), constmod.literal_section(state.memory.constants_section) \
            as state.literals, memory_plan.budget(state.memory.workspace_budget()), \
            cpu_features.declared(cpu_features.of_toolchain(state.tc, host_arch())):
        for _, stage in STAGES[1:]:
            stage(state)
    return state.result


@dataclass
class _Build:
    """What the stages read and fill, in stage order."""

    mod: Any
    toolchain: str
    executor: str
    interface: str
    opt: str
    mod_name: str
    config: Any
    constants_mode: str
    max_threads: int
    # validate
    cfg: Any = None
    tc: Any = None
    memory: Any = None                               # pools.BoardMemory of the toolchain's board
    literals: Any = None                             # small constants written as C literals (their bytes)
    # lower
    prog: Program | None = None
    c_mod_name: str = ""
    types: dict = field(default_factory=dict)        # step symbol -> (input types, output types)
    params: dict = field(default_factory=dict)
    params_blob: bytes = b""
    storage: StoragePlan | None = None               # graph.json's storage ids and the graph executor's slots
    graph: dict = field(default_factory=dict)        # graph.json, built once: a file and the embedded copy
    # codegen
    pool: Any = None
    artifacts: dict = field(default_factory=dict)    # region symbol -> artifact
    region_targets: dict = field(default_factory=dict)
    # host sections
    kernels: dict = field(default_factory=dict)      # host kernel symbol -> KernelSource
    sections: list = field(default_factory=list)     # host.c, in order
    workspace: int = 0
    aot_plan: Any = None
    run_fn: str = ""
    # pools
    pool_uses: list = field(default_factory=list)    # pools.PoolUse per pool of the board
    # descriptor
    result: BuildResult | None = None

    @property
    def pre_init(self) -> str:
        """constants="params": the model's init first copies constants.bin into the room the .S reserved."""
        return "  if (byoc_constants_init() != 0) return -1;\n" if self.constants_mode == "params" else ""

    @property
    def region_workspace(self) -> dict[str, int]:
        return {s: int(a.workspace_bytes) for s, a in self.artifacts.items() if isinstance(a, CSourceArtifact)}

    @property
    def region_lower(self) -> dict[str, int]:
        """A C region's workspace lower bound (its own peak live bytes when its target reports it)."""
        return {s: int(a.workspace_bytes if a.workspace_lower_bound is None else a.workspace_lower_bound)
                for s, a in self.artifacts.items() if isinstance(a, CSourceArtifact)}

    @property
    def io_bytes(self) -> int:
        tensors = self.prog.tensors
        return sum(tensors[t].nbytes for t in self.prog.inputs) + sum(tensors[t].nbytes for t in self.prog.outputs)


# ---- the stages ---------------------------------------------------------------------------------------

def validate(b: _Build) -> None:
    """The request names an executor, interface, toolchain and opt level that exist, and a module with main."""
    b.cfg = b.config if isinstance(b.config, Config) else load_config(b.config)
    problems = [f"{what} {value!r}" for what, value, known in (("executor", b.executor, EXECUTORS),
                                                               ("interface", b.interface, INTERFACES),
                                                               ("toolchain", b.toolchain, b.cfg.toolchains))
                if value not in known]
    if problems:
        raise ByocError(f"build: {' and '.join(problems)} not available; valid combinations: executor 'graph' or "
                        f"'aot', each with interface 'packed' or 'unpacked', on a toolchain of {b.cfg.path} "
                        f"({', '.join(b.cfg.toolchains) or 'none defined'})")
    if b.opt not in OPT_LEVELS:
        raise ByocError(f"build: opt {b.opt!r} is not an optimization level; use one of "
                        f"{', '.join(repr(o) for o in OPT_LEVELS)} (other flags go in a toolchain's cflags in "
                        f"{b.cfg.path})")
    if not isinstance(b.mod, IRModule):
        raise ByocError(f"build: expected an IRModule, got {type(b.mod).__name__}; wrap an expression with "
                        "IRModule.from_expr(...)")
    if "main" not in b.mod:
        raise ByocError("build: the module has no `main` function")
    b.tc = b.cfg.toolchains[b.toolchain]
    if b.tc.profile == "freestanding":       # no threads there: one slot of per-thread scratch (byoc/parallel.h)
        b.max_threads = 1
    b.memory = poolmod.BoardMemory.of(b.cfg.board_of(b.tc))
    if b.tc.freestanding:
        _check_freestanding_request(b)


def _check_freestanding_request(b: _Build) -> None:
    """A bare-metal toolchain builds AOT + unpacked with linked constants: the only form with no allocator,
    no stdio and no files (docs/bare-metal.md)."""
    wrong = [f"{what} {value!r}" for what, value, want in (("executor", b.executor, "aot"),
                                                           ("interface", b.interface, "unpacked"))
             if value != want]
    if b.constants_mode == "params":
        wrong.append("constants 'params'")
    if wrong:
        raise ByocError(f"build: toolchain {b.toolchain!r} is freestanding (bare metal: no allocator, no files), "
                        f"which builds executor 'aot', interface 'unpacked', constants 'linked'; got "
                        f"{' and '.join(wrong)}")
    b.constants_mode = "linked"     # "auto" too: the board's memory regions decide what fits (link time)


def lower(b: _Build) -> None:
    """main -> Program, with its step types, params blob and graph.json."""
    mod = InferType()(b.mod)
    mod, changed = inline_composites(mod)
    mod = InferType()(mod) if changed else mod
    mod, fused = fuse_host_chains(mod)      # quantized chains as one host step each (host_fusion.py)
    b.mod = InferType()(mod) if fused else mod
    # Part of identifiers (tvmgen_<mod>_run), never one by itself: only the characters need mending.
    b.c_mod_name = identifier_part(b.mod_name) or "default"
    prog = b.prog = lower_main(b.mod, b.c_mod_name)
    b.types = {s.symbol: ([prog.tensors[t].type for t in s.inputs], [prog.tensors[t].type for t in s.outputs])
               for s in prog.steps}
    b.params = {prog.tensors[t].name: np.array(prog.tensors[t].data) for t in prog.consts}
    b.params_blob = save_params(b.params)
    b.storage = graph_storage(prog)
    b.graph = graph_json(prog, b.storage)


def codegen(b: _Build) -> None:
    """Each region through its target's codegen; C regions' large constants join the pool."""
    if b.constants_mode == "auto":       # by the model's size (constants.auto_mode)
        b.constants_mode = constmod.auto_mode(b.mod)
    b.pool = constmod.ConstantPool(constmod.byte_order(b.tc.arch), b.constants_mode,
                                   b.memory.constants_section or constmod.SECTION)
    for symbol, (gname, func) in b.prog.regions.items():
        if not is_identifier(symbol):
            raise ByocError(f"build: external function @{gname} has global_symbol {symbol!r}, which is not a valid "
                            "C identifier; partition the model again (PartitionGraph makes valid symbols)")
        with threadsmod.planned_for(b.max_threads):
            target, artifact = region_codegen(str(func.attrs["Compiler"]), func, symbol)
        problem = target.toolchain_problem(b.tc)  # a foreign CPU is known now; a missing library only matters
        if problem:                              # when compiling (get_source works without it)
            raise ByocError(f"build: {problem}")
        b.artifacts[symbol] = artifact
        b.region_targets[symbol] = target
        if isinstance(artifact, CSourceArtifact):
            pool_region_constants(b.pool, target.name, artifact)


def host_sections(b: _Build) -> None:
    """host.c up to the descriptor: kernels, region prototypes, the instance, blob modules, the executor."""
    b.kernels = _host_kernels(b.prog)
    blob_regions = [BlobRegion(i, s, a.kind, a.blob, *b.types[s], constants=a.constants)
                    for i, (s, a) in enumerate((s, a) for s, a in b.artifacts.items() if isinstance(a, BlobArtifact))]
    b.sections += [HEADER, "\n", *(ks.code + "\n" for ks in b.kernels.values()), _region_prototypes(b)]
    if b.pre_init:
        b.sections.append("static int32_t byoc_constants_init(void);\n")
    n_funcs = len(dict.fromkeys(s.symbol for s in b.prog.steps))
    b.sections.append(HOSTED_ONLY + instance_struct(len(blob_regions), b.executor, n_funcs) + END_HOSTED_ONLY)
    b.sections.append(blob_section(blob_regions, b.interface, b.pool))
    b.sections.append(_executor_source(b, {r.symbol: r.index for r in blob_regions}))


def describe(b: _Build) -> None:
    """The model descriptor closes host.c; metadata.json says what was built."""
    prog = b.prog
    inputs = [(prog.tensors[t].name, prog.tensors[t].type) for t in prog.inputs]
    outputs = [(f"output{k}", prog.tensors[t].type) for k, t in enumerate(prog.outputs)]
    if b.pre_init:
        b.sections.append(b.pool.init_source(c_string(str(b.mod_name))))
    b.sections.append("\n/* ---- model descriptor ---- */\n" + HOSTED_ONLY)
    b.sections.append(descriptor(b.mod_name, b.executor, b.interface, inputs, outputs, b.workspace,
                                 "byoc_model_init", b.run_fn, "byoc_model_deinit") + END_HOSTED_ONLY)
    fw = _firmware(b, inputs, outputs)
    if fw is not None:
        b.sections.append(firmware_entry(fw, aot_gen.RUN_STEPS))
    b.result = BuildResult(mod=b.mod, program=prog, host_c="".join(b.sections), artifacts=b.artifacts,
                           region_targets=b.region_targets, graph_json=graph_text(b.graph), params=b.params,
                           params_blob=b.params_blob, metadata=_metadata(b, inputs, outputs), toolchain=b.tc,
                           opt=b.opt, config=b.cfg, constants=b.pool, max_threads=b.max_threads, firmware=fw)


def place_in_pools(b: _Build) -> None:
    """Constants, io and the workspace against the board's pools; the per-pool report."""
    if b.aot_plan is not None:
        lower_bound = b.aot_plan.lower_bound
    else:   # the graph executor: its storage slots and the regions' workspace in one block
        _, _, lower, life = aot_buffers(b.prog, b.region_workspace, b.region_lower)
        lower_bound = peak_live_bytes(lower, life)
        poolmod.check_workspace(b.memory, b.workspace, b.io_bytes)
    constants = b.pool.total_bytes + b.literals.nbytes
    b.pool_uses = poolmod.report(b.memory, b.aot_plan, b.workspace, lower_bound, b.io_bytes, constants)


STAGES = (("validate", validate), ("lower", lower), ("codegen", codegen), ("host sections", host_sections),
          ("pools", place_in_pools), ("descriptor", describe))


# ---- pieces of the stages -----------------------------------------------------------------------------

def _host_kernels(prog: Program) -> dict:
    """One generated kernel per distinct host step symbol."""
    kernels = {}
    for step in prog.steps:
        if step.kind == "host" and step.symbol not in kernels:
            try:
                kernels[step.symbol] = emit_kernel(step.call, step.symbol)
            except ByocError:
                raise
            except ValueError as exc:   # a rule that cannot handle this call (HostKernelError passed above)
                raise ByocError(f"host codegen failed for {step.symbol}: {exc}") from None
    return kernels


def _region_prototypes(b: _Build) -> str:
    """Prototypes of the C-source regions' entry points, which are defined in their own files."""
    workspace = b.region_workspace
    if not workspace:
        return ""
    lines = ["/* ---- entry points of C-source regions (defined in their own files) ---- */\n"]
    for symbol in workspace:
        ins, outs = b.types[symbol]
        if b.interface == "unpacked":
            lines.append(core_signature(symbol, ins, outs, workspace=bool(workspace[symbol])) + ";\n")
        else:
            lines.append(f"int32_t {symbol}(const ByocValue* args, const int32_t* type_codes, int32_t num_args,"
                         " void* resource_handle);\n")
    return "".join(lines)


def _firmware(b: _Build, inputs, outputs):
    """The firmware interface (<mod>.h, <mod>_run) of builds that can have one: AOT + unpacked, linked
    constants, no blob regions (their modules live in an allocated instance). None for the others."""
    if (b.executor, b.interface, b.constants_mode) != ("aot", "unpacked", "linked") or \
            any(isinstance(a, BlobArtifact) for a in b.artifacts.values()):
        return None
    pools = [("workspace", b.workspace)]
    if aot_gen.pooled(b.aot_plan):      # the steps address each workspace pool apart: one member per pool
        pools = [(p.name, n) for p, n in zip(b.memory.workspace_pools(), b.aot_plan.pool_bytes)]
    return firmware(b.c_mod_name, inputs, outputs, pools, b.memory.alignment, b.pool.total_bytes + b.literals.nbytes)


def _executor_source(b: _Build, blob_index: dict[str, int]) -> str:
    """The executor's C; sets what one instance allocates (b.workspace) and the run function's name."""
    prog, region_workspace = b.prog, b.region_workspace
    if b.executor == "aot":
        b.run_fn = aot_gen.run_function_name(b.c_mod_name)
        b.aot_plan = poolmod.plan_aot(prog, b.memory, region_workspace, b.region_lower, b.io_bytes)
        observed = aot_gen.OBSERVED_ON_BOARDS if b.tc.freestanding else aot_gen.HOSTED
        text, b.workspace = aot_gen.aot_executor_source(prog, b.aot_plan, b.run_fn, b.interface,
                                                        region_workspace, blob_index, b.pool, b.pre_init, observed)
        return text
    # graph storage plus the regions' workspace: what one instance allocates
    b.workspace = instance_bytes(b.storage.temp_bytes,
                                 max([region_workspace.get(s.symbol, 0) for s in prog.steps] + [0]))
    b.run_fn = graph_c.RUN_FUNCTION
    return graph_c.graph_executor_source(prog, graph_text(b.graph, compact=True).encode(), b.params_blob, b.types,
                                         b.interface, region_workspace, blob_index, b.pool, b.pre_init)


def _tensor_entries(entries) -> list[dict]:
    return [{"name": n, "shape": list(t.shape), "dtype": t.dtype} for n, t in entries]


def _metadata(b: _Build, inputs, outputs) -> dict:
    tc, pool, targets = b.tc, b.pool, b.region_targets.values()
    metadata = {
        "mod_name": b.mod_name, "executor": b.executor, "interface": b.interface, "toolchain": b.toolchain,
        "arch": tc.arch,
        "flags": {"cc": tc.cc, "cflags": list(tc.cflags), "opt": b.opt, "ldflags": list(tc.ldflags),
                  "defines": (["BYOC_UNPACKED_API"] if b.interface == "unpacked" else [])
                  + [threadsmod.define(b.max_threads)]},
        "inputs": _tensor_entries(inputs),
        "outputs": _tensor_entries(outputs),
        "workspace_bytes": int(b.workspace),
        "board": b.memory.board,
        "pools": [use.row() for use in b.pool_uses],
        "params": {n: {"shape": list(a.shape), "dtype": str(a.dtype)} for n, a in b.params.items()},
        "large_constants": {"mode": b.constants_mode, "threshold_bytes": constmod.large_constant_bytes(),
                            "byte_order": "big" if pool.order == ">" else "little",
                            "count": len(pool.entries), "bytes": sum(len(e.data) for e in pool.entries)},
        "host_kernels": list(b.kernels),
        "targets": sorted({t.name for t in targets}),
        "libraries": sorted({lib for t in targets for lib in t.libraries}),
        "regions": [{"symbol": s, "target": b.region_targets[s].name,
                     "artifact": "c" if isinstance(a, CSourceArtifact) else a.kind,
                     "inputs": [{"shape": list(t.shape), "dtype": t.dtype} for t in b.types[s][0]],
                     "outputs": [{"shape": list(t.shape), "dtype": t.dtype} for t in b.types[s][1]]}
                    for s, a in b.artifacts.items()],
    }
    if b.executor == "aot":
        metadata["run_function"] = b.run_fn
    return metadata
