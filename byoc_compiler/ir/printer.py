"""The text form of the IR: Relay's text syntax, written so that `parse` reads it back.

Layout (what `astext` writes for a module)::

    def @main(%x: Tensor[(1, 3, 16, 16), float32], %w: Tensor[(8, 3, 3, 3), float32]) {
      %0 = nn.conv2d(%x, %w, strides=[1, 1], padding=[1, 1, 1, 1]);
      %1 = nn.relu(%0);
      nn.softmax(%1, axis=1)
    }

Rules, all deterministic:

* Every Call, Tuple, TupleGetItem and nested Function of a body is bound once
  to `%0, %1, ...` in graph order (inputs first); the body's result is the last
  line. Numbering runs through a whole `def`, nested functions included, so a
  number names one value in the whole definition.
* Vars print as `%name`. Names that are not simple identifiers
  (`[A-Za-z_][A-Za-z0-9_]*`), e.g. ONNX names such as `conv1.weight`,
  `x; system("");//` or `0`, are quoted with string escapes: `%"conv1.weight"`.
  A quoted name never means an intermediate: `%"0"` is a var named "0", `%0`
  a bound value. Two vars with the same name get `%x`, `%x_1`, ... The same
  quoting applies to global names (`@"name"`).
* Only op attributes that differ from the op's default are printed (the
  parser fills the defaults back). Attribute values: `1`, `1f` / `1e-05f`
  (floats always carry `f`; `inf`, `-inf`, `nan` are spelled so), `True`,
  `False`, `None`, `"str"`, lists `[1, 1]`, nested lists `[[0, 0], [1, 1]]`.
* Function attrs are written after the parameters, Relay style:
  `def @f(%x: T, Compiler="ccompiler", global_symbol="f", Primitive=1) -> T {`.
  The return type is printed when known (`ret_type`, else the body's checked type).
* Constants:
  - scalars inline like Relay: float32 `1f`, `-2.5f`; int32 `3`; int64 `3i64`;
    bool `True`/`False`;
  - tensors of at most 16 elements (float32/int32/int64/bool, all values
    finite) inline as nested lists of such scalars, one level per axis:
    `[[1f, 2f], [3f, 4f]]` is a 2x2 float32 constant (in expression position a
    list is always a constant; in attribute position it is a list attribute);
  - everything else (large, empty, other dtypes, NaN/inf) by reference
    `meta[relay.Constant][i]` into a metadata section written after the
    functions: a line `#[metadata]` followed by JSON
    `{"relay.Constant": [{"dtype": "float32", "shape": [8, 3, 3, 3],
    "data": "<base64 of the raw little-endian bytes>"}, ...]}` -- bit-exact.
  - `astext_with_sidecar(mod, "model.txt.bin")` keeps large constants (at least
    SIDECAR_BYTES, 1 KiB) out of the text: their entry reads
    `{"dtype": ..., "shape": ..., "file": "model.txt.bin", "offset": 0, "nbytes": 864}`
    and their raw little-endian bytes go to the returned sidecar (each at a 64-byte aligned
    offset). `parse(text, files=...)` reads both forms back bit-exactly.
* With `show_types=True` each binding gets a `/* ty=... */` comment when its
  type has been inferred (comments are ignored by the parser).
* A non-Function expression prints its free vars first as
  `free_var %x: Tensor[...];` lines.

Nothing recurses on the depth of the graph (`post_order` keeps its own
stack); only nested functions (composites) recurse, and they nest shallowly.
"""
from __future__ import annotations

import base64
import json
import math
import re

import numpy as np

from . import op_table, show
from .analysis import free_vars
from .expr import Call, Constant, Expr, Function, GlobalVar, Op, Tuple, TupleGetItem, Var
from .module import IRModule
from .structural import canonical_attr_value
from .types import Type
from .visitor import post_order

__all__ = ["astext", "astext_with_sidecar", "format_name", "format_string", "format_attr_value",
           "INLINE_CONSTANT_LIMIT", "SIDECAR_BYTES"]

# Tensors with at most this many elements are printed inline; larger ones go to the metadata section.
INLINE_CONSTANT_LIMIT = 16
# With a sidecar, metadata constants of at least this many bytes go to it (as backend/constants.py's
# linked constants do): a real model's text stays small enough to open.
SIDECAR_BYTES = 1024
SIDECAR_ALIGNMENT = 64

_SIMPLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# dtype -> suffix of an inline literal (int32 and float32 carry none; Relay's spelling).
_SUFFIX = {"float32": "f", "float16": "f16", "float64": "f64", "int8": "i8", "int16": "i16", "int32": "",
           "int64": "i64", "uint8": "u8", "uint16": "u16"}
_INLINE_DTYPES = (*_SUFFIX, "bool")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def format_string(text: str) -> str:
    """A double-quoted string literal the parser reads back to exactly `text`."""
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isprintable() and ch not in "\u2028\u2029":
            out.append(ch)
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def format_name(sigil: str, name: str) -> str:
    """`%x` for simple identifiers, `%"any text"` for everything else."""
    return sigil + (name if _SIMPLE_NAME.match(name) else format_string(name))


def _format_float(value: float, suffix: str = "f") -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = repr(float(value))
    if text.endswith(".0"):
        text = text[:-2]
    return text + suffix


def format_attr_value(value) -> str:
    """An attribute value in text form (ints, floats, bools, strings, None, nested lists)."""
    if value is None:
        return "None"
    if isinstance(value, (bool, np.bool_)):
        return "True" if value else "False"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return _format_float(float(value))
    if isinstance(value, str):
        return format_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_attr_value(v) for v in value) + "]"
    if isinstance(value, Type):
        return str(value)
    raise TypeError(f"cannot print attribute value {value!r} of type {type(value).__name__}")


def _format_scalar(value, dtype: str) -> str:
    if dtype == "bool":
        return "True" if value else "False"
    if dtype.startswith("float"):
        text = str(np.dtype(dtype).type(value))  # shortest text that reads back to the same value
        if text.endswith(".0"):
            text = text[:-2]
        return text + _SUFFIX[dtype]
    return f"{int(value)}{_SUFFIX[dtype]}"


def _inline_constant(data: np.ndarray) -> str | None:
    """The inline text of a small constant, or None when it must go to the metadata section."""
    dtype = str(data.dtype)
    if dtype not in _INLINE_DTYPES or data.size > INLINE_CONSTANT_LIMIT or data.size == 0:
        return None
    if dtype.startswith("float") and not np.all(np.isfinite(data)):
        return None
    if data.ndim == 0:
        return _format_scalar(data.item(), dtype)

    def nest(block) -> str:
        if block.ndim == 1:
            return "[" + ", ".join(_format_scalar(v, dtype) for v in block.tolist()) + "]"
        return "[" + ", ".join(nest(sub) for sub in block) + "]"

    return nest(data)


def _default_attrs(op_name: str) -> dict:
    """name -> default of the op's attributes that have one; {} when the op is not registered or the
    registry is not loaded (then every attribute is printed, which reads back the same)."""
    table = op_table.installed()
    return table.default_attrs(op_name) if table is not None else {}


def _same_value(a, b) -> bool:
    # Bit-level comparison (-0.0 is not 0.0), the same notion structural_equal uses, so that leaving a
    # default out never changes what the parser reads back.
    return canonical_attr_value(a) == canonical_attr_value(b)


def _attr_key(key: str) -> str:
    return key if _SIMPLE_NAME.match(key) else format_string(key)


