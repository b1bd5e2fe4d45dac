"""The TFLite importer's refusals: one clear message per unsupported operator, one per model kind byoc does
not compute, and a TFLiteImportError (never another exception) for corrupt files."""
from __future__ import annotations

import numpy as np
import pytest

import tflite_models as tm
from byoc_compiler.errors import ByocError
from byoc_compiler.frontend.tflite import TFLiteImportError, TFLiteUnsupportedError, from_tflite
from byoc_compiler.frontend.tflite.writer import TFLiteWriter


def _unsupported_pair() -> bytes:
    w = TFLiteWriter()
    x = w.tensor("x", (1, 4), "float32")
    a = w.tensor("a", (1, 4), "float32")
    b = w.tensor("b", (1, 4), "float32")
    y = w.tensor("y", (1, 4), "float32")
    w.op("FLOOR", [x], [a])
    w.op("RELU", [x], [b])
    w.op("CEIL", [b], [y])
    return w.finish([x], [y])


def test_every_unsupported_operator_is_named_with_its_index():
    with pytest.raises(TFLiteUnsupportedError) as info:
        from_tflite(_unsupported_pair())
    text = str(info.value)
    assert "2 operators cannot be imported" in text
    assert "operator 0 (FLOOR, version 1): operator FLOOR is not supported" in text
    assert "operator 2 (CEIL, version 1)" in text
    assert [p.index for p in info.value.problems] == [0, 2]


def _fc_model(x_dtype="float32", w_dtype="int8", sparse=False) -> bytes:
    w = TFLiteWriter()
    q = dict(scale=0.1, zero_point=0) if x_dtype != "float32" else {}
    x = w.tensor("x", (1, 4), x_dtype, **q)
    k = w.tensor("k", (2, 4), w_dtype, data=np.ones((2, 4)), scale=0.05 if w_dtype == "int8" else None,
                 sparse=sparse)
    y = w.tensor("y", (1, 2), x_dtype, **q)
    w.op("FULLY_CONNECTED", [x, k, -1], [y])
    return w.finish([x], [y])


def _float16_weights() -> bytes:
    w = TFLiteWriter()
    x = w.tensor("x", (1, 4), "float32")
    k16 = w.tensor("k16", (2, 4), "float16", data=np.ones((2, 4)))
    k = w.tensor("k", (2, 4), "float32")
    y = w.tensor("y", (1, 2), "float32")
    w.op("DEQUANTIZE", [k16], [k])
    w.op("FULLY_CONNECTED", [x, k, -1], [y])
    return w.finish([x], [y])


def _two_subgraphs() -> bytes:
    w = TFLiteWriter()
    x = w.tensor("x", (1, 4), "float32")
    y = w.tensor("y", (1, 4), "float32")
    w.op("RELU", [x], [y])
    return w.finish([x], [y], extra_subgraphs=1)


REFUSALS = {
    "dynamic_range": (lambda: _fc_model("float32", "int8"), "dynamic-range quantized model"),
    "float16_weights": (_float16_weights, "float16 weights dequantized to float32"),
    "sparse": (lambda: _fc_model("float32", "float32", sparse=True), "is sparse"),
    "two_subgraphs": (_two_subgraphs, "2 subgraphs"),
    "not_tflite": (lambda: b"\0" * 64, "not a TFLite model"),
    "too_short": (lambda: b"TFL3", "too short"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_model_kinds_get_one_clear_refusal(case):
    make, words = REFUSALS[case]
    with pytest.raises(TFLiteImportError) as info:
        from_tflite(make())
    assert words in str(info.value)
    assert "\n" not in str(info.value)     # one sentence, not a list


def test_missing_file_is_named(tmp_path):
    with pytest.raises(TFLiteImportError, match="nope.tflite: cannot read"):
        from_tflite(str(tmp_path / "nope.tflite"))


def test_corrupt_files_raise_import_errors_only():
    """Truncations and byte flips of a real model: an IRModule or a TFLiteImportError, nothing else."""
    data = tm.small_cnn(True)
    rng = np.random.default_rng(0)
    cases = [data[:n] for n in range(0, len(data), max(1, len(data) // 40))]
    for _ in range(150):
        b = bytearray(data)
        for pos in rng.integers(0, len(b), 4):
            b[pos] = int(rng.integers(0, 256))
        cases.append(bytes(b))
    for case in cases:
        try:
            from_tflite(case)
        except ByocError:
            pass
