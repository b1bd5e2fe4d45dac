"""AOT executor: C that calls every step in order, intermediates in one arena owned by the instance.

    typedef struct { uint8_t* arena; ... } ByocInstance;   one per instance (model_c.instance_struct)
    static const float byoc_const_p0[] = {...};   small constants main passes to kernels/regions
    extern const float byoc_const_p1[N];          large ones, linked from byoc_constants.bin (constants.py)
    static int32_t byoc_instance_run(void* inst, void* const* inputs, void* const* outputs);
    int32_t tvmgen_<mod>_run(void* const* inputs, void* const* outputs);   the default instance

Without blob regions the steps are one function over any arena, `byoc_run_steps(arena, inputs, outputs)`:
the hosted instance passes its own, the firmware entry (firmware.py, `<mod>_run`) the caller's pool. What
only a hosted build has (the node observer, instances: calloc and free) sits under
`#ifndef BYOC_FREESTANDING` (docs/bare-metal.md).

The arena holds the intermediates and, at each step that calls a C-source region, that region's
workspace, all placed by lifetime in the board's workspace pools (memory_plan.aot_arena; a region's
workspace lives during its step only, so it shares bytes with intermediates that are dead then); a
region receives its workspace as its last argument (unpacked) or resource_handle (packed). byoc_instance_create
allocates the arena and the instance's target modules; nothing else in the file is written by a run,
so instances run concurrently. A step writes a model output straight into the caller's output buffer;
outputs that repeat a tensor or name an input/constant are copied at the end. No allocation on the run
path. The packed interface builds DLTensors on the stack for each call.

Every step is bracketed by calls of the node observer (runtime.h, docs/debugging.md) when one
is set: that is how a debug run dumps each intermediate and a profile times each step. The step
outputs it is shown are DLTensors on the run's stack, filled from one static const table
(`byoc_step_desc`) only when an observer is set.
"""
from __future__ import annotations

from ..ctext import c_type, const_array, dltype_init, int64_array, sanitize_identifier
from .constants import ConstantPool, c_array
from .memory_plan import AotPlan
from .model_c import (ALIGNED_ALLOC, END_HOSTED_ONLY, FILL_ARG_HELPER, HOSTED_ONLY, RUN_GUARD, aligned_block,
                      default_instance, instance_functions, modules_create, modules_destroy, packed_call)
from .program import Program

# The steps over an arena, without an instance (models without blob regions): what the hosted instance's run
# and the firmware entry (firmware.py) both call.
RUN_STEPS = "byoc_run_steps"


# Around the node observer's calls and tables: hosted builds only, or, in a bare-metal build, also when the
# image is compiled with BYOC_STEP_DUMP (debug/board_dump.py: compare's per-step dump over semihosting).
HOSTED = (HOSTED_ONLY, END_HOSTED_ONLY)
OBSERVED_ON_BOARDS = ("#if !defined(BYOC_FREESTANDING) || defined(BYOC_STEP_DUMP)\n", "#endif /* BYOC_STEP_DUMP */\n")


def pooled(plan: AotPlan) -> bool:
    """Several workspace pools (a board's) holding something: each is its own memory, so a buffer is addressed
    from its pool's base (`byoc_pools[k]`, the steps take one pointer per pool); else the one arena pointer."""
    return len(plan.pool_bytes) > 1 and plan.arena.total_bytes > 0


def run_function_name(c_mod_name: str) -> str:
    return sanitize_identifier(f"tvmgen_{c_mod_name}_run")


def aot_source(prog: Program, plan: AotPlan, callees: dict[str, str], interface: str,
               region_workspace: dict[str, int], blob_index: dict[str, int],
               pool: ConstantPool | None = None, observed: tuple[str, str] = HOSTED) -> tuple[str, int]:
    """Constants and byoc_instance_run; returns (C text, arena bytes incl. the regions' workspace).
    callees: step symbol -> C function; region_workspace: C-region symbol -> its workspace_bytes;
    blob_index: blob-region symbol -> its index in the instance's modules; large constants go to `pool`
    (linked as raw bytes) when one is given; `observed`: the guard around the node observer's parts."""
    out = [c_array(pool, f"byoc_const_{prog.tensors[t].name}", prog.tensors[t].data, const_array)
           for t in prog.consts]
    if (interface == "packed" and prog.steps) or blob_index:
        out.append(FILL_ARG_HELPER)
    out.append(observer_table(prog, observed))
    run = _RunWriter(prog, plan, callees, interface, region_workspace, blob_index, observed)
    out.append(run.function())
    return "".join(out), plan.arena.total_bytes