class _Printer:
    def __init__(self, show_types: bool, sidecar: str | None = None, sidecar_bytes: int = SIDECAR_BYTES,
                 external=None, show_meta: bool = False):
        self.show_types, self.show_meta = show_types, show_meta
        self.sidecar, self.sidecar_bytes = sidecar, sidecar_bytes
        self.external = external
        self.sidecar_data = bytearray()
        self.meta: list[np.ndarray] = []
        self.meta_index: dict[int, int] = {}
        self.defaults_cache: dict[str, dict] = {}

    # ---- names -------------------------------------------------------------------------------
    def _start_def(self) -> None:
        self.names: dict[int, str] = {}  # id(node) -> how it is referenced in this def
        self.used_names: set[str] = set()
        self.counter = 0

    def _name_var(self, var: Var) -> str:
        base = var.name_hint
        name, k = base, 0
        while format_name("%", name) in self.used_names:
            k += 1
            name = f"{base}_{k}"
        text = format_name("%", name)
        self.used_names.add(text)
        self.names[id(var)] = text
        return text

    def _fresh(self) -> str:
        text = f"%{self.counter}"
        self.counter += 1
        return text

    # ---- pieces ------------------------------------------------------------------------------
    def _ty_comment(self, expr: Expr) -> str:
        text = ""
        if self.show_types and expr.checked_type is not None:
            text = f" /* ty={expr.checked_type} */"
        if self.show_meta and expr._meta:
            text += " /* " + ", ".join(f"{key}={value}" for key, value in sorted(expr._meta.items())) + " */"
        return text

    def _ref(self, expr: Expr) -> str:
        """How an already-printed value is referenced inside another expression."""
        name = self.names.get(id(expr))
        if name is not None:
            return name
        if isinstance(expr, Constant):
            return self._constant(expr)
        if isinstance(expr, GlobalVar):
            return format_name("@", expr.name_hint)
        if isinstance(expr, Var):  # a free var of a function body: print it anyway
            return self._name_var(expr)
        raise AssertionError(f"{type(expr).__name__} referenced before it was printed")

    def _constant(self, const: Constant) -> str:
        inline = _inline_constant(const.data)
        if inline is not None:
            return inline
        index = self.meta_index.get(id(const))
        if index is None:
            index = len(self.meta)
            self.meta.append(const.data)
            self.meta_index[id(const)] = index
        return f"meta[relay.Constant][{index}]"

    def _attrs(self, call: Call) -> list[str]:
        if not call.attrs:
            return []
        defaults = {}
        if isinstance(call.op, Op):
            defaults = self.defaults_cache.get(call.op.name)
            if defaults is None:
                defaults = self.defaults_cache[call.op.name] = _default_attrs(call.op.name)
        out = []
        for key, value in call.attrs.items():
            if key in defaults and _same_value(defaults[key], value):
                continue
            out.append(f"{_attr_key(key)}={format_attr_value(value)}")
        return out

    def _call_text(self, call: Call) -> str:
        if isinstance(call.op, Op):
            head = call.op.name
        elif isinstance(call.op, GlobalVar):
            head = format_name("@", call.op.name_hint)
        else:
            head = self._ref(call.op)
        args = [self._ref(a) for a in call.args] + self._attrs(call)
        return f"{head}({', '.join(args)})"

    def _value_text(self, node: Expr, indent: str) -> str:
        """The right-hand side of a binding (or the final line) for a compound node."""
        if isinstance(node, Call):
            return self._call_text(node)
        if isinstance(node, Tuple):
            fields = [self._ref(f) for f in node.fields]
            return "(" + ", ".join(fields) + ("," if len(fields) == 1 else "") + ")"
        if isinstance(node, TupleGetItem):
            return f"{self._ref(node.tuple_value)}.{node.index}"
        if isinstance(node, Function):
            return self._function("fn ", node, indent)
        return self._ref(node)

    def _header(self, func: Function) -> str:
        parts = []
        for param in func.params:
            text = self._name_var(param)
            ty = param.type_annotation or param.checked_type
            parts.append(f"{text}: {ty}" if ty is not None else text)
        parts += [f"{_attr_key(key)}={format_attr_value(value)}" for key, value in func.attrs.items()]
        head = "(" + ", ".join(parts) + ")"
        ret = func.ret_type or func.body.checked_type
        if ret is not None:
            head += f" -> {ret}"
        return head

    def _function(self, prefix: str, func: Function, indent: str) -> str:
        """`<prefix>(params, attrs) -> ret {` + body lines + `}` (no trailing newline)."""
        # A nested function may reuse Var objects of the enclosing one as its parameters; their
        # enclosing names must come back once its body is printed.
        saved = {id(p): self.names[id(p)] for p in func.params if id(p) in self.names}
        head = prefix + self._header(func)
        lines = [head + " {"]
        lines.extend(self._body(func.body, indent + "  "))
        lines.append(indent + "}")
        self.names.update(saved)
        return "\n".join(lines)

    def _body(self, root: Expr, indent: str) -> list[str]:
        lines = []
        for node in post_order(root):
            if id(node) in self.names or not isinstance(node, (Call, Tuple, TupleGetItem, Function)):
                continue
            if node is root:
                break
            value = self._value_text(node, indent)
            name = self._fresh()
            self.names[id(node)] = name
            lines.append(f"{indent}{name} = {value};{self._ty_comment(node)}")
        final = self._value_text(root, indent) if id(root) not in self.names else self.names[id(root)]
        lines.append(indent + final + self._ty_comment(root))
        return lines

    # ---- entry points ------------------------------------------------------------------------
    def module(self, mod: IRModule) -> str:
        chunks = []
        for name, func in mod.items():
            self._start_def()
            chunks.append(self._function(f"def {format_name('@', name)}", func, ""))
        return "\n\n".join(chunks) + "\n" + self._metadata()

    def expr(self, expr: Expr) -> str:
        self._start_def()
        if isinstance(expr, Function):
            text = self._function("fn ", expr, "")
            return text + "\n" + self._metadata()
        lines = []
        for var in free_vars(expr):
            text = self._name_var(var)
            ty = var.type_annotation or var.checked_type
            lines.append(f"free_var {text}: {ty};" if ty is not None else f"free_var {text};")
        lines.extend(self._body(expr, ""))
        return "\n".join(lines) + "\n" + self._metadata()

    def _metadata(self) -> str:
        if not self.meta:
            return ""
        entries = []
        for data in self.meta:
            raw = np.asarray(data)  # (not ascontiguousarray: that turns a 0-d array into shape (1,))
            if raw.dtype.byteorder == ">":
                raw = raw.astype(raw.dtype.newbyteorder("<"))
            entry = {"dtype": str(raw.dtype), "shape": list(raw.shape)}
            found = self.external(data) if self.external is not None and raw.nbytes >= self.sidecar_bytes else None
            if found is not None:
                # Already in another file beside the text (a build's constants.bin): refer to it.
                name, offset, order = found
                entry.update({"file": name, "offset": offset, "nbytes": raw.nbytes})
                if order == ">":
                    entry["byteorder"] = "big"
            elif self.sidecar is not None and raw.nbytes >= self.sidecar_bytes:
                pad = -len(self.sidecar_data) % SIDECAR_ALIGNMENT
                self.sidecar_data += b"\0" * pad
                entry.update({"file": self.sidecar, "offset": len(self.sidecar_data), "nbytes": raw.nbytes})
                self.sidecar_data += raw.tobytes()
            else:
                entry["data"] = base64.b64encode(raw.tobytes()).decode("ascii")
            entries.append(entry)
        # One constant per line keeps the section diffable; the whole section is one JSON document.
        lines = ",\n".join("  " + json.dumps(entry) for entry in entries)
        return '#[metadata]\n{"relay.Constant": [\n' + lines + "\n]}\n"


