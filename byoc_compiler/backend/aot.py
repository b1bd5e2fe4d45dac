"""AOT executor: C that calls every step in order, intermediates in one static arena.

    static uint8_t byoc_arena[N];   offsets planned by liveness (memory_plan.plan_offsets)
    static const float byoc_const_p0[] = {...};   constants main passes to kernels/regions
    int32_t tvmgen_<mod>_run(void* const* inputs, void* const* outputs);

A step writes a model output straight into the caller's output buffer; outputs that
repeat a tensor or name an input/constant are copied at the end. No allocation on the
run path. The packed interface builds DLTensors on the stack for each call.
"""
from __future__ import annotations

from dataclasses import dataclass

from .c_abi import c_type, sanitize_identifier
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


def aot_source(prog: Program, plan: AotPlan, run_name: str, callees: dict[str, str], interface: str) -> str:
    """Constants, arena and the run function. callees: step symbol -> C function to call in this interface."""
    out = []
    for t in prog.consts:
        out.append(const_array(f"byoc_const_{prog.tensors[t].name}", prog.tensors[t].data))
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

    body = []
    for step in prog.steps:
        callee = callees[step.symbol]
        body.append(f"  /* {step.symbol} */\n")
        if interface == "packed":
            args = [(pointer(t), prog.tensors[t].type) for t in step.inputs + step.outputs]
            body.append(packed_call(callee, args))
        else:
            args = ", ".join(pointer(t) for t in step.inputs + step.outputs)
            body.append(f"  if ({callee}({args}) != 0) return -1;\n")
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


def aot_executor_source(prog: Program, plan: AotPlan, run_name: str, trampolines: dict, interface: str,
                        has_modules: bool) -> str:
    """The AOT part of host.c: run function plus init/deinit (which only manage blob-target modules)."""
    # Blob regions are called through their packed trampoline, or their generated unpacked stub.
    callees = {s.symbol: (trampolines[s.symbol] if s.symbol in trampolines and interface == "packed" else s.symbol)
               for s in prog.steps}
    init_body = "  return byoc_modules_init();\n" if has_modules else "  return 0;\n"
    deinit_body = "  byoc_modules_deinit();\n" if has_modules else ""
    return ("\n/* ---- AOT executor ---- */\n" + aot_source(prog, plan, run_name, callees, interface)
            + f"static int32_t byoc_model_init(void) {{\n{init_body}}}\n"
            + f"static void byoc_model_deinit(void) {{\n{deinit_body}}}\n")
