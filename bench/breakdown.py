"""Where the time goes, per primitive: a dnnl runner (oneDNN's own timing of every primitive it runs)
against onnxruntime's profile of the same ONNX model (every node's kernel time), same inputs, same
thread count. `bench/models.py --breakdown` prints it below its table.

dnnl side: the runner runs with ONEDNN_VERBOSE=1, which prints one `exec` line per primitive
execution with its kind, implementation, shapes and milliseconds. The weight reorders done once at
init also print `exec` lines; two runs (1 and 1 + N repeats) tell them apart: the per-run steps are
the difference. onnxruntime side: SessionOptions.enable_profiling, `*_kernel_time` events.

Both sides are summed per category (CATEGORIES: convolution, pooling, dense, layout changes,
elementwise): the median over runs of each run's sum, and the sum of each primitive's fastest run
(on a loaded machine other processes land in random primitives; the fastest run of each estimates
the unloaded machine). Convolutions are matched layer by layer by their shapes (input channels,
output channels, output height, kernel height) and order, fastest runs compared.
"""
from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

# category -> (oneDNN primitive kinds, onnxruntime op types)
CATEGORIES = {
    "convolution": ({"convolution", "deconvolution"}, {"Conv", "FusedConv", "NchwcConv", "QLinearConv"}),
    "pooling": ({"pooling", "pooling_v2"}, {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}),
    "dense / matmul": ({"inner_product", "matmul"}, {"Gemm", "MatMul", "FusedGemm", "FusedMatMul"}),
    "layout (reorders, copies)": ({"reorder", "concat"}, {"ReorderInput", "ReorderOutput", "Transpose", "Concat",
                                                          "Flatten", "Reshape"}),
    "elementwise, normalization": ({"eltwise", "binary", "batch_normalization", "softmax", "lrn", "softmax_v2"},
                                   {"Relu", "Add", "Mul", "Sigmoid", "Tanh", "Clip", "Softmax", "BatchNormalization",
                                    "LRN", "Exp", "Sqrt", "LeakyRelu"}),
}


def _category(kind: str, side: int) -> str:
    for name, kinds in CATEGORIES.items():
        if kind in kinds[side]:
            return name
    return "other"


@dataclass
class Prim:
    kind: str      # oneDNN primitive kind or onnxruntime op type
    what: str      # implementation (oneDNN) or node name (onnxruntime)
    conv: tuple | None  # (ic, oc, oh, kh) of a convolution (not ih: byoc runs some strided 1x1 convs on a
                        # compact copy of the pixels they read, so its input height is the output's)
    ms: float


_CONV = re.compile(r"ic(\d+)oc(\d+)_ih(\d+)oh(\d+)kh(\d+)")


def _verbose_lines(runner: Path, args: list[str], threads: int, repeat: int) -> list[Prim]:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), BYOC_NUM_THREADS=str(threads), ONEDNN_VERBOSE="1",
               DNNL_VERBOSE="1")
    proc = subprocess.run([str(runner), "--repeat", str(repeat), *args], capture_output=True, text=True, env=env,
                          timeout=1800, check=True)
    prims = []
    for line in proc.stdout.splitlines():
        f = line.split(",")
        if len(f) < 6 or not f[0].endswith("_verbose") or f[1] != "exec":
            continue
        found = _CONV.search(line) if f[3] == "convolution" else None
        conv = tuple(int(g) for i, g in enumerate(found.groups()) if i != 2) if found else None
        prims.append(Prim(f[3], f[4], conv, float(f[-1])))
    return prims


def dnnl_runs(runner: Path, args: list[str], threads: int, repeat: int) -> list[list[Prim]]:
    """Per run, the primitives oneDNN executed (init-time weight reorders left out)."""
    once = _verbose_lines(runner, args, threads, 1)
    many = _verbose_lines(runner, args, threads, 1 + repeat)
    steps = (len(many) - len(once)) // repeat
    if steps <= 0:
        raise RuntimeError(f"{runner} printed no oneDNN exec lines: is it a dnnl build?")
    runs = many[len(many) - steps * (1 + repeat):]
    return [runs[i * steps:(i + 1) * steps] for i in range(1, 1 + repeat)]


