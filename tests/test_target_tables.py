"""Each target's parallel tables agree: every op and pattern it declares has a codegen rule, and every rule is
reachable from a declaration. Without this, a new op added to one table and forgotten in another fails only
when a model happens to use it."""
import re

import pytest

from byoc_compiler.pattern.matcher import op_names

from byoc_compiler.contrib import ccompiler, examplejson
from byoc_compiler.contrib.ccompiler import fusions as cc_fusions
from byoc_compiler.contrib.ccompiler import prepack as cc_prepack
from byoc_compiler.contrib.ccompiler import rules as cc_rules
from byoc_compiler.contrib.ccompiler import rules_qnn as cc_rules_qnn
from byoc_compiler.contrib.examplejson import codegen as ej_codegen

# ccompiler rules for steps its codegen makes itself, not Relay ops: each names the op it stands in for.
NOT_OPS = {
    "copy": None,                      # region outputs that are inputs, constants or repeated values
    "conv2d_prepacked": "nn.conv2d",   # nn.conv2d whose constant weight was packed at codegen time
    "conv2d_prepacked_add": "nn.conv2d",  # conv2d_prepacked with a residual add (+ relu) fused (fuse_residual.py)
    "conv2d_winograd": "nn.conv2d",    # a stride-1 3x3 nn.conv2d on its Winograd-transformed weight (prepack.py)
    "conv2d_winograd_add": "nn.conv2d",  # conv2d_winograd with a residual add (+ relu) fused (fuse_residual.py)
    "qnn_conv2d_add": "qnn.add",       # the int8 conv chain with the residual qnn.add after it (fuse_qresidual.py)
    "dense_prepacked": "nn.dense",     # the same for a constant dense weight (prepack.py), and matmul's B
    "matmul_prepacked": "nn.matmul",
    "batch_matmul_prepacked": "nn.batch_matmul",
}


def _ccompiler_routes() -> set[str]:
    return set(cc_rules.RULES) | set(cc_rules.VIEWS)


def _ccompiler_fused_ops() -> set[str]:
    return {fusion.op for fusion in cc_fusions.FUSIONS.values()} | set(cc_rules_qnn.COMPOSITES.values())


def _ccompiler_composites() -> set[str]:
    """Composites the codegen lowers: float fusions and the int8 chains (rules_qnn.py)."""
    return set(cc_fusions.FUSIONS) | set(cc_rules_qnn.COMPOSITES)


def _ej_runtime_ops() -> set[str]:
    text = (ej_codegen.RUNTIME_DIR / "ej_ops.c").read_text()
    return set(re.findall(r'^\s*\{"([a-z_.0-9]+)", \d+,', text, flags=re.M))


AGREEMENTS = [
    pytest.param(lambda: set(ccompiler.target.ops) - _ccompiler_routes(), id="ccompiler-op-without-rule"),
    pytest.param(lambda: _ccompiler_routes() - set(NOT_OPS) - set(ccompiler.target.ops) - _ccompiler_fused_ops(),
                 id="ccompiler-rule-unreachable"),
    pytest.param(lambda: {step for step, op in NOT_OPS.items()
                          if step not in cc_rules.RULES or (op is not None and op not in ccompiler.target.ops)},
                 id="ccompiler-codegen-step-stale"),
    pytest.param(lambda: {p.composite for p in ccompiler.target.patterns} - _ccompiler_composites(),
                 id="ccompiler-pattern-without-fusion"),
    pytest.param(lambda: _ccompiler_composites() - {p.composite for p in ccompiler.target.patterns},
                 id="ccompiler-fusion-without-pattern"),
    pytest.param(lambda: set(cc_rules_qnn.COMPOSITES.values()) - set(cc_rules.RULES),
                 id="ccompiler-qnn-chain-without-rule"),
    pytest.param(lambda: {p.composite for p in ccompiler.target.patterns
                          if p.composite in cc_fusions.FUSIONS
                          and op_names(p.pattern) != set(cc_fusions.FUSIONS[p.composite].ops)},
                 id="ccompiler-fusion-ops-differ-from-pattern"),
    pytest.param(lambda: {f.op for f in cc_fusions.FUSIONS.values()} - set(cc_rules.RULES),
                 id="ccompiler-fusion-emitted-by-missing-rule"),
    pytest.param(lambda: set(cc_rules.PASS_THROUGH) - set(cc_rules.RULES), id="ccompiler-pass-through-without-rule"),
    pytest.param(lambda: {op for op, p in cc_prepack.PREPACK.items()
                          if op not in cc_rules.RULES or p.op not in cc_rules.RULES or NOT_OPS.get(p.op) != op},
                 id="ccompiler-prepack-without-rule"),
    pytest.param(lambda: set(examplejson.target.ops) ^ set(ej_codegen.ATTRS), id="examplejson-ops-vs-attrs"),
    pytest.param(lambda: set(ej_codegen.ATTRS) ^ _ej_runtime_ops(), id="examplejson-attrs-vs-c-runtime"),
]


@pytest.mark.parametrize("disagreement", AGREEMENTS)
def test_target_tables_agree(disagreement):
    assert disagreement() == set()


def test_the_c_runtime_table_is_read():
    """The C-side op list is parsed from ej_ops.c: an empty parse would make the agreement vacuous."""
    assert {"add", "nn.conv2d", "nn.softmax"} <= _ej_runtime_ops()
