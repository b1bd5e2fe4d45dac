"""The C calling convention every generated function shares (docs/runtime-abi.md).

A generated function is a core `int32_t S_(typed pointers...)` plus the entry
point `S` written here, in both interfaces at once: the unpacked form (typed
data pointers) under `#ifdef BYOC_UNPACKED_API`, the packed form (ByocValue
argument array of DLTensors, checked against the static types) otherwise.
The build picks the interface with one -D flag, so one source serves both.

Names that come from a model (variables, functions, targets) reach C only
through `sanitize_identifier` / `unique_identifiers`.
"""
from __future__ import annotations

import hashlib
import re
from typing import Iterable, Sequence

from ..ir.types import TensorType

# dtype -> C type of one element. float16 travels as its IEEE binary16 bits (C99 has no half type);
# kernels convert with byoc_f16_to_f32 / byoc_f64_to_f16 (host_kernels/cwriter.py).
C_TYPES = {"float32": "float", "float16": "uint16_t", "float64": "double",
           "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
           "uint8": "uint8_t", "uint16": "uint16_t", "bool": "uint8_t"}

# dtype -> (DLDataType code as C text, bits). bool is TVM's uint1 (one byte per element), as the
# runtime's byoc_dtype_parse("bool") reads it; DLPack 0.6 (Debian's header) has no kDLBool.
DL_DTYPES = {
    "float32": ("kDLFloat", 32),
    "float16": ("kDLFloat", 16),
    "float64": ("kDLFloat", 64),
    "int8": ("kDLInt", 8),
    "int16": ("kDLInt", 16),
    "int32": ("kDLInt", 32),
    "int64": ("kDLInt", 64),
    "uint8": ("kDLUInt", 8),
    "uint16": ("kDLUInt", 16),
    "bool": ("kDLUInt", 1),
}

# Words a generated identifier must not be: C99 keywords, and names the generated code or the
# headers it includes (stdint.h, math.h, string.h, stddef.h, the runtime) already give a meaning.
_RESERVED = frozenset("""
auto break case char const continue default do double else enum extern float for goto if inline int long
register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while
bool true false NULL EOF errno assert main
int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t intptr_t uintptr_t size_t ptrdiff_t
intmax_t uintmax_t wchar_t
INFINITY NAN HUGE_VAL HUGE_VALF
exp expf log logf sqrt sqrtf tanh tanhf pow powf fabs fabsf floor floorf ceil ceilf fmax fmaxf fmin fminf
memcpy memset memmove strlen abs
""".split())

_MAX_LEN = 63  # C99 guarantees 63 significant initial characters of an internal identifier
_VALID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def c_type(dtype: str) -> str:
    """The C element type of `dtype` ("float32" -> "float")."""
    try:
        return C_TYPES[dtype]
    except KeyError:
        raise ValueError(f"no C type for dtype {dtype!r}; supported: {', '.join(C_TYPES)}") from None


def is_identifier(name: str) -> bool:
    """True when `name` can be used as-is as a C identifier in generated code."""
    return (bool(_VALID.match(name)) and name not in _RESERVED and not name.startswith("_")
            and len(name) <= _MAX_LEN)


def sanitize_identifier(name: str) -> str:
    """Any string -> a valid C identifier that is not a keyword or a reserved name.

    Characters outside [A-Za-z0-9_] become "_"; a leading digit or underscore (names
    starting with "_" are reserved for the implementation) gets a "v" prefix; reserved
    words get a "_" suffix; long names are cut and keep a hash of the full name. Not
    injective: pass names that must stay distinct through `unique_identifiers`.
    """
    text = re.sub(r"[^A-Za-z0-9_]", "_", str(name))
    if not text or not (text[0].isalpha()):
        text = "v" + text
    if text in _RESERVED:
        text += "_"
    if len(text) > _MAX_LEN:
        digest = hashlib.sha1(str(name).encode("utf-8", "surrogatepass")).hexdigest()[:8]
        text = text[: _MAX_LEN - 9] + "_" + digest
    return text


def unique_identifiers(names: Iterable[str], taken: Iterable[str] = ()) -> list[str]:
    """Sanitized identifiers for `names`, pairwise distinct and distinct from `taken`.

    Deterministic: the first occurrence keeps its sanitized form, later clashes get
    "_1", "_2", ... (equal input names also get distinct identifiers).
    """
    used = set(taken)
    out: list[str] = []
    for name in names:
        base = sanitize_identifier(name)
        candidate, n = base, 0
        while candidate in used:
            n += 1
            suffix = f"_{n}"
            candidate = base[: _MAX_LEN - len(suffix)] + suffix
        used.add(candidate)
        out.append(candidate)
    return out


def _check_symbol(symbol: str) -> None:
    if not is_identifier(symbol):
        raise ValueError(f"{symbol!r} is not a usable C function name; pass it through "
                         "c_abi.sanitize_identifier first")


