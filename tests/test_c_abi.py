"""c_abi: identifiers from hostile model names, C types, and the two entry-point forms
(unpacked typed pointers, packed DLTensor arrays checked against the static types)."""
from __future__ import annotations

import ctypes
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from byoc_compiler import ctext
from byoc_compiler.ir.types import TensorType

from test_host_kernels import (COMPILERS, RUNTIME, WARNINGS, ByocValue, call_packed, call_unpacked, dltensor,
                               last_error, run)

C99_KEYWORDS = set("""auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef union unsigned void
volatile while _Bool _Complex _Imaginary""".split())
IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")

HOSTILE = [
    ("injection", 'x; system("rm -rf /"); //'),
    ("comment-close", "*/"),
    ("comment-open", "/* a"),
    ("keyword-int", "int"),
    ("keyword-return", "return"),
    ("leading-digit", "1abc"),
    ("unicode", "поток_данных"),
    ("emoji", "🙂"),
    ("empty", ""),
    ("underscore-upper", "_Reserved"),
    ("double-underscore", "__x"),
    ("stdint-name", "int32_t"),
    ("libm-name", "expf"),
    ("dots-slashes", "conv1/weight.0:1"),
    ("quote-backslash", 'a"\\b'),
    ("newline", "a\nb"),
    ("nul", "a\0b"),
    ("very-long", "x" * 300),
    ("macro", "#define x"),
]


def valid(name: str) -> bool:
    return bool(IDENTIFIER.match(name)) and name not in C99_KEYWORDS and len(name) <= 63


@pytest.mark.parametrize("name", [h[1] for h in HOSTILE], ids=[h[0] for h in HOSTILE])
def test_sanitize_identifier_gives_a_valid_identifier(name):
    ident = ctext.sanitize_identifier(name)
    assert valid(ident), ident
    assert ctext.is_identifier(ident)
    assert ctext.sanitize_identifier(name) == ident  # deterministic


def test_sanitize_keeps_plain_names_readable():
    assert ctext.sanitize_identifier("conv1_weight") == "conv1_weight"
    assert ctext.sanitize_identifier("conv1/weight") == "conv1_weight"


def test_unique_identifiers_distinct_and_compile(tmp_path):
    names = [h[1] for h in HOSTILE] + ["x", "x", "x_1", "int_", "v1abc", "conv1_weight", "conv1/weight"]
    idents = ctext.unique_identifiers(names, taken=["in0", "out0"])
    assert len(set(idents)) == len(names)
    assert not {"in0", "out0"} & set(idents)
    assert all(valid(i) for i in idents)
    # The compilers agree: every identifier declares a distinct variable in one scope.
    source = tmp_path / "names.c"
    body = "".join(f"  int {i} = {k};\n" for k, i in enumerate(idents))
    uses = " + ".join(idents)
    source.write_text(f"#include <stdint.h>\n#include <math.h>\n#include <string.h>\nint f(void);\n"
                      f"int f(void) {{\n{body}  return {uses};\n}}\n")
    for cc in COMPILERS:
        run([cc, *WARNINGS, "-c", source, "-o", tmp_path / f"names-{cc}.o"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=80), max_size=30))
def test_unique_identifiers_property(names):
    idents = ctext.unique_identifiers(names)
    assert len(idents) == len(names) == len(set(idents))
    assert all(valid(i) for i in idents)
    assert idents == ctext.unique_identifiers(names)


@pytest.mark.parametrize("dtype,ctype", [("float32", "float"), ("int32", "int32_t"), ("int64", "int64_t"),
                                         ("bool", "uint8_t")])
def test_c_type(dtype, ctype):
    assert ctext.c_type(dtype) == ctype


def test_c_type_unknown_dtype_names_the_supported_ones():
    with pytest.raises(ValueError, match="float32"):
        ctext.c_type("bfloat16")


