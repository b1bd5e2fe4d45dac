"""AOT executor: C that calls every step in order, intermediates in one static arena.

    static uint8_t byoc_arena[N];   offsets planned by liveness (memory_plan.plan_offsets)
    static const float byoc_const_p0[] = {...};   small constants main passes to kernels/regions
    extern const float byoc_const_p1[N];          large ones, linked from byoc_constants.bin (constants.py)
    int32_t tvmgen_<mod>_run(void* const* inputs, void* const* outputs);

A step writes a model output straight into the caller's output buffer; outputs that
repeat a tensor or name an input/constant are copied at the end. No allocation on the
run path. The packed interface builds DLTensors on the stack for each call.

Every step is bracketed by calls of the node observer (runtime.h, docs/debugging.md) when one
is set: that is how a debug run dumps each intermediate and a profile times each step. The
step outputs it is shown are described by one static DLTensor table (`byoc_step_outputs`,
shapes static, data pointers filled just before the exit call), so observing costs nothing
when no observer is set beyond one pointer test per step.
"""
from __future__ import annotations

from dataclasses import dataclass

from .c_abi import DL_DTYPES, c_type, sanitize_identifier
from .constants import ConstantPool, c_array
from .memory_plan import ArenaPlan, plan_offsets
from .model_c import FILL_ARG_HELPER, const_array, packed_call
from .program import Program

ARENA_ALIGNMENT = 16


@dataclass
class AotPlan:
    arena: ArenaPlan
    direct_output: dict          # temp tensor id -> output index it is written to


def plan_arena(prog: Program, alignment: int = ARENA_ALIGNMENT) -> AotPlan:
    direct: dict[int, int] = {}
    for k, t in enumerate(prog.outputs):
        if prog.tensors[t].kind == "temp" and t not in direct:
            direct[t] = k
    life = prog.lifetimes()
    temps = [t for step in prog.steps for t in step.outputs if t not in direct]
    arena = plan_offsets({t: prog.tensors[t].nbytes for t in temps}, {t: life[t] for t in temps}, alignment)
    return AotPlan(arena, direct)


def run_function_name(c_mod_name: str) -> str:
    return sanitize_identifier(f"tvmgen_{c_mod_name}_run")


