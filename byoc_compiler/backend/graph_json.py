"""graph.json in the layout of TVM's graph executor, written from a lowered Program.

    nodes         inputs ("null", named like main's parameters), then params ("null", p0, p1, ...),
                  then one "tvm_op" per step with attrs {func_name, num_inputs, num_outputs, flatten_data}
    arg_nodes     ids of the "null" nodes
    heads         [node, output index, version] of every model output
    node_row_ptr  prefix sums of outputs per node: entry id = node_row_ptr[node] + index
    attrs         per entry: dltype (list_str), shape (list_shape), storage_id (list_int)

Storage ids (`memory_plan.graph_storage`): inputs and params own one each; intermediates share a
storage id when their lifetimes do not overlap; model outputs are never reused. The C graph executor
allocates exactly this plan (one 64-byte aligned block per storage id of an intermediate, as large as
its largest entry) after checking it.
Attribute values of tvm_op nodes are strings, as TVM writes them.
"""
from __future__ import annotations

import json

from .memory_plan import StoragePlan
from .program import Program


def graph_json(prog: Program, storage: StoragePlan) -> dict:
    """graph.json as a dict, its storage ids from `storage` (memory_plan.graph_storage(prog), which build()
    also sizes the graph executor's workspace by); `graph_text` writes it (build() builds it once and writes
    it twice)."""
    nodes: list[dict] = []
    entry: dict[int, tuple[int, int]] = {}        # tensor id -> (node id, output index)
    for t in prog.inputs + prog.consts:
        entry[t] = (len(nodes), 0)
        nodes.append({"op": "null", "name": prog.tensors[t].name, "inputs": []})
    arg_nodes = list(range(len(nodes)))
    for step in prog.steps:
        nid = len(nodes)
        for i, t in enumerate(step.outputs):
            entry[t] = (nid, i)
        nodes.append({
            "op": "tvm_op",
            "name": step.symbol,
            "attrs": {"func_name": step.symbol, "num_inputs": str(len(step.inputs)),
                      "num_outputs": str(len(step.outputs)), "flatten_data": "0"},
            "inputs": [[*entry[t], 0] for t in step.inputs],
        })
    row_ptr = [0]
    for nid, node in enumerate(nodes):
        row_ptr.append(row_ptr[-1] + (int(node["attrs"]["num_outputs"]) if node["op"] == "tvm_op" else 1))
    by_entry: dict[int, int] = {}
    for t, (nid, i) in entry.items():
        by_entry[row_ptr[nid] + i] = t
    order = [by_entry[e] for e in range(row_ptr[-1])]
    sid = storage.storage_id
    graph = {
        "nodes": nodes,
        "arg_nodes": arg_nodes,
        "heads": [[*entry[t], 0] for t in prog.outputs],
        "attrs": {
            "dltype": ["list_str", [prog.tensors[t].type.dtype for t in order]],
            "shape": ["list_shape", [list(prog.tensors[t].type.shape) for t in order]],
            "storage_id": ["list_int", [sid[t] for t in order]],
        },
        "node_row_ptr": row_ptr,
    }
    return graph


def graph_text(graph: dict, compact: bool = False) -> str:
    """The graph.json text; `compact` drops the whitespace (the copy embedded in C)."""
    return json.dumps(graph, separators=(",", ":")) if compact else json.dumps(graph, indent=2)
