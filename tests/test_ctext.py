"""ctext, the one writer of C text: every literal reads back bit-exact, names and strings are safe.

Two independent checks of the literals: an exact decimal reader in Python (fractions, IEEE round
to nearest even: what a conforming C compiler does with a decimal constant) run by hypothesis over
every bit pattern, and gcc/clang compiling a table of literals (specials plus seeded random bit
patterns, both the shortest and the bulk formats) into a program that prints the bits it got.
"""
from __future__ import annotations

import math
import re
import subprocess
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from byoc_compiler import ctext
from byoc_compiler.ctext.literals import SHORTEST_UP_TO

import needs

COMPILERS = ("gcc", "clang")

# format -> (numpy float type, matching unsigned int type, C suffix)
FLOATS = {"float32": (np.float32, np.uint32, "f"), "float64": (np.float64, np.uint64, "")}


def _from_bits(bits: int, dtype: str):
    ftype, utype, _ = FLOATS[dtype]
    return np.array([bits], dtype=utype).view(ftype)[0]


def _rounds_to(text: str, x, dtype: str) -> bool:
    """True when a C compiler reads the unsigned decimal `text` as exactly |x| (round to nearest, ties to even)."""
    ftype, utype, _ = FLOATS[dtype]
    x = abs(ftype(x))
    value = Fraction(text)
    exact = Fraction(float(x))
    below = Fraction(float(np.nextafter(x, ftype(0)))) if x else -exact
    top = ftype(np.finfo(ftype).max)
    above = (Fraction(float(np.nextafter(x, ftype(np.inf)))) if x != top
             else Fraction(2) ** (128 if dtype == "float32" else 1024))     # the first value that overflows
    low, high = (below + exact) / 2, (exact + above) / 2
    even = int(np.array([x], dtype=ftype).view(utype)[0]) % 2 == 0 and x != top
    return (low <= value <= high) if even else (low < value < high)


def _check_float(text: str, x, dtype: str) -> None:
    """`text` (either form) denotes exactly the value of x: sign, NaN/infinity, or an exact decimal."""
    negative = bool(np.signbit(x))
    assert text.lstrip("(").startswith("-") == negative, (text, x)
    core = text[2:-1] if text.startswith("(-") else text.lstrip("-")
    if not np.isfinite(x):
        assert core in (("NAN", "((double)NAN)") if np.isnan(x) else ("INFINITY", "((double)INFINITY)")), text
        return
    suffix = FLOATS[dtype][2]
    assert re.fullmatch(r"[0-9]+(\.[0-9]*)?(e[-+]?[0-9]+)?" + suffix, core), text
    assert ("." in core or "e" in core), text       # "1f" is not C
    assert _rounds_to(core[:len(core) - len(suffix)], x, dtype), (text, x)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2 ** 32 - 1))
def test_every_float32_bit_pattern_reads_back(bits):
    x = _from_bits(bits, "float32")
    _check_float(ctext.float_literal(x), x, "float32")
    _check_float(ctext.element_literals(np.array([x]))[0], x, "float32")


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2 ** 64 - 1))
def test_every_float64_bit_pattern_reads_back(bits):
    x = _from_bits(bits, "float64")
    _check_float(ctext.double_literal(x), x, "float64")
    _check_float(ctext.element_literals(np.array([x]))[0], x, "float64")


def test_bulk_float32_arrays_read_back():
    """Arrays longer than SHORTEST_UP_TO take the bulk format (9 digits): exact too."""
    rng = np.random.default_rng(7)
    array = rng.integers(0, 2 ** 32, SHORTEST_UP_TO + 1, dtype=np.uint64).astype(np.uint32).view(np.float32)
    for text, x in zip(ctext.element_literals(array), array):
        _check_float(text, x, "float32")


@pytest.mark.literals
@settings(max_examples=20000, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(0, 2 ** 64 - 1))
def test_many_bit_patterns_read_back(bits32, bits64):
    x, y = _from_bits(bits32, "float32"), _from_bits(bits64, "float64")
    _check_float(ctext.float_literal(x), x, "float32")
    _check_float(ctext.double_literal(y), y, "float64")


def test_negative_numbers_are_parenthesized_only_in_expressions():
    assert ctext.float_literal(-1.5) == "(-1.5f)"
    assert ctext.literal(-0.0, "float32") == "(-0.0f)"
    assert ctext.element_literals(np.array([-1.5, -0.0, -np.inf], dtype=np.float32)) == ["-1.5f", "-0.0f",
                                                                                          "(-INFINITY)"]
    assert ctext.int_literal(-3) == "(-3)" and ctext.element_literals(np.array([-3], dtype=np.int8)) == ["-3"]


