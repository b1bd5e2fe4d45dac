"""SpecBuilder: a Spec written layer by layer, its weights drawn from one seeded generator and scaled when
finished (evaluate.normalized), so every layer's output has RMS 1 on a seeded input (spec.py says why)."""
from __future__ import annotations

import numpy as np

from .evaluate import normalized
from .spec import Layer, Spec, same_pads


class SpecBuilder:
    """Appends layers to a Spec; weights are drawn from one seeded generator in the order layers are added
    and scaled by `finish` (evaluate.normalized)."""

    def __init__(self, name: str, input_shape, seed: int, input_name: str = "input"):
        self.spec = Spec(name, input_name, tuple(input_shape))
        self.rng = np.random.default_rng(seed)
        self._count = 0

    def finish(self) -> Spec:
        return normalized(self.spec)

    def _add(self, op: str, inputs, shape, weight=None, bias=None, **attrs) -> str:
        self._count += 1
        out = f"{op}{self._count}"
        self.spec.layers.append(Layer(op, tuple(inputs), out, tuple(shape), attrs, weight, bias))
        return out

    def _he(self, shape, fan_in: int) -> np.ndarray:
        return (self.rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    def _bias(self, n: int) -> np.ndarray:
        return (self.rng.standard_normal(n) * 0.1).astype(np.float32)

    def _window(self, x: str, kernel, stride: int, same: bool):
        _, h, w, c = self.spec.shape(x)
        kh, kw = kernel
        if same:
            (top, bottom), (left, right) = same_pads(h, kh, stride), same_pads(w, kw, stride)
        else:
            top = bottom = left = right = 0
        oh, ow = (h + top + bottom - kh) // stride + 1, (w + left + right - kw) // stride + 1
        return (oh, ow, c), dict(kernel=(kh, kw), stride=stride, pads=(top, left, bottom, right))

    def conv(self, x: str, channels: int, kernel, stride: int = 1, act: str = "relu", same: bool = True) -> str:
        kernel = (kernel, kernel) if isinstance(kernel, int) else tuple(kernel)
        (oh, ow, c), attrs = self._window(x, kernel, stride, same)
        weight = self._he((channels, *kernel, c), c * kernel[0] * kernel[1])
        return self._add("conv", [x], (1, oh, ow, channels), weight, self._bias(channels), act=act, **attrs)

    def depthwise(self, x: str, kernel: int = 3, stride: int = 1, act: str = "relu") -> str:
        (oh, ow, c), attrs = self._window(x, (kernel, kernel), stride, True)
        weight = self._he((1, kernel, kernel, c), kernel * kernel)
        return self._add("depthwise", [x], (1, oh, ow, c), weight, self._bias(c), act=act, **attrs)

    def fc(self, x: str, units: int, act: str = "none", rms: float = 1.0) -> str:
        """Fully connected on the last axis of a 2-D input; `rms`: the scale of its output
        (evaluate.normalized), e.g. logits' spread."""
        shape = self.spec.shape(x)
        weight = self._he((units, shape[-1]), shape[-1])
        return self._add("fc", [x], shape[:-1] + (units,), weight, self._bias(units), act=act, rms=rms)

    def _broadcast(self, op: str, a: str, b: str, **attrs) -> str:
        return self._add(op, [a, b], tuple(np.broadcast_shapes(self.spec.shape(a), self.spec.shape(b))), **attrs)

    def add(self, a: str, b: str, act: str = "none") -> str:
        return self._broadcast("add", a, b, act=act)

    def sub(self, a: str, b: str) -> str:
        return self._broadcast("sub", a, b)

    def mul(self, a: str, b: str) -> str:
        return self._broadcast("mul", a, b)

    def const(self, value) -> str:
        value = np.asarray(value, np.float32)
        return self._add("const", [], value.shape, value=value)

    def matmul(self, a: str, b: str) -> str:
        sa, sb = self.spec.shape(a), self.spec.shape(b)
        if sa[:-2] != sb[:-2] or sa[-1] != sb[-2]:
            raise ValueError(f"matmul of {sa} and {sb}: one batch shape and matching inner sizes expected")
        return self._add("matmul", [a, b], sa[:-1] + sb[-1:])

    def reshape(self, x: str, shape) -> str:
        return self._add("reshape", [x], tuple(shape))

    def transpose(self, x: str, perm) -> str:
        shape = self.spec.shape(x)
        return self._add("transpose", [x], tuple(shape[p] for p in perm), perm=tuple(perm))

    def mean(self, x: str) -> str:
        return self._add("mean", [x], self.spec.shape(x)[:-1] + (1,))

    def rsqrt(self, x: str) -> str:
        return self._add("rsqrt", [x], self.spec.shape(x))

    def layer_norm(self, x: str, eps: float = 1e-3) -> str:
        """Layer normalization over the last axis as TFLite converters decompose it: mean, x - mean, mean of
        its square, rsqrt(var + eps), then gamma and beta (seeded near 1 and 0)."""
        d = self.spec.shape(x)[-1]
        centred = self.sub(x, self.mean(x))
        inv = self.rsqrt(self.add(self.mean(self.mul(centred, centred)), self.const([eps])))
        gamma = self.const(self.rng.uniform(0.8, 1.2, d))
        return self.add(self.mul(self.mul(centred, inv), gamma), self.const(self.rng.standard_normal(d) * 0.1))

    def pool(self, x: str, kind: str, kernel=None, stride: int | None = None, same: bool = False) -> str:
        """Average or max pool, VALID (max pool also SAME: padding never wins the max); without a kernel,
        over the whole plane (the global pool)."""
        _, h, w, c = self.spec.shape(x)
        if same and kind != "max":    # TFLite and ONNX count padded pixels differently in an average
            raise ValueError("only max pools take SAME padding here")
        kernel = (h, w) if kernel is None else ((kernel, kernel) if isinstance(kernel, int) else tuple(kernel))
        (oh, ow, _), attrs = self._window(x, kernel, stride or kernel[0], same)
        return self._add(f"{kind}_pool", [x], (1, oh, ow, c), **attrs)

    def flatten(self, x: str) -> str:
        n, h, w, c = self.spec.shape(x)
        if (h, w) != (1, 1):    # NHWC and NCHW flatten alike only without a plane: keeps both forms one model
            raise ValueError(f"flatten of {x} {self.spec.shape(x)}: only a 1x1 plane flattens the same in NCHW")
        return self._add("flatten", [x], (n, c))

    def concat(self, parts) -> str:
        shapes = [self.spec.shape(p) for p in parts]
        return self._add("concat", parts, (*shapes[0][:-1], sum(s[-1] for s in shapes)))

    def softmax(self, x: str) -> str:
        return self._add("softmax", [x], self.spec.shape(x))
