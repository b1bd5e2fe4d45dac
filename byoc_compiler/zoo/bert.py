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


def bert_tiny(layers: int = 2, hidden: int = 128, heads: int = 2, sequence: int = 128, vocab: int = 1024,
              seed: int = 11):
    """The encoder as an onnx.ModelProto: input `input_ids` (1, sequence) int64, output `hidden_states`."""
    import onnx
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes, inits = [], {}
    count = {}

    def name(prefix):
        count[prefix] = count.get(prefix, 0) + 1
        return f"{prefix}{count[prefix]}"

    def const(prefix, value):
        key = name(prefix)
        inits[key] = np.ascontiguousarray(value)
        return key

    def weight(shape, fan_in):
        return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)

    def node(op, inputs, prefix, **attrs):
        out = name(prefix)
        nodes.append(helper.make_node(op, list(inputs), [out], name=out, **attrs))
        return out

    def linear(x, k, n):
        return node("Add", [node("MatMul", [x, const("w", weight((k, n), k))], "matmul"),
                            const("b", (rng.standard_normal(n) * 0.02).astype(np.float32))], "bias")

    def layer_norm(x):
        gamma = const("ln_g", rng.uniform(0.8, 1.2, hidden).astype(np.float32))
        beta = const("ln_b", (rng.standard_normal(hidden) * 0.05).astype(np.float32))
        return node("LayerNormalization", [x, gamma, beta], "ln", axis=-1, epsilon=1e-12)

    head = hidden // heads
    split = const("shape", np.array([1, sequence, heads, head], np.int64))
    merge = const("shape", np.array([1, sequence, hidden], np.int64))
    scale = const("scale", np.array(1.0 / np.sqrt(head), np.float32))

    words = node("Gather", [const("word_emb", weight((vocab, hidden), 1)), "input_ids"], "embed", axis=0)
    h = layer_norm(node("Add", [words, const("pos_emb", weight((1, sequence, hidden), 1))], "embed_pos"))
    for _ in range(layers):
        def heads_of(x, perm):
            return node("Transpose", [node("Reshape", [x, split], "split")], "heads", perm=perm)
        q = heads_of(linear(h, hidden, hidden), [0, 2, 1, 3])          # (1, heads, seq, head)
        k = heads_of(linear(h, hidden, hidden), [0, 2, 3, 1])          # (1, heads, head, seq)
        v = heads_of(linear(h, hidden, hidden), [0, 2, 1, 3])
        scores = node("Mul", [node("MatMul", [q, k], "scores"), scale], "scaled")
        probs = node("Softmax", [scores], "softmax", axis=-1)
        context = node("MatMul", [probs, v], "context")
        merged = node("Reshape", [node("Transpose", [context], "unheads", perm=[0, 2, 1, 3]), merge], "merge")
        h = layer_norm(node("Add", [h, linear(merged, hidden, hidden)], "residual"))
        mlp = linear(node("Gelu", [linear(h, hidden, 4 * hidden)], "gelu"), 4 * hidden, hidden)
        h = layer_norm(node("Add", [h, mlp], "residual"))
    nodes[-1].output[0] = "hidden_states"
    graph = helper.make_graph(
        nodes, f"bert_tiny_l{layers}_h{hidden}_s{sequence}",
        [helper.make_tensor_value_info("input_ids", onnx.TensorProto.INT64, (1, sequence))],
        [helper.make_tensor_value_info("hidden_states", onnx.TensorProto.FLOAT, (1, sequence, hidden))],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="byoc_compiler.zoo")
    model.ir_version = min(model.ir_version, 9)
    onnx.checker.check_model(model)
    return model
