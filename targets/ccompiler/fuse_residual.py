"""Residual adds into the convolution's epilogue: conv2d_prepacked (+ bias) -> add(., r) [-> nn.relu] becomes one
ck_conv2d_prepacked_add call, so the add and the relu are not two more passes over the tensor (ResNet's
block ends, MobileNetV2's inverted residuals).

A step-list rewrite of the ccompiler codegen, after the weights are packed and before buffers are placed:
  - the conv's output is a temp read only by the add, which adds two tensors of one shape (no broadcast);
  - of two such convs (a projection shortcut and the block's last conv) the later one takes the add, so
    what stays live across steps does not grow;
  - a relu that is the add's only reader (and not a region output) becomes the fused activation.
The fused step sits where the add was: every input it reads is computed by then. Its output never shares
bytes with the residual (the library writes partial sums of a long reduction to the output first).
"""
from __future__ import annotations

from collections import Counter

# The float convolutions that take a residual: the op of each fused step is the conv's + "_add".
CONVS = ("conv2d_prepacked", "conv2d_winograd")


def _fusable_conv(step, value, readers: Counter) -> bool:
    return (step.op in CONVS and len(step.ins) == 3 and step.activation is None
            and value.buffer.kind == "temp" and readers[id(value.buffer)] == 1
            and step.outs[0].buffer is value.buffer)


def _relu_after(steps, start: int, value, readers: Counter):
    """Index of the nn.relu that is `value`'s only reader, or None."""
    if value.buffer.kind != "temp" or readers[id(value.buffer)] != 1:
        return None
    for k in range(start, len(steps)):
        step = steps[k]
        if any(v.buffer is value.buffer for v in step.ins):
            ok = step.op == "nn.relu" and step.outs[0].type.shape == value.type.shape
            return k if ok else None
    return None


def later_conv(steps, i: int, producer: dict, gone: set, fusable) -> tuple[int, int] | None:
    """(index of the conv, index of its value among the add's inputs) that add steps[i] takes into its epilogue:
    the later of the inputs some conv (producer: buffer id -> step index) computed before it and `fusable` accepts;
    None if there is none."""
    add = steps[i]
    candidates = [(producer[id(v.buffer)], k) for k, v in enumerate(add.ins)
                  if producer.get(id(v.buffer), i) < i and producer[id(v.buffer)] not in gone
                  and fusable(steps[producer[id(v.buffer)]], v)]
    return max(candidates) if candidates else None


def fuse_adds_into_convs(lowering, conv_op: str | tuple[str, ...], add_op: str, fusable, fused_step) -> None:
    """The rewrite both residual fusions share (this file's float one, fuse_qresidual.py's int8 one): each
    `add_op` step of two distinct tensors whose input the later `conv_op` step computed (`fusable(step, value,
    readers)` accepts) becomes `fused_step(steps, add index, conv index, the conv's side of the add, readers,
    gone)`, which may also put steps it absorbs into `gone`, or returns None to leave the add alone. The conv
    and what only it used are dropped. Rewrites lowering.steps in place."""
    steps = lowering.steps
    readers = Counter(id(v.buffer) for s in steps for v in s.ins)
    conv_ops = (conv_op,) if isinstance(conv_op, str) else conv_op
    producer = {id(s.outs[0].buffer): i for i, s in enumerate(steps) if s.op in conv_ops}
    gone: set[int] = set()
    for i, add in enumerate(steps):
        if add.op != add_op or len(add.ins) != 2 or add.ins[0].buffer is add.ins[1].buffer:
            continue
        picked = later_conv(steps, i, producer, gone, lambda step, v: fusable(step, v, readers))
        if picked is None:
            continue
        fused = fused_step(steps, i, *picked, readers, gone)
        if fused is not None:
            steps[i] = fused
            gone.add(picked[0])
    lowering.steps = [s for n, s in enumerate(steps) if n not in gone]
    used = {id(v.buffer) for s in lowering.steps for v in (*s.ins, *s.outs)}
    lowering.temps = [b for b in lowering.temps if id(b.root()) in used]


def fuse_residual_adds(lowering, step_type) -> None:
    """Rewrite lowering.steps in place (step_type: the codegen's step class)."""
    def fused_step(steps, i, j, k, readers, gone):
        add = steps[i]
        out = add.outs[0]
        if any(v.type.shape != out.type.shape or v.type.dtype != "float32" for v in add.ins):
            return None
        conv, residual = steps[j], add.ins[1 - k]
        relu = _relu_after(steps, i + 1, out, readers)
        result = steps[relu].outs[0] if relu is not None else out
        title = f"{conv.title} + add" + (" + nn.relu" if relu is not None else "")
        if relu is not None:
            gone.add(relu)
        return step_type(f"{conv.op}_add", conv.attrs, [*conv.ins, residual], [result], title,
                         "nn.relu" if relu is not None else None, conv.scratch)

    fuse_adds_into_convs(lowering, CONVS, "add", _fusable_conv, fused_step)