@pytest.mark.parametrize("symbol", ["1x", "int", "a b", "_x"])
def test_entry_points_refuse_invalid_symbols(symbol):
    with pytest.raises(ValueError, match="sanitize_identifier"):
        ctext.entry_points(symbol, "core_", [], [])


# ---- entry points around a hand-written core --------------------------------------------------------

CORES = """
#include <stdint.h>
/* out0 = in0 * in1 (broadcast scalar int), out1 = sum(in0) as a 0-d tensor */
int32_t scale_(const float* in0, const int32_t* in1, float* out0, float* out1);
int32_t scale_(const float* in0, const int32_t* in1, float* out0, float* out1) {
  float total = 0.0f;
  for (int i = 0; i < 6; ++i) { out0[i] = in0[i] * (float)in1[0]; total += in0[i]; }
  out1[0] = total;
  return 0;
}
int32_t fill_(int64_t* out0);
int32_t fill_(int64_t* out0) { out0[0] = 41; out0[1] = 42; return 0; }
"""
SCALE_IN = [TensorType((2, 3), "float32"), TensorType((), "int32")]
SCALE_OUT = [TensorType((2, 3), "float32"), TensorType((), "float32")]
FILL_OUT = [TensorType((2,), "int64")]


@pytest.fixture(scope="module", params=COMPILERS)
def abi_libs(request, tmp_path_factory):
    cc = request.param
    d = tmp_path_factory.mktemp(f"abi-{cc}")
    src = d / "entry.c"
    src.write_text(CORES + ctext.entry_points("scale", "scale_", SCALE_IN, SCALE_OUT)
                   + ctext.entry_points("fill", "fill_", [], FILL_OUT))
    libs = {}
    inc = f"-I{RUNTIME / 'include'}"
    run([cc, "-std=c99", "-fPIC", inc, "-c", RUNTIME / "src" / "runtime.c", "-o", d / "runtime.o"])
    for interface, defines in (("unpacked", ["-DBYOC_UNPACKED_API"]), ("packed", [])):
        obj, lib = d / f"{interface}.o", d / f"lib{interface}.so"
        run([cc, *WARNINGS, "-fPIC", inc, *defines, "-c", src, "-o", obj])
        run([cc, "-shared", obj, d / "runtime.o", "-o", lib])
        libs[interface] = ctypes.CDLL(str(lib))
    return libs


def _scale_args():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    return [x, np.array(3, np.int32), np.zeros((2, 3), np.float32), np.zeros((), np.float32)]


@pytest.mark.parametrize("interface", ["unpacked", "packed"])
def test_entry_point_calls_core(abi_libs, interface):
    lib = abi_libs[interface]
    args = _scale_args()
    call = call_unpacked if interface == "unpacked" else call_packed
    assert call(lib.scale, args) == 0, last_error(lib)
    np.testing.assert_array_equal(args[2], np.arange(6, dtype=np.float32).reshape(2, 3) * 3)
    assert args[3] == 15.0
    out = np.zeros(2, np.int64)
    assert call(lib.fill, [out]) == 0
    np.testing.assert_array_equal(out, [41, 42])


def _packed_with(lib, arrays, edit):
    """Call `scale` packed after `edit(tensors)` changed the DLTensors."""
    keep: list = []
    tensors = [dltensor(a, keep) for a in arrays]
    edit(tensors, keep)
    values = (ByocValue * len(arrays))()
    for i, t in enumerate(tensors):
        values[i].v_handle = ctypes.cast(ctypes.pointer(t), ctypes.c_void_p)
    codes = (ctypes.c_int32 * len(arrays))(*([7] * len(arrays)))
    lib.scale.restype = ctypes.c_int32
    return lib.scale(values, codes, len(arrays), None)


def _set_strides(strides):
    def edit(tensors, keep):
        arr = (ctypes.c_int64 * 2)(*strides)
        keep.append(arr)
        tensors[0].strides = arr
    return edit


