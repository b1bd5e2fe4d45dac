"""A BERT-tiny-like transformer encoder (Devlin et al. 2019; the 2-layer, 128-wide "tiny" size).

Token embedding (Gather) + position embedding, LayerNormalization; per layer: self-attention
(Q, K, V projections as MatMul + Add, heads split with Reshape/Transpose, scores = Q K^T /
sqrt(head size) by batched MatMul, Softmax on the last axis, context = scores V by batched MatMul,
output projection), residual + LayerNormalization, a Gelu MLP (4x wide), residual +
LayerNormalization. Output: the last hidden states (1, sequence, hidden). Opset 20 (Gelu).
Weights are drawn with std 1/sqrt(fan-in); LayerNormalization keeps every layer's scale.
"""
from __future__ import annotations

import numpy as np

OPSET = 20


class _Builder:
    """Nodes and initializers of the graph, named `<prefix><count>`, weights drawn from one generator."""

    def __init__(self, seed: int, hidden: int):
        self.rng = np.random.default_rng(seed)
        self.hidden = hidden
        self.nodes, self.inits, self.count = [], {}, {}

    def name(self, prefix):
        self.count[prefix] = self.count.get(prefix, 0) + 1
        return f"{prefix}{self.count[prefix]}"

    def const(self, prefix, value):
        key = self.name(prefix)
        self.inits[key] = np.ascontiguousarray(value)
        return key

    def weight(self, shape, fan_in):
        return (self.rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)

    def node(self, op, inputs, prefix, **attrs):
        from onnx import helper   # onnx loads on first use: importing the zoo stays fast

        out = self.name(prefix)
        self.nodes.append(helper.make_node(op, list(inputs), [out], name=out, **attrs))
        return out

    def linear(self, x, k, n):
        return self.node("Add", [self.node("MatMul", [x, self.const("w", self.weight((k, n), k))], "matmul"),
                                 self.const("b", (self.rng.standard_normal(n) * 0.02).astype(np.float32))], "bias")

    def layer_norm(self, x):
        gamma = self.const("ln_g", self.rng.uniform(0.8, 1.2, self.hidden).astype(np.float32))
        beta = self.const("ln_b", (self.rng.standard_normal(self.hidden) * 0.05).astype(np.float32))
        return self.node("LayerNormalization", [x, gamma, beta], "ln", axis=-1, epsilon=1e-12)


def _self_attention(b: _Builder, h: str, split: str, merge: str, scale: str) -> str:
    """softmax(Q K^T / sqrt(head size)) V per head, heads merged back and projected."""
    def heads_of(x, perm):
        return b.node("Transpose", [b.node("Reshape", [x, split], "split")], "heads", perm=perm)
    q = heads_of(b.linear(h, b.hidden, b.hidden), [0, 2, 1, 3])          # (1, heads, seq, head)
    k = heads_of(b.linear(h, b.hidden, b.hidden), [0, 2, 3, 1])          # (1, heads, head, seq)
    v = heads_of(b.linear(h, b.hidden, b.hidden), [0, 2, 1, 3])
    scores = b.node("Mul", [b.node("MatMul", [q, k], "scores"), scale], "scaled")
    probs = b.node("Softmax", [scores], "softmax", axis=-1)
    context = b.node("MatMul", [probs, v], "context")
    merged = b.node("Reshape", [b.node("Transpose", [context], "unheads", perm=[0, 2, 1, 3]), merge], "merge")
    return b.linear(merged, b.hidden, b.hidden)


def bert_tiny(layers: int = 2, hidden: int = 128, heads: int = 2, sequence: int = 128, vocab: int = 1024,
              seed: int = 11):
    """The encoder as an onnx.ModelProto: input `input_ids` (1, sequence) int64, output `hidden_states`."""
    import onnx   # loads on first use: importing the zoo stays fast
    from onnx import helper, numpy_helper

    b = _Builder(seed, hidden)
    head = hidden // heads
    split = b.const("shape", np.array([1, sequence, heads, head], np.int64))
    merge = b.const("shape", np.array([1, sequence, hidden], np.int64))
    scale = b.const("scale", np.array(1.0 / np.sqrt(head), np.float32))

    words = b.node("Gather", [b.const("word_emb", b.weight((vocab, hidden), 1)), "input_ids"], "embed", axis=0)
    h = b.layer_norm(b.node("Add", [words, b.const("pos_emb", b.weight((1, sequence, hidden), 1))], "embed_pos"))
    for _ in range(layers):
        h = b.layer_norm(b.node("Add", [h, _self_attention(b, h, split, merge, scale)], "residual"))
        mlp = b.linear(b.node("Gelu", [b.linear(h, hidden, 4 * hidden)], "gelu"), 4 * hidden, hidden)
        h = b.layer_norm(b.node("Add", [h, mlp], "residual"))
    b.nodes[-1].output[0] = "hidden_states"
    graph = helper.make_graph(
        b.nodes, f"bert_tiny_l{layers}_h{hidden}_s{sequence}",
        [helper.make_tensor_value_info("input_ids", onnx.TensorProto.INT64, (1, sequence))],
        [helper.make_tensor_value_info("hidden_states", onnx.TensorProto.FLOAT, (1, sequence, hidden))],
        [numpy_helper.from_array(v, k) for k, v in b.inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="byoc_compiler.zoo")
    model.ir_version = min(model.ir_version, 9)
    onnx.checker.check_model(model)
    return model
