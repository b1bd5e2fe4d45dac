"""ccompiler's Python description of its kernel library agrees with the C, as the C compiler sees it
(targets/ccompiler/kernel_check.py), and a planted disagreement of each kind fails to compile naming it."""
from __future__ import annotations

import dataclasses
import subprocess

import pytest

import needs

from byoc_compiler.contrib.ccompiler import kernel_check, kernels as K, qkernels as Q
from byoc_compiler.vendor import runtime_include_flags


def compile_check(cc: str) -> subprocess.CompletedProcess:
    needs.programs(cc)
    return subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", f"-I{K.INCLUDE_DIR}",
                           *runtime_include_flags(), "-x", "c", "-"],
                          input=kernel_check.check_source(), capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("cc", needs.compilers())
def test_the_description_compiles_against_the_headers(cc):
    result = compile_check(cc)
    assert result.returncode == 0, result.stderr


def test_the_check_states_every_fact():
    """Every described function, enum value and struct field appears in the unit (none silently left out)."""
    text = kernel_check.check_source()
    assert all(f"(void)&{name};" in text and f"{name}(" in text for name in K.FUNCTIONS)
    assert all(f"_Static_assert({name} == {v}," in text
               for name, v in {**K.ENUM_VALUES, **kernel_check.CONSTANTS}.items())
    fields = [(s, f) for s, (names, _) in kernel_check.STRUCTS.items() for f in names]
    assert all(f"offsetof({s}, {f})" in text for s, f in fields) and len(fields) > 30


def _retyped(name, index, ctype):
    fn = K.FUNCTIONS[name]
    params = list(fn.params)
    params[index] = (ctype, params[index][1])
    return dataclasses.replace(fn, params=tuple(params))


def _renamed(name, new):
    return dataclasses.replace(K.FUNCTIONS[name], name=new)


# what to plant (monkeypatch target, key, value), what the compiler says
PLANTED = [
    pytest.param((K.FUNCTIONS, "ck_dense", lambda: _retyped("ck_dense", 0, "int32_t")), "ck_dense",
                 id="parameter-type"),
    pytest.param((K.FUNCTIONS, "ck_qconv2d", lambda: _retyped("ck_qconv2d", 1, "const uint8_t *")), "ck_qconv2d",
                 id="qnn-parameter-type"),
    pytest.param((K.FUNCTIONS, "ck_unary", lambda: dataclasses.replace(K.FUNCTIONS["ck_unary"], returns="int64_t")),
                 "ck_unary", id="return-type"),
    pytest.param((K.FUNCTIONS, "ck_softmax_rowz", lambda: _renamed("ck_softmax_rows", "ck_softmax_rowz")),
                 "ck_softmax_rowz", id="function-not-in-the-library"),
    pytest.param((K.ENUM_VALUES, "CK_RELU", lambda: K.ENUM_VALUES["CK_RELU"] + 1), "CK_RELU is", id="enum-value"),
    pytest.param((kernel_check.CONSTANTS, "CK_KC", lambda: 128), "CK_KC is 128", id="formula-constant"),
    pytest.param((kernel_check.STRUCTS, "ck_conv2d_params",
                  lambda: (K.CONV2D_PARAM_FIELDS[:7] + ("stride_w", "stride_h") + K.CONV2D_PARAM_FIELDS[9:], ())),
                 "ck_conv2d_params.stride_w", id="struct-field-order"),
    pytest.param((kernel_check.STRUCTS, "ck_pool2d_params", lambda: (K.POOL2D_PARAM_FIELDS, ())),
                 "ck_pool2d_params.ceil_mode", id="struct-field-type"),
    pytest.param((kernel_check.STRUCTS, "ck_qparams", lambda: (Q.QPARAM_FIELDS[:-1], Q.QPARAM_FIELDS)),
                 "ck_qparams: 24 bytes", id="struct-field-missing"),
]


@pytest.mark.parametrize("plant, message", PLANTED)
def test_a_planted_disagreement_does_not_compile(monkeypatch, plant, message):
    table, key, value = plant
    monkeypatch.setitem(table, key, value())
    result = compile_check("gcc")
    assert result.returncode != 0
    assert message in result.stderr, result.stderr
