"""The PyTorch exporter's test models shipped in the onnx wheel (pytorch-converted, pytorch-operator):
every model whose op types byoc imports is upgraded from its old opset, imported, run through the
numpy reference and compared with the outputs it ships with."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

import onnx_pytorch_data as data
from byoc_compiler.frontend import from_onnx
from byoc_compiler.testing.reference import run_reference

MODELS = data.model_dirs()
IN_SCOPE = [d for d in MODELS if data.in_scope(d)]


def test_most_models_are_in_scope():
    assert len(MODELS) >= 100 and len(IN_SCOPE) >= 90, (len(MODELS), len(IN_SCOPE))


@pytest.mark.parametrize("directory", IN_SCOPE, ids=[f"{d.parent.name}/{d.name}" for d in IN_SCOPE])
def test_model_matches_its_shipped_outputs(directory):
    model = onnx.load(str(directory / "model.onnx"))
    mod = from_onnx(model)
    initialized = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in initialized]
    sets = data.data_sets(directory)
    assert sets, f"{directory} has no test data"
    for inputs, outputs in sets:
        with np.errstate(all="ignore"):
            got = run_reference(mod, dict(zip(names, inputs)))
        assert len(got) == len(outputs)
        for g, w in zip(got, outputs):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-5)
