"""The kernel library's Python description checked by the C compiler, not by reading the header's text.

kernels.py and qkernels.py describe the C library for the codegen and the tests: each function's
signature, the enum values, the fields of the parameter structs in declaration order. `check_source()`
is a C11 translation unit that includes the library's headers and states every one of those facts so
that the compiler refuses it where the description and the C disagree:

* every described function is named (an undeclared one is an error), then redeclared with the
  described signature (another signature is "conflicting types for ck_...");
* `_Static_assert` on every enum value, on the header constants the size formulas use (CONSTANTS), and
  on the offset and size of every struct field (laid out by ctypes from the description, as the tests
  and benches call the library) and on each struct's size.

tests/test_ccompiler_kernel_check.py compiles it (`-fsyntax-only`) with gcc and clang and plants
disagreements. The size formulas themselves (workspace bytes) are functions, which no compile-time check
can evaluate: tests/test_ccompiler_kernels.py and test_ccompiler_qnn.py call the C beside the mirror, on
a grid of shapes among others; the constants private to a .c file (ck_gemm.c's CK_N_CHUNK, CK_MIN_TASKS, CK_ROW_TASKS)
are checked only that way.
"""
from __future__ import annotations

import ctypes

from . import kernels, qkernels

# Header macros the Python size formulas use -> the value the formulas assume.
CONSTANTS = {
    "CK_MAX_RANK": kernels.MAX_RANK, "CK_M_QUANTUM": kernels.M_QUANTUM, "CK_N_QUANTUM": kernels.N_QUANTUM,
    "CK_MC": kernels.MC, "CK_KC": kernels.KC, "CK_ALIGN": kernels.ALIGN, "CK_PM_MR": kernels.PM_MR,
    "CK_PM_MAX_PIXELS": kernels.PM_MAX_PIXELS, "CK_PM_MAX_OFFSET_PIXELS": kernels.PM_MAX_OFFSET_PIXELS,
    "CK_PM_REDUCE_PIXELS": kernels.PM_REDUCE_PIXELS,
    "CK_NR_MAX": kernels.NR_MAX, "CK_STEM_MAX_CHANNELS": kernels.STEM_MAX_CHANNELS,
    "CK_QMR": qkernels.QMR, "CK_QNR": qkernels.QNR,
    "CK_QALIGN": qkernels.QALIGN, "CK_QKB": qkernels.QKB, "CK_QN_WIDE": qkernels.QN_WIDE,
}

# C struct -> (its fields in declaration order, the int32_t ones; every other field is int64_t)
STRUCTS = {
    "ck_conv2d_params": (kernels.CONV2D_PARAM_FIELDS, ()),
    "ck_pool2d_params": (kernels.POOL2D_PARAM_FIELDS, kernels.POOL2D_INT32_FIELDS),
    "ck_qparams": (qkernels.QPARAM_FIELDS, qkernels.QPARAM_FIELDS),
}


def struct_ctype(name: str) -> type[ctypes.Structure]:
    """The ctypes layout of struct `name` as STRUCTS describes it."""
    fields, int32 = STRUCTS[name]
    return type(name, (ctypes.Structure,),
                {"_fields_": [(f, ctypes.c_int32 if f in int32 else ctypes.c_int64) for f in fields]})


def _assert(condition: str, message: str) -> str:
    return f'_Static_assert({condition}, "{message}");'


def _struct_checks(name: str) -> list[str]:
    ctype = struct_ctype(name)
    lines = []
    for field in STRUCTS[name][0]:
        member = getattr(ctype, field)
        lines.append(_assert(f"offsetof({name}, {field}) == {member.offset} && "
                             f"sizeof((({name} *)0)->{field}) == {member.size}",
                             f"{name}.{field}: offset {member.offset}, {member.size} bytes in the description"))
    size = ctypes.sizeof(ctype)
    lines.append(_assert(f"sizeof({name}) == {size}", f"{name}: {size} bytes in the description"))
    return lines


def check_source() -> str:
    """A C11 translation unit that compiles only if the description agrees with the headers."""
    lines = ["#include <stddef.h>", "#include <stdint.h>"]
    lines += [f'#include "{h.name}"' for h in kernels.HEADERS]
    lines += ["void ck_description_names_only_declared_functions(void);",
              "void ck_description_names_only_declared_functions(void) {"]
    lines += [f"  (void)&{f.name};" for f in kernels.FUNCTIONS.values()]
    lines += ["}"]
    lines += [f.declaration() for f in kernels.FUNCTIONS.values()]
    lines += [_assert(f"{name} == {value}", f"{name} is {value} in the description")
              for name, value in kernels.ENUM_VALUES.items()]
    lines += [_assert(f"{name} == {value}", f"{name} is {value} in the description")
              for name, value in CONSTANTS.items()]
    for name in STRUCTS:
        lines += _struct_checks(name)
    return "\n".join(lines) + "\n"