def aot_source(prog: Program, plan: AotPlan, run_name: str, callees: dict[str, str], interface: str,
               pool: ConstantPool | None = None) -> str:
    """Constants, arena and the run function. callees: step symbol -> C function to call in this interface;
    large constants go to `pool` (linked as raw bytes) when one is given."""
    out = []
    for t in prog.consts:
        out.append(c_array(pool, f"byoc_const_{prog.tensors[t].name}", prog.tensors[t].data, const_array))
    if plan.arena.total_bytes:
        out.append("#if defined(__GNUC__) || defined(__clang__)\n"
                   f"static uint8_t byoc_arena[{plan.arena.total_bytes}] __attribute__((aligned(64)));\n"
                   "#else\n"
                   f"static union {{ uint8_t bytes[{plan.arena.total_bytes}]; double align_; }} byoc_arena_u;\n"
                   "#define byoc_arena (byoc_arena_u.bytes)\n"
                   "#endif\n")
    if interface == "packed" and prog.steps:
        out.append(FILL_ARG_HELPER)

    def pointer(t: int) -> str:
        tensor = prog.tensors[t]
        ctype = c_type(tensor.type.dtype)
        if tensor.kind == "input":
            return f"({ctype}*)inputs[{prog.inputs.index(t)}]"
        if tensor.kind == "const":
            return f"({ctype}*)byoc_const_{tensor.name}"
        if t in plan.direct_output:
            return f"({ctype}*)outputs[{plan.direct_output[t]}]"
        return f"({ctype}*)(void*)(byoc_arena + {plan.arena.offsets[t]})"

    out.append(observer_table(prog))
    body = []
    first_out = 0
    for i, step in enumerate(prog.steps):
        callee = callees[step.symbol]
        body.append(f"  /* {step.symbol} */\n")
        body.append(f"  if (byoc_node_observer != NULL && byoc_node_observer->enter != NULL) "
                    f"byoc_node_observer->enter(byoc_node_observer->ctx, {i}, \"{step.symbol}\");\n")
        if interface == "packed":
            args = [(pointer(t), prog.tensors[t].type) for t in step.inputs + step.outputs]
            body.append(packed_call(callee, args))
        else:
            args = ", ".join(pointer(t) for t in step.inputs + step.outputs)
            body.append(f"  if ({callee}({args}) != 0) return -1;\n")
        fills = "".join(f"    byoc_step_outputs[{first_out + k}].data = (void*)({pointer(t)});\n"
                        for k, t in enumerate(step.outputs))
        body.append("  if (byoc_node_observer != NULL && byoc_node_observer->exit != NULL) {\n" + fills
                    + f"    byoc_node_observer->exit(byoc_node_observer->ctx, {i}, \"{step.symbol}\", "
                    f"{len(step.outputs)}, &byoc_step_outputs[{first_out}]);\n  }}\n")
        first_out += len(step.outputs)
    for k, t in enumerate(prog.outputs):
        if plan.direct_output.get(t) != k:
            body.append(f"  memcpy(outputs[{k}], (const void*){pointer(t)}, {prog.tensors[t].nbytes});\n")
    uses_inputs = any(prog.tensors[t].kind == "input" for s in prog.steps for t in s.inputs) or \
        any(prog.tensors[t].kind == "input" for t in prog.outputs)
    out.append(f"int32_t {run_name}(void* const* inputs, void* const* outputs) {{\n")
    if not uses_inputs:
        out.append("  (void)inputs;\n")
    if not prog.outputs:
        out.append("  (void)outputs;\n")
    out.extend(body)
    out.append("  return 0;\n}\n")
    return "".join(out)


def observer_table(prog: Program) -> str:
    """Static DLTensors describing every step output, in step order (what the node observer is shown)."""
    outs = [t for step in prog.steps for t in step.outputs]
    if not outs:
        return ""
    text = []
    rows = []
    for j, t in enumerate(outs):
        ty = prog.tensors[t].type
        shape = "NULL"
        if ty.shape:
            text.append(f"static int64_t byoc_step_shape_{j}[{ty.ndim}] = {{"
                        + ", ".join(f"INT64_C({d})" for d in ty.shape) + "};\n")
            shape = f"byoc_step_shape_{j}"
        code, bits = DL_DTYPES[ty.dtype]
        rows.append(f"  {{NULL, {{kDLCPU, 0}}, {ty.ndim}, {{{code}, {bits}, 1}}, {shape}, NULL, 0}}")
    return "".join(text) + f"static DLTensor byoc_step_outputs[{len(outs)}] = {{\n" + ",\n".join(rows) + "\n};\n"


def aot_executor_source(prog: Program, plan: AotPlan, run_name: str, trampolines: dict, interface: str,
                        has_modules: bool, pool: ConstantPool | None = None, pre_init: str = "") -> str:
    """The AOT part of host.c: run function plus init/deinit (which only manage blob-target modules)."""
    # Blob regions are called through their packed trampoline, or their generated unpacked stub.
    callees = {s.symbol: (trampolines[s.symbol] if s.symbol in trampolines and interface == "packed" else s.symbol)
               for s in prog.steps}
    init_body = pre_init + ("  return byoc_modules_init();\n" if has_modules else "  return 0;\n")
    deinit_body = "  byoc_modules_deinit();\n" if has_modules else ""
    return ("\n/* ---- AOT executor ---- */\n" + aot_source(prog, plan, run_name, callees, interface, pool)
            + f"static int32_t byoc_model_init(void) {{\n{init_body}}}\n"
            + f"static void byoc_model_deinit(void) {{\n{deinit_body}}}\n")