def _set(field, value, index=0):
    def edit(tensors, keep):
        setattr(tensors[index], field, value)
    return edit


def _dtype(code, bits):
    def edit(tensors, keep):
        tensors[0].dtype.code, tensors[0].dtype.bits = code, bits
    return edit


def _shape(dims):
    def edit(tensors, keep):
        arr = (ctypes.c_int64 * len(dims))(*dims)
        keep.append(arr)
        tensors[2].shape = arr
    return edit


PACKED_REJECTS = [
    ("wrong-dtype-code", _dtype(0, 32), "dtype"),
    ("wrong-dtype-bits", _dtype(2, 64), "dtype"),
    ("wrong-ndim", _set("ndim", 1), "shape"),
    ("wrong-output-extent", _shape((3, 2)), "shape"),
    ("null-data", _set("data", None), "NULL"),
    ("non-compact-strides", _set_strides((1, 2)), "row-major"),
]


@pytest.mark.parametrize("what,edit,message", PACKED_REJECTS, ids=[p[0] for p in PACKED_REJECTS])
def test_packed_entry_rejects(abi_libs, what, edit, message):
    lib = abi_libs["packed"]
    assert _packed_with(lib, _scale_args(), edit) != 0
    assert message in last_error(lib) and "scale" in last_error(lib)


def test_packed_entry_accepts_compact_strides_and_byte_offset(abi_libs):
    lib = abi_libs["packed"]
    args = _scale_args()
    padded = np.concatenate([np.full(2, -1, np.float32), args[0].ravel()])

    def edit(tensors, keep):
        _set_strides((3, 1))(tensors, keep)
        tensors[0].data = padded.ctypes.data
        tensors[0].byte_offset = 8
    assert _packed_with(lib, args, edit) == 0, last_error(lib)
    np.testing.assert_array_equal(args[2].ravel(), np.arange(6, dtype=np.float32) * 3)


def test_packed_entry_rejects_bad_argument_arrays(abi_libs):
    lib = abi_libs["packed"]
    lib.scale.restype = ctypes.c_int32
    assert lib.scale(None, (ctypes.c_int32 * 4)(7, 7, 7, 7), 4, None) != 0
    assert "NULL" in last_error(lib)
    assert lib.scale((ByocValue * 4)(), None, 4, None) != 0
    assert lib.scale((ByocValue * 2)(), (ctypes.c_int32 * 2)(7, 7), 2, None) != 0
    assert "expected 4 arguments" in last_error(lib)
    assert lib.scale((ByocValue * 4)(), (ctypes.c_int32 * 4)(7, 2, 7, 7), 4, None) != 0
    assert "type code" in last_error(lib)


def test_hostile_name_reaches_c_only_sanitized(tmp_path):
    """A kernel named after a hostile model name compiles and runs under its sanitized symbol."""
    from byoc_compiler.backend.host_kernels import emit_kernel
    from test_host_kernels import Arg, Case, typed_call

    hostile = 'x; system("rm -rf /"); //'
    symbol = ctext.unique_identifiers([hostile])[0]
    code = emit_kernel(typed_call(Case("negative", "negative", (Arg((3,)),))), symbol).code
    assert "system(" not in code and "rm -rf" not in code
    src = tmp_path / "k.c"
    src.write_text(code)
    lib = tmp_path / "libk.so"
    inc = f"-I{RUNTIME / 'include'}"
    run([COMPILERS[0], *WARNINGS, "-fPIC", "-shared", inc, "-DBYOC_UNPACKED_API", src,
         RUNTIME / "src" / "runtime.c", "-o", lib, "-lm"])
    x, out = np.array([1.0, -2.0, 0.5], np.float32), np.zeros(3, np.float32)
    assert call_unpacked(getattr(ctypes.CDLL(str(lib)), symbol), [x, out]) == 0
    np.testing.assert_array_equal(out, -x)
