"""Every zoo model, and random graphs: partitioning keeps the outputs and every region convex.

The oracle is the reference interpreter on the unpartitioned model; the
convexity check is a brute-force reachability search, independent of the
merge algorithm's bookkeeping.
"""
import random

import numpy as np
import pytest

from byoc_compiler import op, zoo
from byoc_compiler.target import get_target
from byoc_compiler.ir import Call, Function, IRModule, Tuple, TensorType, Var, post_order
from byoc_compiler.text import parse
from byoc_compiler.partition import partition_for, summarize
from byoc_compiler.transform.annotations import graph_nodes, inputs_of, read
from byoc_compiler.transform import annotate_target, merge_compiler_regions

from partition_helpers import assert_same_outputs, registered

TARGET_SETS = [["ccompiler"], ["examplejson"], ["ccompiler", "examplejson"], ["examplejson", "ccompiler"]]


@pytest.mark.parametrize("targets", TARGET_SETS, ids=["+".join(t) for t in TARGET_SETS])
@pytest.mark.parametrize("name", zoo.names())
def test_zoo_model_partitions_and_keeps_outputs(name, targets):
    before = zoo.get(name)
    after = partition_for(targets, before)
    assert_same_outputs(before, after, zoo.inputs(name), rtol=1e-5, atol=1e-5)
    for fname, func in after.items():
        if "Compiler" not in func.attrs:
            continue
        target = get_target(func.attrs["Compiler"])
        assert target.name in targets
        for node in post_order(func.body):
            if isinstance(node, Call) and isinstance(node.op, Function):
                assert node.op.attrs["Composite"].startswith(target.name + ".")
            elif isinstance(node, Call):
                assert node.op.name in target.ops, f"{fname} holds {node.op.name}, which {target.name} does not take"
    report = summarize(after)
    assert report.targets[: len(targets)] == targets
    # The printed partitioned module reads back and runs the same (external functions and attrs included).
    reread = parse(after.astext())
    assert list(reread) == list(after)
    assert_same_outputs(before, reread, zoo.inputs(name), rtol=1e-5, atol=1e-5)


# --- random graphs ----------------------------------------------------------------------------------

UNARY = ["tanh", "nn.relu", "exp", "nn.softmax", "sigmoid"]
BINARY = ["add", "multiply", "subtract"]


def random_graph(seed: int, size: int) -> IRModule:
    rng = random.Random(seed)
    x = Var("x", TensorType((1, 4)))
    values = [x]
    used = set()
    for _ in range(size):
        window = values[-6:]
        if rng.random() < 0.4:
            name = rng.choice(UNARY)
            a = rng.choice(window)
            used.add(id(a))
            call = getattr(op.nn, name[3:]) (a) if name.startswith("nn.") else getattr(op, name)(a)
            if name == "exp":
                call = op.exp(op.tanh(a))  # keep values bounded
        else:
            a, b = rng.choice(window), rng.choice(values)
            used.update((id(a), id(b)))
            call = getattr(op, rng.choice(BINARY))(op.tanh(a), b)
        values.append(call)
    sinks = [v for v in values[1:] if id(v) not in used]
    return IRModule.from_expr(Tuple(sinks) if len(sinks) > 1 else sinks[0])


def regions_and_edges(mod):
    main = mod["main"]
    nodes = graph_nodes(main)
    ann = read(main, nodes)
    index = {id(n): i for i, n in enumerate(nodes)}
    succ = [[] for _ in nodes]
    for i, n in enumerate(nodes):
        for c in inputs_of(n):
            succ[index[id(c)]].append(i)
    return ann, succ


def is_convex(members: set, succ) -> bool:
    """No path leaves `members` and comes back (brute force)."""
    outside = [s for m in members for s in succ[m] if s not in members]
    seen = set(outside)
    stack = list(outside)
    while stack:
        v = stack.pop()
        for s in succ[v]:
            if s in members:
                return False
            if s not in seen:
                seen.add(s)
                stack.append(s)
    return True


def contracted_is_acyclic(regions: dict, succ) -> bool:
    """With every region contracted to one node, the graph has no cycle (brute force DFS)."""
    owner = {m: ("r", r) for r, ms in regions.items() for m in ms}
    unit = lambda v: owner.get(v, ("n", v))
    edges = {}
    for v, outs in enumerate(succ):
        for s in outs:
            if unit(v) != unit(s):
                edges.setdefault(unit(v), set()).add(unit(s))
    colour = {}
    for start in list(edges):
        if start in colour:
            continue
        stack = [(start, iter(sorted(edges.get(start, ()))))]
        colour[start] = 1
        while stack:
            u, it = stack[-1]
            for w in it:
                if colour.get(w) == 1:
                    return False
                if w not in colour:
                    colour[w] = 1
                    stack.append((w, iter(sorted(edges.get(w, ())))))
                    break
            else:
                colour[u] = 2
                stack.pop()
    return True


@pytest.mark.parametrize("seed", range(60))
def test_random_graph_regions_stay_acyclic_and_outputs_equal(seed):
    with registered():
        targets = [["tA"], ["tA", "tB"], ["tB", "tA"]][seed % 3]
        mod = random_graph(seed, size=12 + seed % 30)
        annotated = annotate_target(mod, targets)
        merged = merge_compiler_regions(annotated)
        ann, succ = regions_and_edges(merged)
        regions = {r: set(m) for r, m in ann.regions().items()}
        assert contracted_is_acyclic(regions, succ)
        for members in regions.values():
            assert is_convex(members, succ)
            assert len({ann.target[m] for m in members}) == 1
        assert len(regions) <= len(read(annotated["main"]).regions())
        # As far as possible: no two neighbouring regions of one target could merge without a cycle.
        for r1, m1 in regions.items():
            for r2, m2 in regions.items():
                if r1 < r2 and ann.target[min(m1)] == ann.target[min(m2)] and (
                        any(s in m2 for m in m1 for s in succ[m]) or any(s in m1 for m in m2 for s in succ[m])):
                    rest = {k: v for k, v in regions.items() if k not in (r1, r2)}
                    rest[-1] = m1 | m2
                    assert not contracted_is_acyclic(rest, succ), f"regions {r1} and {r2} could merge"
        after = partition_for(targets, mod)
        inputs = {"x": np.random.default_rng(seed).standard_normal((1, 4)).astype("float32")}
        assert_same_outputs(mod, after, inputs, rtol=1e-5)


def test_partition_is_deterministic_across_processes():
    import subprocess
    import sys
    from pathlib import Path

    script = ("import byoc_compiler as b, sys; sys.path.insert(0, 'tests'); "
              "from test_partition_models import random_graph; from partition_helpers import registered\n"
              "with registered():\n"
              "    print(b.partition_for(['tA', 'tB'], random_graph(3, 60)).astext())\n"
              "print(b.partition_for(['ccompiler', 'examplejson'], b.zoo.get('small_cnn')).astext())\n")
    root = Path(__file__).resolve().parent.parent
    outs = set()
    for seed in ("1", "2"):
        env = {"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"}
        proc = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, env=env,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        outs.add(proc.stdout)
    assert len(outs) == 1


def test_scaling_bench_runs():
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "bench/partition_scaling.py", "--sizes", "200", "400", "--repeat", "1"],
                          cwd=root, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "partition_for grew" in proc.stdout and "n log n" in proc.stdout
