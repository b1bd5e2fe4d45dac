"""ccompiler's passes over the lowered steps, in the order codegen.py runs them.

`assign_outputs` lets results be computed straight into the output arrays; `prepack_weights` packs
constant weights of conv2d, and of dense/matmul/batch_matmul with more than one row (prepack.py);
(fuse_residual.py then moves a residual add into the preceding conv's epilogue); `run_in_place` lets
elementwise-like kernels overwrite a dead input; `plan` packs what is left into one workspace by lifetime
(backend.memory_plan; sizes from the tensor types and the kernels' size formulas, nothing allocated at run
time); `name_buffers` gives every buffer its C name.
"""
from __future__ import annotations

from byoc_compiler.vendor import WORKSPACE_ALIGNMENT, is_large, peak_live_bytes, plan_offsets, shape_text

from .lowering import Buffer, Lowering, Step, Value
from .prepack import PREPACK
from .rules import RULES

ALIGNMENT = WORKSPACE_ALIGNMENT   # every workspace buffer starts on a cache line, as the workspace does


def prepack_weights(lowering: Lowering) -> None:
    """Constant weights -> the kernel library's packed layouts, once, here at codegen time (not on every
    call, nor at init: nothing to allocate or to run before the first inference), as the table in
    prepack.py says (which ops, when it pays, the numpy packers mirroring the library's). The layouts
    are the same for every CPU the library dispatches to; the step becomes the table's *_prepacked op.
    A raw weight nothing else reads is dropped, so the packed copy replaces it."""
    packed: dict[tuple, Buffer] = {}
    for step in lowering.steps:
        table = rule = PREPACK.get(step.op)
        rule = (rule.pick(step) or rule) if rule is not None and rule.pick is not None else rule
        if rule is None or step.ins[rule.weight].buffer.kind != "const" or not rule.when(step):
            continue
        if rule is not table:  # another algorithm (Winograd): its own scratch, planned when the step was made
            nbytes = RULES[rule.op].scratch(step)
            step.scratch = Buffer("scratch", int(nbytes)) if nbytes > 0 else None
        weight = step.ins[rule.weight]
        key = (id(weight.buffer), rule.op, rule.key(step))
        if key not in packed:
            data = rule.pack(step, weight.buffer.data)
            note = f"{step.op.removeprefix('nn.')} weight {shape_text(weight.type.shape)} packed for {rule.function}"
            packed[key] = Buffer("const", data.nbytes, data=data, note=note, source=weight.buffer)
        step.op = rule.op
        step.ins[rule.weight] = Value(weight.type, packed[key])
    drop_unused_constants(lowering, packed)


def drop_unused_constants(lowering: Lowering, packed: dict) -> None:
    """Constants no step reads (weights replaced by packed copies) are not written; the packed copies
    follow their source in the numbering."""
    used = {id(v.buffer) for s in lowering.steps for v in s.ins}
    if not packed and all(id(buf) in used for buf in lowering.consts.values()):
        return
    by_source: dict[int, list[Buffer]] = {}
    for buf in packed.values():
        by_source.setdefault(id(buf.source), []).append(buf)
    consts: dict[int, Buffer] = {}
    for key, buf in lowering.consts.items():
        if id(buf) in used:
            consts[key] = buf
        for new in by_source.get(id(buf), []):
            consts[id(new)] = new
    for index, buf in enumerate(consts.values()):
        buf.index = index
    lowering.consts = consts


def assign_outputs(lowering: Lowering, results: list[Value]) -> list[Buffer]:
    """The region's output buffers: a temp result is computed in place, anything else is copied."""
    outputs = []
    for k, value in enumerate(results):
        buf = value.buffer
        if buf.kind == "temp":
            buf.kind, buf.index = "output", k
            outputs.append(buf)
            continue
        out = Buffer("output", value.type.nbytes, index=k)
        outputs.append(out)
        lowering.steps.append(Step("copy", {}, [value], [Value(value.type, out)], "copy"))
    return outputs


def run_in_place(lowering: Lowering) -> None:
    """Let elementwise-like steps overwrite an input temp that nothing reads afterwards."""
    last: dict[int, int] = {}
    for i, step in enumerate(lowering.steps):
        for v in step.ins:
            last[id(v.buffer)] = i
    for i, step in enumerate(lowering.steps):
        rule = RULES.get(step.op)
        if rule is None or not rule.inplace or len(step.outs) != 1:
            continue
        out = step.outs[0].buffer
        if out.kind != "temp":
            continue
        for k in rule.inplace:
            src = step.ins[k]
            buf = src.buffer
            if (buf.kind == "temp" and buf is not out and last.get(id(buf)) == i
                    and src.type.shape == step.outs[0].type.shape):
                out.merged = buf
                last[id(buf)] = max(i, last.get(id(out), i))
                break


def plan(lowering: Lowering) -> tuple[int, int]:
    """Workspace offsets for temps and scratch (disjoint lifetimes share bytes); returns its size and its
    lower bound (the peak of simultaneously live temps and scratch)."""
    for i, step in enumerate(lowering.steps):
        for v in step.ins:
            if v.buffer.kind == "temp":
                v.buffer.last = i
        for v in step.outs:
            if v.buffer.kind == "temp" and v.buffer.first is None:
                v.buffer.first = v.buffer.last = i
        if step.scratch is not None:
            step.scratch.first = step.scratch.last = i
    placed = [b for b in lowering.temps if b.kind == "temp" and b.merged is None]
    placed += [s.scratch for s in lowering.steps if s.scratch is not None]
    if not placed:
        return 0, 0
    sizes = {k: b.nbytes for k, b in enumerate(placed)}
    lifetimes = {k: (b.first, b.last) for k, b in enumerate(placed)}
    plan = plan_offsets(sizes, lifetimes, ALIGNMENT)
    for k, b in enumerate(placed):
        b.offset = plan.offsets[k]
    return plan.total_bytes, peak_live_bytes(sizes, lifetimes)


def name_buffers(lowering: Lowering, symbol: str) -> None:
    for buf in lowering.inputs:
        buf.cname = f"in{buf.index}"
    for buf in lowering.consts.values():
        # A linked constant is a global symbol: the region's symbol keeps it unique in the model.
        buf.cname = f"{symbol}_c{buf.index}" if is_large(buf.data) else f"c{buf.index}"
    n = 0
    for buf in lowering.temps:
        if buf.merged is not None:
            continue
        if buf.kind == "temp":
            buf.cname, n = f"t{n}", n + 1
        else:
            buf.cname = f"out{buf.index}"
    n = 0
    for step in lowering.steps:
        if step.scratch is not None:
            step.scratch.cname, n = f"scratch{n}", n + 1
        for v in step.outs:
            if v.buffer.kind == "output":
                v.buffer.cname = f"out{v.buffer.index}"
