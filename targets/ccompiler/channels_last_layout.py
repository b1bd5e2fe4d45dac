"""int8 tensors kept channels-last between the convolutions that write and read them so
(ck_qconv2d_params.channels_last's layout bits, kernels/ck_qdirect.c).

The channels-last direct convolution sums over a [row][column][channel] copy of its input and produces its sums with
the output channels in the vector lanes. Between two such convolutions an NCHW tensor costs a transposition on
each side (the output's bytes into channel rows, the next input's back into pixels); laid out channels-last it costs
neither: the output is stored pixel by pixel as it comes, and the next convolution reads it in place (unpadded, uint8)
or copies whole rows into its bordered copy.

A step-list pass after the residual adds are fused and before buffers are placed. A temp tensor is laid out
channels-last when a channels-last convolution writes it and every step that reads it is one too, reading it through
the same shape as its input, or as the residual of an add whose own output is channels-last (the library adds the
two element by element, so a convolution's output and its residual share a layout: deciding one decides the other,
hence the fixed point). A depthwise sum over whole planes (the global average pool) reads either layout. Everything
else keeps the model's NCHW: the region's inputs and outputs, and whatever max pooling or any other kernel reads.
A convolution shallower than qkernels.CL_MIN_DEPTH (input channels x taps) whose output stays NCHW goes back to the
GEMM core (MobileNetV2's 1x1 convolutions beside its depthwise ones: the transposition back into NCHW rows costs
more than a shallow sum gains), and the layouts are decided again without it.
"""
from __future__ import annotations

from . import qkernels
from .lowering import Buffer
from .passes import drop_unused_constants
from .rules import RULES

CONVS = ("qnn_conv2d", "qnn_conv2d_add")
IN_NHWC, OUT_NHWC = 2, 4   # the bits added to channels_last's 1 (ck_qnn.h)
RESIDUAL = 4               # qnn_conv2d_add's ins: data, weight, bias, scale, residual


def _channels_last(step) -> bool:
    return step.op in CONVS and bool(step.attrs.get("channels_last"))


def place_channels_last(lowering) -> None:
    """Set each channels-last convolution's layout bits; a shallow one left with an NCHW output goes back to the
    GEMM core (lowering.steps rewritten in place, its weight repacked)."""
    moved = False
    while True:
        nhwc = _layouts(lowering.steps)
        shallow = [s for s in lowering.steps if _channels_last(s) and id(s.outs[0].buffer) not in nhwc and
                   _depth(s.attrs["conv"]) < qkernels.CL_MIN_DEPTH]
        if not shallow:
            break
        for step in shallow:
            _to_gemm_core(lowering, step)
        moved = True
    if moved:
        drop_unused_constants(lowering, {})
    for step in lowering.steps:
        if _pools_planes(step) and id(step.ins[0].buffer) in nhwc:
            step.attrs = {**step.attrs, "channels_last": IN_NHWC}
        elif _channels_last(step):
            bits = 1 | (IN_NHWC if id(step.ins[0].buffer) in nhwc else 0) | \
                (OUT_NHWC if id(step.outs[0].buffer) in nhwc else 0)
            step.attrs = {**step.attrs, "channels_last": bits}


def _pools_planes(step) -> bool:
    """A depthwise sum over whole planes (the global average pool): it reads a channels-last input too."""
    return step.op == "qnn_conv2d" and qkernels.whole_plane_depthwise(step.attrs["conv"], step.attrs["q"]["rounding"])


def _depth(p: dict[str, int]) -> int:
    return p["channels"] * p["kernel_h"] * p["kernel_w"]


def _to_gemm_core(lowering, step) -> None:
    """The step on the GEMM core instead: its weight unpacked from the channels-last layout and packed row-major (the
    channels-last copy is then read by nothing and not written, passes.drop_unused_constants), its scratch re-sized."""
    w = qkernels.channels_last_unpack_weight(step.ins[1].buffer.data, step.attrs["conv"])
    step.attrs = {**step.attrs, "channels_last": 0}
    step.ins[1] = lowering.derived_constant(qkernels.pack_weight(1, w), f"qnn.conv2d weight "
                                            f"{'x'.join(str(d) for d in w.shape)} packed for ck_q kernels")
    nbytes = RULES[step.op].scratch(step)
    step.scratch = Buffer("scratch", int(nbytes)) if nbytes > 0 else None


def _layouts(steps) -> dict:
    """The temp buffers (ids) laid out channels-last: the fixed point of the rules in the module's docstring."""
    readers: dict[int, list] = {}
    producers: dict[int, tuple] = {}
    for step in steps:
        for index, value in enumerate(step.ins):
            readers.setdefault(id(value.buffer), []).append((step, index, value))
        for value in step.outs:
            producers[id(value.buffer)] = (step, value)
    candidates = [id(s.outs[0].buffer) for s in steps if _channels_last(s) and s.outs[0].buffer.kind == "temp"]
    nhwc = dict.fromkeys(candidates)   # ordered: the same decisions in the same order on every run

    def reads_nhwc(step, index, value, written) -> bool:
        if value.type.shape != written.type.shape:
            return False
        if _pools_planes(step):
            return index == 0
        return _channels_last(step) and \
            (index == 0 or (step.op == "qnn_conv2d_add" and index == RESIDUAL and id(step.outs[0].buffer) in nhwc))

    changed = True
    while changed:
        changed = False
        for buf in list(nhwc):
            step, written = producers[buf]
            keep = all(reads_nhwc(*read, written) for read in readers.get(buf, []))
            if keep and step.op == "qnn_conv2d_add":
                keep = id(step.ins[RESIDUAL].buffer) in nhwc
            if not keep:
                del nhwc[buf]
                changed = True
    return nhwc