def ort_runs(session_factory, inputs: dict, repeat: int) -> list[list[Prim]]:
    """Per run, onnxruntime's kernel events (one warm-up run left out)."""
    with tempfile.TemporaryDirectory(prefix="byoc-ort-prof-") as tmp:
        session = session_factory(profile_prefix=os.path.join(tmp, "ort"))
        for _ in range(1 + repeat):
            session.run(None, inputs)
        events = json.loads(Path(session.end_profiling()).read_text())
    # a kernel event belongs to the model_run event whose span holds it (model_run is written when its
    # run ends, after its kernels); the first run is the warm-up
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("name") == "model_run")
    runs: list[list[Prim]] = [[] for _ in spans]
    for e in events:
        if not (e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time")):
            continue
        k = next((i for i, (t0, t1) in enumerate(spans) if t0 <= e["ts"] <= t1), None)
        if k is None:
            continue
        args = e.get("args", {})
        shapes = [list(d.values())[0] for d in args.get("input_type_shape", [])]
        outs = [list(d.values())[0] for d in args.get("output_type_shape", [])]
        conv = None
        # (a QLinearConv's weight is packed at session start and not listed: ccompiler_layers keys it by name)
        if "Conv" in args.get("op_name", "") and len(shapes) >= 2 and len(shapes[0]) == len(shapes[1]) == 4 and outs:
            x, w = shapes[0], shapes[1]
            conv = (x[1], w[0], outs[0][2], w[2])
        runs[k].append(Prim(args.get("op_name", "?"), e["name"][:-len("_kernel_time")], conv, e["dur"] / 1e3))
    return [r for r in runs[1:] if r][:repeat]


def _per_category(runs: list[list[Prim]], side: int) -> tuple[dict[str, float], dict[str, float]]:
    """Per category: (the median over runs of the run's sum, the sum over primitives of each one's fastest run).
    The second estimates an unloaded machine: on a shared one, other processes land in random primitives."""
    sums = defaultdict(list)
    for run in runs:
        totals = Counter()
        for p in run:
            totals[_category(p.kind, side)] += p.ms
        for name in [*CATEGORIES, "other"]:
            sums[name].append(totals.get(name, 0.0))
    fastest = Counter()
    steps = min(len(r) for r in runs)
    for i in range(steps):
        fastest[_category(runs[0][i].kind, side)] += min(r[i].ms for r in runs)
    return {k: statistics.median(v) for k, v in sums.items()}, dict(fastest)


def _convs(runs: list[list[Prim]]) -> list[tuple[tuple, float]]:
    """(shape key with its occurrence number, fastest ms over the runs) of every convolution, in run order."""
    per_key: dict[tuple, list[float]] = defaultdict(list)
    order: list[tuple] = []
    for run in runs:
        seen = Counter()
        for p in run:
            if p.conv is None:
                continue
            key = (*p.conv, seen[p.conv])
            seen[p.conv] += 1
            if key not in per_key:
                order.append(key)
            per_key[key].append(p.ms)
    return [(k, min(per_key[k])) for k in order]


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


def table(byoc: list[list[Prim]], ort: list[list[Prim]], worst: int = 8) -> str:
    (a, a_min), (b, b_min) = _per_category(byoc, 0), _per_category(ort, 1)
    lines = ["| category | byoc ms (median / fastest) | onnxruntime ms (median / fastest) | ratio (median / fastest) |",
             "| --- | --- | --- | --- |"]
    names = [n for n in [*CATEGORIES, "other"] if a.get(n, 0) or b.get(n, 0)]
    for name in names:
        x, y, xm, ym = a.get(name, 0), b.get(name, 0), a_min.get(name, 0), b_min.get(name, 0)
        lines.append(f"| {name} | {x:.2f} / {xm:.2f} | {y:.2f} / {ym:.2f} | {_ratio(x, y)} / {_ratio(xm, ym)} |")
    ta, tb, tam, tbm = sum(a.values()), sum(b.values()), sum(a_min.values()), sum(b_min.values())
    lines.append(f"| **sum** | {ta:.2f} / {tam:.2f} | {tb:.2f} / {tbm:.2f} | {_ratio(ta, tb)} / {_ratio(tam, tbm)} |")
    ours, theirs = dict(_convs(byoc)), dict(_convs(ort))
    common = [k for k in ours if k in theirs]
    if common:
        diffs = sorted(common, key=lambda k: theirs[k] - ours[k])[:worst]
        lines += ["", f"convolutions matched by shape: {len(common)} of {len(ours)} (byoc) and {len(theirs)} (onnxruntime); "
                  "fastest run of each; where byoc loses most:", "",
                  "| conv (ic, oc, oh, kh, #) | byoc ms | onnxruntime ms | difference ms |", "| --- | --- | --- | --- |"]
        for k in diffs:
            lines.append(f"| {k} | {ours[k]:.3f} | {theirs[k]:.3f} | {ours[k] - theirs[k]:+.3f} |")
        lines.append(f"| all matched | {sum(ours[k] for k in common):.2f} | {sum(theirs[k] for k in common):.2f} | "
                     f"{sum(ours[k] - theirs[k] for k in common):+.2f} |")
    return "\n".join(lines)
