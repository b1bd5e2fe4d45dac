"""int8 residual adds into the convolution's tasks: qnn_conv2d -> qnn.add(., r) becomes one ck_qconv2d_add call,
whose GEMM tasks add the residual to their part of the output while it is still in cache (ResNet's block ends,
MobileNetV2's inverted residuals): no second pass over the tensor and no second parallel call. The same bytes as
the two calls (the library runs ck_qadd's arithmetic on the conv's requantized output).

A step-list rewrite after the weights are packed and before buffers are placed, as fuse_residual.py's float one:
  - the conv's output is a temp read only by the add (qnn.add only takes same-shape operands);
  - of two such convs (a projection shortcut and the block's last conv) the later one takes the add, so what
    stays live across steps does not grow.
The fused step sits where the add was (every input it reads is computed by then); the residual is one of its
inputs, so the planner never places the output over it (the library refuses out == residual).
"""
from __future__ import annotations

from collections import Counter

from .fuse_residual import fuse_adds_into_convs


def _fusable_conv(step, value, readers: Counter) -> bool:
    return (step.op == "qnn_conv2d" and value.buffer.kind == "temp" and readers[id(value.buffer)] == 1
            and step.outs[0].buffer is value.buffer)


def fuse_qresidual_adds(lowering, step_type) -> None:
    """Rewrite lowering.steps in place (step_type: the codegen's step class)."""
    def fused_step(steps, i, j, k, readers, gone):
        add, conv = steps[i], steps[j]
        attrs = {**conv.attrs, "add": add.attrs, "conv_is_rhs": k == 1, "lhs_dtype": add.ins[0].type.dtype}
        return step_type("qnn_conv2d_add", attrs, [*conv.ins, add.ins[1 - k]], list(add.outs),
                         f"{conv.title} + qnn.add", None, conv.scratch)

    fuse_adds_into_convs(lowering, "qnn_conv2d", "qnn.add", _fusable_conv, fused_step)
