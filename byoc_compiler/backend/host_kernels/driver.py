"""The host kernel emission driver: one typed Call -> one self-contained C99 kernel.

Per-op knowledge lives in the rule tables of elementwise.py, nn.py and shape.py
(op name -> rule); a rule gets a `KernelContext` (types, attrs, symbol) and
returns the statements of the core function. The driver wraps them into
`int32_t <symbol>_(const T* in0, ..., T* out0)` and adds the entry points of
byoc_compiler.ctext, so every kernel serves both calling conventions.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ... import ctext
from ...errors import ByocError
from ...ir.attrs import Attrs
from ...ir.expr import Call, Function, Op, Tuple
from ...ir.types import TensorType, Type, flatten_type
from ...op.attrs import get_op_attr, op_attr_table, register_op_attr
from ..host_fusion import is_host_composite
from . import elementwise, gemm, image, nn, qnn, qnn_fused, reduce, shape, slicing, tflite_qnn
from .cwriter import HELPER_DEPS, HELPERS, helper_definition

# Each module's table (op name -> rule: KernelContext -> C statements) becomes the ops' "host_kernel"
# attribute (op/attrs.py): every op of the registry has exactly one (tests/test_op_attrs.py checks it).
for _module in (elementwise, nn, shape, qnn, reduce, slicing, image, tflite_qnn):
    for _name, _rule in _module.RULES.items():
        register_op_attr(_name, "host_kernel", _rule)
# composite name -> rule: the chains backend/host_fusion.py makes one step (composites are not ops)
FUSED_RULES: dict[str, Rule] = dict(qnn_fused.RULES)
HELPERS.update(qnn.HELPERS)
HELPERS.update(tflite_qnn.HELPERS)
HELPER_DEPS.update(tflite_qnn.HELPER_DEPS)
HELPERS.update(gemm.HELPERS)
HELPER_DEPS.update(gemm.HELPER_DEPS)

_RESTRICT = re.compile(r"\* ((?:in|out)[0-9]+)\b")

# Order matters only for readability of the generated file.
_HEADER_ORDER = ("stdint.h", "stddef.h", "string.h", "math.h", "byoc/runtime.h", "byoc/parallel.h")


class HostKernelError(ByocError, ValueError):
    """A call the host cannot generate a kernel for; the message names the op and the reason."""


@dataclass(frozen=True)
class KernelSource:
    symbol: str
    code: str
    input_types: tuple[TensorType, ...]
    output_types: tuple[TensorType, ...]


@dataclass
class KernelContext:
    """What a rule sees: the call, its flattened tensor types, attrs, and where to put extras."""

    call: Call
    symbol: str
    inputs: list[TensorType]
    outputs: list[TensorType]
    attrs: Attrs
    headers: set[str] = field(default_factory=set)
    helpers: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)   # this kernel's own static functions (pool tasks)

    @property
    def op_name(self) -> str:
        return call_name(self.call)

    def need(self, header: str) -> None:
        self.headers.add(header)

    def use(self, helper: str) -> str:
        """Make the shared helper function `helper` (cwriter.HELPERS) available; returns its name."""
        for dep in HELPER_DEPS.get(helper, ()):
            self.use(dep)
        if helper not in self.helpers:
            self.helpers.append(helper)
            for h in HELPERS[helper][0]:
                self.need(h)
        return helper

    def fail(self, message: str, indent: int = 1) -> str:
        """Statements that record `message` (plain text, no format directives) and return -1."""
        self.need("byoc/runtime.h")
        text = message.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
        pad = "  " * indent
        return f'{pad}byoc_set_last_error("%s: {text}", "{self.symbol}");\n{pad}return -1;'


def call_name(call: Call) -> str:
    """The op's name, or a fused chain's composite name."""
    return str(call.op.attrs["Composite"]) if isinstance(call.op, Function) else call.op.name


def _argument_types(call: Call) -> list[TensorType]:
    types: list[TensorType] = []
    for arg in call.args:
        if isinstance(arg, Tuple) and arg.checked_type is None:
            fields = [f.checked_type for f in arg.fields]
            if any(t is None for t in fields):
                raise HostKernelError(f"{call_name(call)}: argument types are unknown; run transform.InferType first")
            for t in fields:
                types.extend(flatten_type(t))
            continue
        if arg.checked_type is None:
            raise HostKernelError(f"{call_name(call)}: argument types are unknown; run transform.InferType first")
        types.extend(flatten_type(arg.checked_type))
    return types


def _result_types(call: Call) -> list[TensorType]:
    ty: Type | None = call.checked_type
    if ty is None:
        raise HostKernelError(f"{call_name(call)}: the call's type is unknown; run transform.InferType first")
    return flatten_type(ty)


def supported_ops() -> list[str]:
    return sorted(op_attr_table("host_kernel"))


def emit_kernel(call: Call, symbol: str) -> KernelSource:
    """C99 source of a kernel computing `call` (a typed Call of a registered op), named `symbol`."""
    fused = isinstance(call, Call) and is_host_composite(call.op)
    if not isinstance(call, Call) or not (isinstance(call.op, Op) or fused):
        raise HostKernelError("host kernels are generated for calls of registered ops only; "
                              f"got {type(call).__name__} of {getattr(call, 'op', None)!r}")
    if not ctext.is_identifier(symbol):
        raise HostKernelError(f"kernel symbol {symbol!r} is not a valid C identifier; "
                              "pass it through ctext.sanitize_identifier")
    rule = FUSED_RULES.get(call_name(call)) if fused else get_op_attr(call.op.name, "host_kernel", None)
    if rule is None:
        raise HostKernelError(f"no host kernel for op {call_name(call)!r}; host kernels exist for: "
                              f"{', '.join(supported_ops())}")
    inputs, outputs = _argument_types(call), _result_types(call)
    for t in inputs + outputs:
        if t.dtype not in ctext.C_TYPES:
            raise HostKernelError(f"{call_name(call)}: dtype {t.dtype} has no C type")
    ctx = KernelContext(call, symbol, inputs, outputs, call.attrs)
    try:
        body = rule(ctx)
    except HostKernelError:
        raise
    except ValueError as exc:  # a rule saying it cannot handle these types or attrs
        raise HostKernelError(f"{call_name(call)}: {exc}") from None
    core = f"{symbol}_"
    params = [f"in{i}" for i in range(len(inputs))] + [f"out{i}" for i in range(len(outputs))]
    headers = {"stdint.h"} | ctx.headers
    lines = [f"#include <{h}>" for h in _HEADER_ORDER if h in headers]
    lines.extend(helper_definition(h) for h in ctx.helpers)
    lines.extend(ctx.functions)
    lines.append(f"/* host kernel {symbol}: {call_name(call)}; "
                 + ", ".join(f"in{i} {_type_text(t)}" for i, t in enumerate(inputs))
                 + (" -> " if inputs else "-> ")
                 + ", ".join(f"out{i} {_type_text(t)}" for i, t in enumerate(outputs)) + " */")
    lines.append(ctext.core_signature(core, inputs, outputs) + ";")
    # The definition's pointers are restrict (kernels are never in place: memory_plan.py), which lets the
    # compiler vectorize without alias checks; the prototype above stays the ABI's (qualifiers on
    # parameters do not change a function's type).
    lines.append(_RESTRICT.sub(r"* restrict \1", ctext.core_signature(core, inputs, outputs)) + " {")
    # A rule may not touch every argument (empty tensors); say so instead of warning.
    lines.extend(f"  (void){p};" for p in params)
    if body:
        lines.append(body.rstrip("\n"))
    lines += ["  return 0;", "}"]
    code = "\n".join(lines) + "\n" + ctext.entry_points(symbol, core, inputs, outputs)
    return KernelSource(symbol, code, tuple(inputs), tuple(outputs))


def _type_text(t: TensorType) -> str:
    return f"{t.dtype}[{','.join(str(d) for d in t.shape)}]"