def astext(obj, show_types: bool = False, show_meta: bool = False) -> str:
    """The text form of an IRModule, a Function or any expression (see the module docstring). With
    `show_meta=True` each binding's meta (ir/expr.py: a region annotation, a user's note) follows it as a
    `/* key=value */` comment, which the parser ignores like the types' comments."""
    return _any(_Printer(show_types, show_meta=show_meta), obj)


def astext_with_sidecar(obj, sidecar: str, show_types: bool = False,
                        sidecar_bytes: int = SIDECAR_BYTES, external=None) -> tuple[str, bytes]:
    """(text, sidecar bytes): like astext, but constants of at least `sidecar_bytes` bytes are referenced
    by offset into the file named `sidecar` (a plain file name, written beside the text).

    `external(ndarray)` may say that a constant's raw bytes are already in another file beside the
    text: (file name, offset, byte order '<' or '>'), or None. Those entries refer to that file
    (with `"byteorder": "big"` when big-endian) and add nothing to the sidecar."""
    if not isinstance(sidecar, str) or not sidecar or "/" in sidecar or "\\" in sidecar or sidecar in (".", ".."):
        raise ValueError(f"sidecar {sidecar!r} must be a plain file name (it is found beside the text)")
    printer = _Printer(show_types, sidecar, sidecar_bytes, external)
    text = _any(printer, obj)
    return text, bytes(printer.sidecar_data)


def _any(printer: "_Printer", obj) -> str:
    if isinstance(obj, IRModule):
        return printer.module(obj)
    if isinstance(obj, Expr):
        return printer.expr(obj)
    if isinstance(obj, Op):
        return obj.name
    raise TypeError(f"astext expects an IRModule or an expression, got {type(obj).__name__}")


show.install(astext)   # repr(expr), IRModule.astext and structural diffs print through it