INT_CASES = [("int8", -128, "(-128)"), ("int8", 127, "127"), ("int16", -32768, "(-32768)"),
             ("int32", -2 ** 31, "INT32_MIN"), ("int32", 2 ** 31 - 1, "2147483647"),
             ("int64", -2 ** 63, "INT64_MIN"), ("int64", 2 ** 63 - 1, "INT64_C(9223372036854775807)"),
             ("int64", -2 ** 31, "(-2147483648)"), ("int64", -2 ** 40, "(-INT64_C(1099511627776))"),
             ("uint8", 255, "255"), ("uint16", 65535, "65535"), ("bool", True, "1"), ("float16", -0.0, "32768u"),
             ("float16", np.inf, "31744u")]


@pytest.mark.parametrize("dtype, value, text", INT_CASES, ids=[f"{c[0]}-{c[1]}" for c in INT_CASES])
def test_literal_table(dtype, value, text):
    assert ctext.literal(value, dtype) == text


@pytest.mark.parametrize("dtype, value", [("int8", 128), ("uint8", -1), ("uint16", 65536), ("int64", 2 ** 63)])
def test_out_of_range_integers_are_refused(dtype, value):
    with pytest.raises(ValueError, match=f"does not fit in {dtype}"):
        ctext.int_literal(value, dtype)


def test_unknown_dtype_names_the_known_ones():
    with pytest.raises(ValueError, match="bfloat16.*float32"):
        ctext.literal(1.0, "bfloat16")


# ---- the compilers read the same bits --------------------------------------------------------------

def _float_table(dtype: str, n_random: int, seed: int) -> np.ndarray:
    ftype, utype, _ = FLOATS[dtype]
    info = np.finfo(ftype)
    specials = [0.0, -0.0, info.smallest_subnormal, -info.smallest_subnormal, info.tiny, info.tiny - info.smallest_subnormal,
                info.max, -info.max, np.inf, -np.inf, np.nan, -np.nan, 1.0 / 3, 0.1, 1e10, 16777217.0, -2.5]
    rng = np.random.default_rng(seed)
    random = rng.integers(0, np.iinfo(utype).max, size=n_random, dtype=utype, endpoint=True).view(ftype)
    return np.concatenate([np.array(specials, dtype=ftype), random])


INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16"]


def _int_table(dtype: str) -> np.ndarray:
    info = np.iinfo(dtype)
    rng = np.random.default_rng(3)
    return np.concatenate([np.array([info.min, info.max, 0, -1 if info.min else 1], dtype=dtype),
                           rng.integers(info.min, info.max, size=200, dtype=dtype, endpoint=True)])


def _program(tables: dict) -> str:
    """A C program printing the bits of each array, initialized with element_literals and, for floats,
    also with the expression form (and `1 -LIT`, which must not turn into a decrement)."""
    lines = ["#include <inttypes.h>", "#include <math.h>", "#include <stdint.h>", "#include <stdio.h>",
             "#include <string.h>"]
    body = []
    for name, array in tables.items():
        dtype = str(array.dtype)
        lines.append(ctext.const_array(name, array))
        width = {1: 8, 2: 16, 4: 32, 8: 64}[array.dtype.itemsize]
        body.append(f"  for (i = 0; i < {array.size}; ++i) {{ uint{width}_t u = 0; memcpy(&u, &{name}[i], "
                    f"sizeof u); printf(\"{name} %\" PRIu{width} \"\\n\", u); }}")
        if dtype in FLOATS:
            expr = [ctext.literal(v, dtype) for v in array[:64]]
            lines.append(f"static const {ctext.c_type(dtype)} {name}_expr[{len(expr)}] = {{{', '.join(expr)}}};")
            body.append(f"  for (i = 0; i < {len(expr)}; ++i) {{ uint{width}_t u = 0; memcpy(&u, &{name}_expr[i], "
                        f"sizeof u); printf(\"{name}_expr %\" PRIu{width} \"\\n\", u); }}")
            diffs = " ".join(f"d = one -{t}; (void)d;" for t in expr[:16])
            body.append(f"  {{ volatile {ctext.c_type(dtype)} one = 1, d; {diffs} }}")
    lines += ["int main(void) {", "  int i;"] + body + ["  return 0;", "}"]
    return "\n".join(lines) + "\n"


def _bits(array: np.ndarray) -> list[int]:
    utype = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[array.dtype.itemsize]
    return [int(u) for u in np.ascontiguousarray(array).view(utype)]