class _RunWriter:
    """byoc_instance_run: every step in order over the arena, bracketed by the node observer."""

    def __init__(self, prog: Program, plan: AotPlan, callees: dict[str, str], interface: str,
                 region_workspace: dict[str, int], blob_index: dict[str, int], observed: tuple[str, str] = HOSTED):
        self.prog, self.plan, self.callees, self.interface = prog, plan, callees, interface
        self.observed, self.end_observed = observed
        self.region_workspace, self.blob_index = region_workspace, blob_index
        self.pooled = pooled(plan)
        self.arena = "byoc_pools" if self.pooled else "byoc_arena"

    def at(self, key) -> str:
        """The address of a planned buffer (a tensor id, or ("scratch", step) for a region's workspace)."""
        offset = self.plan.arena.offsets[key]
        if not self.pooled:
            return f"byoc_arena + {offset}"
        k = self.plan.pool_of[key]
        return f"byoc_pools[{k}] + {offset - self.plan.pool_base[k]}"

    def pool_bases(self) -> str:
        """The hosted instance's pools: its one block, the pools one after another (plan.pool_base)."""
        bases = ", ".join(f"inst->arena + {b}" for b in self.plan.pool_base)
        return f"  uint8_t* const byoc_pools[{len(self.plan.pool_base)}] = {{{bases}}};\n"

    def pointer(self, t: int) -> str:
        """The typed C pointer to tensor t: an input, a constant, a model output written directly, the arena."""
        prog, tensor = self.prog, self.prog.tensors[t]
        ctype = c_type(tensor.type.dtype)
        if tensor.kind == "input":
            return f"({ctype}*)inputs[{prog.inputs.index(t)}]"
        if tensor.kind == "const":
            return f"({ctype}*)byoc_const_{tensor.name}"
        if t in self.plan.direct_output:
            return f"({ctype}*)outputs[{self.plan.direct_output[t]}]"
        return f"({ctype}*)(void*)({self.at(t)})"

    def call(self, i: int, step) -> str:
        """The call of step i: a blob region through its module's packed function, else packed or unpacked."""
        tensors = step.inputs + step.outputs
        workspace = f"(void*)({self.at(('scratch', i))})" if ("scratch", i) in self.plan.arena.offsets else None
        if step.symbol in self.blob_index:  # the instance's own module, through its packed function
            k = self.blob_index[step.symbol]
            args = [(self.pointer(t), self.prog.tensors[t].type) for t in tensors]
            return packed_call(f"inst->blob_fn[{k}]", args, resource=f"inst->blob_res[{k}]")
        callee = self.callees[step.symbol]
        if self.interface == "packed":
            args = [(self.pointer(t), self.prog.tensors[t].type) for t in tensors]
            return packed_call(callee, args, resource=workspace or "NULL")
        args = ", ".join([self.pointer(t) for t in tensors] + ([workspace] if workspace else []))
        return f"  if ({callee}({args}) != 0) return -1;\n"

    def step(self, i: int, step, first_out: int) -> str:
        """One step: the observer's enter, the call, the observer's exit shown the step's outputs."""
        fills = "".join(f"    byoc_step_outputs[{first_out + k}] = byoc_step_desc[{first_out + k}];\n"
                        f"    byoc_step_outputs[{first_out + k}].data = (void*)({self.pointer(t)});\n"
                        for k, t in enumerate(step.outputs))
        return (f"  /* {step.symbol} */\n" + self.observed
                + f"  if (byoc_node_observer != NULL && byoc_node_observer->enter != NULL) "
                f"byoc_node_observer->enter(byoc_node_observer->ctx, {i}, \"{step.symbol}\");\n"
                + self.end_observed + self.call(i, step) + self.observed
                + "  if (byoc_node_observer != NULL && byoc_node_observer->exit != NULL) {\n" + fills
                + f"    byoc_node_observer->exit(byoc_node_observer->ctx, {i}, \"{step.symbol}\", "
                f"{len(step.outputs)}, &byoc_step_outputs[{first_out}]);\n  }}\n" + self.end_observed)

    def body(self) -> str:
        """Every step, then the copies of outputs no step wrote directly (repeats, inputs, constants)."""
        prog, parts, first_out = self.prog, [], 0
        for i, step in enumerate(prog.steps):
            parts.append(self.step(i, step, first_out))
            first_out += len(step.outputs)
        for k, t in enumerate(prog.outputs):
            if self.plan.direct_output.get(t) != k:
                parts.append(f"  memcpy(outputs[{k}], (const void*){self.pointer(t)}, {prog.tensors[t].nbytes});\n")
        return "".join(parts)

    def function(self) -> str:
        prog, body = self.prog, self.body()
        n_outs = sum(len(step.outputs) for step in prog.steps)
        uses_inputs = any(prog.tensors[t].kind == "input" for s in prog.steps for t in s.inputs) or \
            any(prog.tensors[t].kind == "input" for t in prog.outputs)
        locals_ = ((self.observed + f"  DLTensor byoc_step_outputs[{n_outs}];  /* shown to the node observer */\n"
                    + self.end_observed if n_outs else "")
                   + ("" if uses_inputs else "  (void)inputs;\n") + ("" if prog.outputs else "  (void)outputs;\n"))
        arena = self.pool_bases() if self.pooled else "  uint8_t* const byoc_arena = inst->arena;\n"
        if self.blob_index:     # blob regions' modules live in the instance: the steps need it
            return ("static int32_t byoc_instance_run(void* instance, void* const* inputs, void* const* outputs) {\n"
                    + RUN_GUARD + (arena if self.arena in body else "") + locals_ + body + "  return 0;\n}\n")
        # Everything else runs over any arena: the instance's (hosted) or the caller's pools (firmware.entry).
        param = "uint8_t* const* byoc_pools" if self.pooled else "uint8_t* const byoc_arena"
        instance = (self.pool_bases() + f"  return {RUN_STEPS}(byoc_pools, inputs, outputs);\n" if self.pooled
                    else f"  return {RUN_STEPS}(inst->arena, inputs, outputs);\n")
        return (f"static int32_t {RUN_STEPS}({param}, void* const* inputs, void* const* outputs) {{\n"
                + ("" if self.arena in body else f"  (void){self.arena};\n") + locals_ + body + "  return 0;\n}\n"
                + HOSTED_ONLY
                + "static int32_t byoc_instance_run(void* instance, void* const* inputs, void* const* outputs) {\n"
                + RUN_GUARD + instance + "}\n" + END_HOSTED_ONLY)


