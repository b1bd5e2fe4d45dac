"""AOT: constants main hands to host kernels come back exact. (The arena's plan: tests/test_memory_plan.py.)"""
import numpy as np
import pytest


# Constants main hands to host kernels are C arrays in AOT: the extremes of each dtype must come back
# bit for bit (NaN, infinities, -0.0, the smallest denormal, INT32_MIN, INT64_MIN need care in C).
EXTREME_CONSTANTS = [
    ("float32", [np.nan, np.inf, -np.inf, -0.0, 1e-45, -3.4028235e38, 0.1]),
    ("int32", [-2 ** 31, 2 ** 31 - 1, -5, 0]),
    ("int64", [-2 ** 63, 2 ** 63 - 1, 2 ** 40, -5]),
]


@pytest.mark.parametrize("dtype,values", EXTREME_CONSTANTS, ids=[c[0] for c in EXTREME_CONSTANTS])
def test_constants_of_extreme_values_are_exact(dtype, values):
    from byoc_compiler import build, op
    from byoc_compiler.ir import Constant, Function, IRModule, TensorType, Tuple, Var

    const = np.array(values, dtype=dtype)
    x = Var("x", TensorType((1,), dtype))
    mod = IRModule.from_expr(Function([x], op.concatenate(Tuple([x, Constant(const)]), axis=0)))
    got = build(mod, executor="aot", interface="unpacked").run_runner([np.zeros(1, dtype)])[0]
    # concatenate copies: everything after x is the constant, compared bit for bit
    assert got[1:].astype(got.dtype.newbyteorder("=")).tobytes() == const.tobytes()
