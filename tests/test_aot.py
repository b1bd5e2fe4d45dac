"""AOT: the static arena of every zoo model is within 10% of the lower bound (the largest sum of
simultaneously-live intermediates, computed here from graph.json), offsets never overlap for tensors
alive at the same step, and the planner itself is checked against brute force on random lifetimes."""
import json
import random

import numpy as np
import pytest

from byoc_compiler import zoo
from byoc_compiler.backend.memory_plan import align_up, plan_offsets, plan_storage_ids

from build_cache import built

DTYPE_BYTES = {"float32": 4, "int32": 4, "int64": 8, "bool": 1}


def _peak_live_intermediates(graph: dict) -> int:
    """Max over steps of the bytes of live intermediates (tvm_op outputs that are not model outputs)."""
    nodes, row = graph["nodes"], graph["node_row_ptr"]
    shapes, dtypes = graph["attrs"]["shape"][1], graph["attrs"]["dltype"][1]
    heads = {row[n] + i for n, i, _ in graph["heads"]}
    born, last = {}, {}
    for nid, node in enumerate(nodes):
        if node["op"] != "tvm_op":
            continue
        for src, idx, _ in node["inputs"]:
            e = row[src] + idx
            if e in born:
                last[e] = nid
        for e in range(row[nid], row[nid + 1]):
            if e not in heads:
                born[e] = last[e] = nid
    peak = 0
    for step in range(len(nodes)):
        live = 0
        for e in born:
            if born[e] <= step <= last[e]:
                n = DTYPE_BYTES[dtypes[e]]
                for d in shapes[e]:
                    n *= d
                live += n
        peak = max(peak, live)
    return peak


@pytest.mark.parametrize("name", zoo.names())
def test_arena_within_ten_percent_of_peak_live(name):
    lib = built(name, "gcc", "aot", "packed")
    arena = lib.metadata["workspace_bytes"]
    peak = _peak_live_intermediates(json.loads(lib.graph_json))
    print(f"{name}: arena {arena} bytes, peak live intermediates {peak} bytes")
    assert peak <= arena <= 1.1 * peak + 64


@pytest.mark.parametrize("name", zoo.names())
def test_arena_offsets_do_not_overlap_while_live(name):
    from byoc_compiler.backend import aot

    lib = built(name, "gcc", "aot", "packed")
    prog = lib.program
    plan = aot.plan_arena(prog)
    life = prog.lifetimes()
    items = [(plan.arena.offsets[t], plan.arena.offsets[t] + prog.tensors[t].nbytes, life[t]) for t in plan.arena.offsets]
    for i, (a0, a1, la) in enumerate(items):
        assert a0 % 16 == 0 and a1 <= plan.arena.total_bytes
        for b0, b1, lb in items[i + 1:]:
            if la[0] <= lb[1] and lb[0] <= la[1]:
                assert a1 <= b0 or b1 <= a0


def _random_case(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 30)
    sizes, lives = {}, {}
    for k in range(n):
        start = rng.randint(0, 20)
        sizes[k] = rng.choice([4, 16, 40, 64, 100, 256, 1000])
        lives[k] = (start, start + rng.randint(0, 6))
    return sizes, lives


@pytest.mark.parametrize("seed", range(20), ids=lambda s: f"seed{s}")
def test_plan_offsets_random_lifetimes(seed):
    sizes, lives = _random_case(seed)
    plan = plan_offsets(sizes, lives, alignment=16)
    keys = list(sizes)
    for i, a in enumerate(keys):
        assert plan.offsets[a] % 16 == 0
        assert plan.offsets[a] + sizes[a] <= plan.total_bytes
        for b in keys[i + 1:]:
            if lives[a][0] <= lives[b][1] and lives[b][0] <= lives[a][1]:
                assert (plan.offsets[a] + sizes[a] <= plan.offsets[b] or
                        plan.offsets[b] + sizes[b] <= plan.offsets[a]), (a, b)
    # never worse than giving every tensor its own bytes, never better than the peak
    peak = max(sum(align_up(sizes[k], 16) for k in keys if lives[k][0] <= t <= lives[k][1]) for t in range(30))
    assert peak <= plan.total_bytes <= sum(align_up(s, 16) for s in sizes.values())


@pytest.mark.parametrize("seed", range(10), ids=lambda s: f"seed{s}")
def test_storage_ids_never_shared_while_live(seed):
    sizes, lives = _random_case(seed)
    slot_of, slot_bytes = plan_storage_ids(list(sizes), sizes, lives)
    for a in sizes:
        assert slot_bytes[slot_of[a]] >= sizes[a]
        for b in sizes:
            if a != b and slot_of[a] == slot_of[b]:
                assert lives[a][1] < lives[b][0] or lives[b][1] < lives[a][0]


def test_disjoint_lifetimes_share_bytes():
    plan = plan_offsets({"a": 100, "b": 100, "c": 100}, {"a": (0, 1), "b": (2, 3), "c": (1, 2)}, alignment=16)
    assert plan.offsets["a"] == plan.offsets["b"] and plan.total_bytes == 2 * 112


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