def observer_table(prog: Program, observed: tuple[str, str] = HOSTED) -> str:
    """Static const DLTensors describing every step output, in step order (what the node observer is shown)."""
    outs = [t for step in prog.steps for t in step.outputs]
    if not outs:
        return ""
    text = []
    rows = []
    for j, t in enumerate(outs):
        ty = prog.tensors[t].type
        shape = "NULL"
        if ty.shape:
            text.append(int64_array(f"byoc_step_shape_{j}", ty.shape, const=False) + "\n")
            shape = f"byoc_step_shape_{j}"
        rows.append(f"  {{NULL, {{kDLCPU, 0}}, {ty.ndim}, {dltype_init(ty.dtype)}, {shape}, NULL, 0}}")
    return (observed[0] + "".join(text) + f"static const DLTensor byoc_step_desc[{len(outs)}] = {{\n"
            + ",\n".join(rows) + "\n};\n" + observed[1])


def aot_executor_source(prog: Program, plan: AotPlan, run_name: str, interface: str,
                        region_workspace: dict[str, int], blob_index: dict[str, int],
                        pool: ConstantPool | None = None, pre_init: str = "",
                        observed: tuple[str, str] = HOSTED) -> tuple[str, int]:
    """The AOT part of host.c: the instance's run, create and destroy, and the default instance's
    init/run/deinit. Returns (C text, arena bytes of one instance)."""
    callees = {s.symbol: s.symbol for s in prog.steps}
    run_text, arena_bytes = aot_source(prog, plan, callees, interface, region_workspace, blob_index, pool, observed)
    create = aligned_block("arena", arena_bytes, "the arena", cast="(uint8_t*)") + modules_create(bool(blob_index))
    return ("\n/* ---- AOT executor ---- */\n" + run_text + HOSTED_ONLY + (ALIGNED_ALLOC if arena_bytes else "")
            + instance_functions("arena_raw", modules_destroy(bool(blob_index)), create, pre_init)
            + default_instance(run_name, exported=True) + END_HOSTED_ONLY), arena_bytes