def _params(input_types: Sequence[TensorType], output_types: Sequence[TensorType]) -> list[str]:
    params = [f"const {c_type(t.dtype)}* in{i}" for i, t in enumerate(input_types)]
    params += [f"{c_type(t.dtype)}* out{i}" for i, t in enumerate(output_types)]
    return params


WORKSPACE_PARAM = "void* workspace"


def core_signature(core_name: str, input_types: Sequence[TensorType],
                   output_types: Sequence[TensorType], workspace: bool = False) -> str:
    """`int32_t core_name(const float* in0, ..., float* out0)` (no trailing semicolon); with
    workspace=True a last parameter `void* workspace`: the region's scratch, owned by the caller's instance."""
    params = _params(input_types, output_types) + ([WORKSPACE_PARAM] if workspace else [])
    return f"int32_t {core_name}({', '.join(params) or 'void'})"


def entry_points(symbol: str, core_name: str, input_types: Sequence[TensorType],
                 output_types: Sequence[TensorType], workspace: bool = False) -> str:
    """C text of the entry point `symbol` calling `core_name`, in both interfaces.

    Needs <stdint.h> and a prototype or definition of `core_name` before it; the packed
    form includes `byoc/runtime.h` itself (the header guards itself) and checks every
    argument with the runtime's byoc_check_packed_args / byoc_check_dltensor.

    workspace=True (a CSourceArtifact with workspace_bytes > 0): `core_name` takes a last `void* workspace`;
    the unpacked entry point takes it too, the packed one receives it as its resource_handle. The caller
    (the model's instance) owns that memory, so two instances never share a region's scratch.
    """
    _check_symbol(symbol)
    _check_symbol(core_name)
    inputs, outputs = list(input_types), list(output_types)
    tensors = inputs + outputs
    params = _params(inputs, outputs) + ([WORKSPACE_PARAM] if workspace else [])
    names = [f"in{i}" for i in range(len(inputs))] + [f"out{i}" for i in range(len(outputs))]
    names += ["workspace"] if workspace else []
    lines = ["#ifdef BYOC_UNPACKED_API",
             f"int32_t {symbol}({', '.join(params) or 'void'}) {{",
             f"  return {core_name}({', '.join(names)});",
             "}",
             "#else",
             "#include <byoc/runtime.h>",
             _DATA_MACRO.rstrip("\n"),
             f"int32_t {symbol}(const ByocValue* args, const int32_t* type_codes, int32_t num_args,",
             "    void* resource_handle) {"]
    for i, t in enumerate(tensors):
        if t.ndim:
            dims = ", ".join(f"INT64_C({d})" for d in t.shape)
            lines.append(f"  static const int64_t shape{i}[{t.ndim}] = {{{dims}}};")
    n = len(tensors)
    if workspace:
        lines += ["  if (resource_handle == NULL) {",
                  f'    byoc_set_last_error("{symbol}: no workspace (resource_handle is NULL); the model\'s instance '
                  'passes it");',
                  "    return -1;",
                  "  }"]
    else:
        lines.append("  (void)resource_handle;")
    lines += [f'  if (byoc_check_packed_args("{symbol}", type_codes, num_args, {n}) != 0) return -1;']
    if n:
        lines += ["  if (args == NULL) {",
                  f'    byoc_set_last_error("{symbol}: NULL argument array");',
                  "    return -1;",
                  "  }"]
    else:
        lines.append("  (void)args;")
    for i, t in enumerate(tensors):
        code, bits = DL_DTYPES[t.dtype]
        shape = f"shape{i}" if t.ndim else "NULL"
        role = f"input {i}" if i < len(inputs) else f"output {i - len(inputs)}"
        lines.append(f'  if (byoc_check_dltensor((const DLTensor*)args[{i}].v_handle, "{symbol} argument {i} '
                     f'({role})", {t.ndim}, {shape}, byoc_dtype({code}, {bits}, 1)) != 0) return -1;')
    casts = [f"(const {c_type(t.dtype)}*)BYOC_ABI_DATA_(args[{i}])" for i, t in enumerate(inputs)]
    casts += [f"({c_type(t.dtype)}*)BYOC_ABI_DATA_(args[{len(inputs) + i}])" for i, t in enumerate(outputs)]
    casts += ["resource_handle"] if workspace else []
    lines += [f"  return {core_name}({', '.join(casts)});", "}", "#endif"]
    return "\n".join(lines) + "\n"


# The typed data pointer of a checked DLTensor argument; defined once per translation unit.
_DATA_MACRO = """#ifndef BYOC_ABI_DATA_
#define BYOC_ABI_DATA_(value) \\
  ((void*)((char*)((const DLTensor*)(value).v_handle)->data + ((const DLTensor*)(value).v_handle)->byte_offset))
#endif
"""