def _tables(n: int) -> dict:
    tables = {"f32_short": _float_table("float32", min(n, SHORTEST_UP_TO - 20), 1),
              "f32_bulk": _float_table("float32", SHORTEST_UP_TO + n, 2),
              "f64": _float_table("float64", n, 4),
              "f16": np.random.default_rng(5).integers(0, 2 ** 16, n // 2, dtype=np.uint16).view(np.float16),
              "flags": np.array([True, False, True])}
    tables.update({f"i_{dtype}": _int_table(dtype) for dtype in INT_DTYPES})
    return tables


@pytest.mark.parametrize("cc", COMPILERS)
def test_compilers_read_every_literal_bit_exact(tmp_path, cc):
    _compile_and_compare(tmp_path, cc, _tables(600))


@pytest.mark.literals
@pytest.mark.parametrize("cc", COMPILERS)
def test_compilers_read_many_literals_bit_exact(tmp_path, cc):
    """Every float16 bit pattern, every 97th float32 subnormal, 200k random float32 and 100k float64 patterns."""
    tables = _tables(200000)
    tables["f16"] = np.arange(2 ** 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    tables["f32_subnormal"] = np.arange(0, 2 ** 23, 97, dtype=np.uint32).view(np.float32)
    _compile_and_compare(tmp_path, cc, tables)


def _compile_and_compare(tmp_path, cc: str, tables: dict) -> None:
    needs.programs(cc)
    source = tmp_path / "literals.c"
    source.write_text(_program(tables))
    exe = tmp_path / "literals"
    subprocess.run([cc, "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-O1", str(source), "-o", str(exe),
                    "-lm"], check=True, capture_output=True, text=True)
    printed: dict[str, list[int]] = {}
    for line in subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines():
        name, value = line.split()
        printed.setdefault(name, []).append(int(value))
    for name, array in tables.items():
        expected = _bits(array)
        got = printed[name]
        if array.dtype.kind == "f":   # a NaN keeps its sign, not its payload
            for g, e, x in zip(got, expected, array):
                y = np.array([g], dtype=array.dtype.str.replace("f", "u")).view(array.dtype)[0]
                assert (np.isnan(y) and np.signbit(y) == np.signbit(x)) if np.isnan(x) else g == e, (name, x, y)
            if name + "_expr" in printed:
                assert printed[name + "_expr"] == [b for b, x in zip(got[:64], array[:64])]
        else:
            assert got == expected, name


# ---- names, strings, comments ------------------------------------------------------------------------

def _read_c_string(literal: str) -> bytes:
    assert literal[0] == literal[-1] == '"'
    out, body, i = bytearray(), literal[1:-1], 0
    while i < len(body):
        if body[i] == "\\":
            out.append(int(body[i + 1:i + 4], 8))
            i += 4
        else:
            out.append(ord(body[i]))
            i += 1
    return bytes(out)


@settings(max_examples=100, deadline=None)
@given(st.text())
def test_c_string_is_ascii_and_reads_back_as_the_utf8(text):
    literal = ctext.c_string(text)
    assert literal.isascii() and "?" not in literal and "\n" not in literal
    assert _read_c_string(literal) == text.encode("utf-8", "surrogatepass")


def test_c_string_escapes_non_ascii_letters():
    # chr(0xC3) is a letter to Python: it must still be escaped byte by byte, not re-encoded
    assert ctext.c_string("é") == '"\\303\\251"'


@settings(max_examples=100, deadline=None)
@given(st.text())
def test_comment_cannot_be_closed_or_spliced(text):
    body = ctext.comment(text)[3:-3]
    assert "*/" not in body and "/*" not in body and "\\" not in body and "?" not in body
    assert body.isascii() and "\n" not in body


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200), st.text(max_size=20))
def test_region_symbols_are_identifiers_for_any_module_name(mod_name, target):
    from byoc_compiler.transform.partition_graph import external_symbol

    symbol = external_symbol(mod_name, target, 3)
    assert ctext.is_identifier(symbol), symbol
    assert symbol == external_symbol(mod_name, target, 3)


def test_collisions_after_sanitizing_get_numbered_in_order():
    assert ctext.unique_identifiers(["a.b", "a/b", "a_b", "int"]) == ["a_b", "a_b_1", "a_b_2", "int_"]


def test_no_other_module_writes_float_literals():
    """The one-writer rule, checked on the source: no repr()/str() of a float turned into C elsewhere."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    offenders = []
    for path in list((root / "byoc_compiler").rglob("*.py")) + list((root / "targets").rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[:2] == ("byoc_compiler", "ctext") or rel.parts[:2] == ("byoc_compiler", "text"):
            continue            # the writer itself; the Relay text format (not C) has its own tensor literals
        text = path.read_text()
        for pattern in (r'"%\.9g', r"(?<!U)INT64_C\(\{", r"def \w*_literal\(", r"\}f\"", r"\.hex\(\)"):
            if re.search(pattern, text):
                offenders.append(f"{rel}: {pattern}")
    assert not offenders, offenders
