"""The C calling convention every generated function shares (docs/runtime-abi.md).

A generated function is a core `int32_t S_(typed pointers...)` plus the entry
point `S` written here, in both interfaces at once: the unpacked form (typed
data pointers) under `#ifdef BYOC_UNPACKED_API`, the packed form (ByocValue
argument array of DLTensors, checked against the static types) otherwise.
The build picks the interface with one -D flag, so one source serves both.

Names that come from a model (variables, functions, targets) reach C only
through `names.sanitize_identifier` / `names.unique_identifiers`.
"""
from __future__ import annotations

from typing import Protocol, Sequence

from .arrays import int64_array
from .dtypes import DL_DTYPES, c_type
from .names import check_identifier



class TensorType(Protocol):
    """What the writers read of a tensor type (ir.types.TensorType has it; ctext sits below the IR)."""

    dtype: str
    shape: tuple
    ndim: int

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
    check_identifier(symbol)
    check_identifier(core_name)
    inputs, outputs = list(input_types), list(output_types)
    return "\n".join(["#ifdef BYOC_UNPACKED_API", *_unpacked_entry(symbol, core_name, inputs, outputs, workspace),
                      "#else", *_packed_entry(symbol, core_name, inputs, outputs, workspace), "#endif"]) + "\n"


def _unpacked_entry(symbol: str, core_name: str, inputs, outputs, workspace: bool) -> list[str]:
    params = _params(inputs, outputs) + ([WORKSPACE_PARAM] if workspace else [])
    names = [f"in{i}" for i in range(len(inputs))] + [f"out{i}" for i in range(len(outputs))]
    names += ["workspace"] if workspace else []
    return [f"int32_t {symbol}({', '.join(params) or 'void'}) {{",
            f"  return {core_name}({', '.join(names)});",
            "}"]


def _packed_entry(symbol: str, core_name: str, inputs, outputs, workspace: bool) -> list[str]:
    """The packed entry point: every argument checked against the static types, then the core called."""
    tensors = inputs + outputs
    lines = ["#include <byoc/runtime.h>",
             _DATA_MACRO.rstrip("\n"),
             f"int32_t {symbol}(const ByocValue* args, const int32_t* type_codes, int32_t num_args,",
             "    void* resource_handle) {"]
    lines += ["  " + int64_array(f"shape{i}", t.shape) for i, t in enumerate(tensors) if t.ndim]
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
    return lines + [f"  return {core_name}({', '.join(casts)});", "}"]


# The typed data pointer of a checked DLTensor argument; defined once per translation unit.
_DATA_MACRO = """#ifndef BYOC_ABI_DATA_
#define BYOC_ABI_DATA_(value) \\
  ((void*)((char*)((const DLTensor*)(value).v_handle)->data + ((const DLTensor*)(value).v_handle)->byte_offset))
#endif
"""
