"""Shared by the debugging tests: a ResNet-style model and bugs injected into the ccompiler target.

The bugs patch the C text the ccompiler codegen returns for a region (in this process only), so
the same build without the patch is the control:
  - relu_leak: after the k-th plain relu (not a composite's), one element is set negative;
  - bias_drop: the k-th conv2d+bias(+relu) composite is called with no bias.
"""
from __future__ import annotations

import re

import numpy as np

from byoc_compiler import op
from byoc_compiler.ir.expr import Constant, Function, Var
from byoc_compiler.ir.module import IRModule
from byoc_compiler.ir.types import TensorType


def resnet_style(channels: int = 8, size: int = 8, seed: int = 0) -> IRModule:
    """stem conv+bias+relu, two residual blocks (conv+bias+relu, conv+bias, add, relu), an lrn on the host
    between them, global average pool, dense+bias, softmax (host)."""
    rng = np.random.default_rng(seed)

    def const(*shape, scale=0.3):
        return Constant(rng.uniform(-scale, scale, size=shape).astype("float32"))

    def conv(h, cin, cout, relu=True):
        y = op.nn.bias_add(op.nn.conv2d(h, const(cout, cin, 3, 3), padding=(1, 1)), const(cout, scale=0.1))
        return op.nn.relu(y) if relu else y

    x = Var("data", TensorType((1, 3, size, size), "float32"))
    h = conv(x, 3, channels)
    for block in range(2):
        y = conv(conv(h, channels, channels), channels, channels, relu=False)
        h = op.nn.relu(op.add(y, h))
        if block == 0:
            h = op.nn.lrn(h, size=3)
    h = op.nn.batch_flatten(op.nn.global_avg_pool2d(h))
    h = op.nn.bias_add(op.nn.dense(h, const(10, channels)), const(10, scale=0.1))
    return IRModule.from_expr(Function([x], op.nn.softmax(h)))


_RELU = re.compile(r"ck_unary\(CK_RELU, (\d+), (\w+), (\w+),[^\n]*\n[^\n]*;\n")
_CONV_BIAS = re.compile(r"(ck_conv2d(?:_prepacked)?)\(&params, (\w+), (\w+), (\w+),")


class InjectedBug:
    """Patches ccompiler's codegen while active, in regions named `symbol` (every region if None).

    relu_leak: every plain relu (not a composite's) of the region sets element 3 of its output to -0.25;
    bias_drop: the conv2d+bias(+relu) composite whose bias constant equals `bias` is called without it.
    """

    def __init__(self, kind: str, symbol: str | None = None, bias=None):
        self.kind, self.symbol, self.bias = kind, symbol, bias
        self.patched: list[str] = []

    def _conv_index(self, func):
        from byoc_compiler.ir import Call, Constant, Function, post_order

        convs = [n for n in post_order(func.body) if isinstance(n, Call) and isinstance(n.op, Function)
                 and str(n.op.attrs.get("Composite", "")).startswith("ccompiler.conv2d_bias")]
        for k, call in enumerate(convs):
            b = call.args[2]
            if isinstance(b, Constant) and b.data.shape == self.bias.shape and np.array_equal(b.data, self.bias):
                return k
        return None

    def patch(self, text: str, func) -> str:
        if self.kind == "relu_leak":
            for m in reversed(list(_RELU.finditer(text))):
                text = text[:m.end()] + f"  {m.group(3)}[3] = -0.25f; /* injected bug */\n" + text[m.end():]
            return text
        k = self._conv_index(func)
        matches = list(_CONV_BIAS.finditer(text))
        if k is None or k >= len(matches):
            return text
        m = matches[k]
        return text[:m.start()] + f"{m.group(1)}(&params, {m.group(2)}, {m.group(3)}, NULL," + text[m.end():]

    def __enter__(self):
        import dataclasses

        from byoc_compiler.target import get_target

        target = get_target("ccompiler")
        self._target, self._codegen = target, target.codegen

        def codegen(func, symbol):
            artifact = self._codegen(func, symbol)
            if self.symbol not in (None, symbol):
                return artifact
            sources = {name: self.patch(code, func) for name, code in artifact.sources.items()}
            if sources != artifact.sources:
                self.patched.append(symbol)
            # everything else of the artifact (linked constants, workspace size) stays as generated
            return dataclasses.replace(artifact, sources=sources)

        target.codegen = codegen
        return self

    def __exit__(self, *exc):
        self._target.codegen = self._codegen
        return False


def conv_biases(mod) -> list:
    """The bias constants of the model's conv2d + bias_add pairs, in graph order."""
    from byoc_compiler.ir import Call, post_order

    out = []
    for n in post_order(mod["main"].body):
        if isinstance(n, Call) and getattr(n.op, "name", "") == "nn.bias_add" and isinstance(n.args[0], Call) \
                and getattr(n.args[0].op, "name", "") == "nn.conv2d":
            out.append(n.args[1].data)
    return out
