"""Where a ccompiler build loses to onnxruntime, layer by layer: each kernel call of the generated regions timed
inside the runner, beside onnxruntime's profile of the same ONNX model (its kernel time per node), same
inputs, same thread count.

    python bench/ccompiler_layers.py --model mobilenetv2 [--threads 1] [--repeat 200] [--top 25]
    python bench/ccompiler_layers.py --model int8:resnet50 --threads 2     # the zoo model quantized (bench/models.py)

--model takes a zoo name, an .onnx file, or "int8:NAME" (the zoo model quantized as bench/models.py's int8 set
makes it: QDQ, per-channel; onnxruntime then runs its integer kernels on the same file).

A ccompiler model is one or a few region functions, so `byoc profile` sees one step per region; this script
builds the runner (`scons target=ccompiler executor=aot interface=unpacked opt=-O3`) in a scratch project,
rewrites each generated region file so that every kernel call `if (ck_...(...) != CK_OK)` is timed
(clock_gettime(CLOCK_MONOTONIC) around the call, so at 2 threads it is the call's wall time), rebuilds (only
those objects change) and runs it --repeat times after one untimed run. Per call it reports the 10th
percentile of the runs (the time a quiet machine gives; the median is printed too), and onnxruntime's per
node the same over as many runs. Convolutions are paired by (input channels, output channels, output height,
kernel height) in order, dense/Gemm and pooling nodes by kind in order; what pairs with nothing (byoc's
separate residual adds, onnxruntime's layout reorders) is listed at the end. The table is sorted by what
byoc loses (its time - onnxruntime's), so the first rows are where to work.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

_CALL = re.compile(r"^(\s*)if \((ck_(?!\w*workspace_bytes)\w+\(.*\)) != CK_OK\)\s*$")
_TITLE = re.compile(r"^\s*/\* \d+: (.*) \*/\s*$")
_SHAPE = re.compile(r"\[([0-9, ]+)\]")

# The timing code put at the top of each region file: per call, every run's time; the 10th percentile and
# median written at exit to $BYOC_LAYERS_OUT (one line per call: index, p10 ms, median ms).
_PRELUDE = """#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define LAYERS_N {n}
#define LAYERS_RUNS 4096
static double layers_t[LAYERS_N][LAYERS_RUNS];
static int layers_count[LAYERS_N];
static double layers_now(void) {{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}}
static int layers_cmp(const void *a, const void *b) {{
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}}
static void layers_dump(void) {{
  FILE *f = fopen(getenv("BYOC_LAYERS_OUT"), "a");
  int i;
  if (f == NULL) return;
  for (i = 0; i < LAYERS_N; ++i) {{
    int c = layers_count[i] < LAYERS_RUNS ? layers_count[i] : LAYERS_RUNS;
    if (c < 2) continue;
    qsort(layers_t[i] + 1, (size_t)(c - 1), sizeof(double), layers_cmp); /* the first run is the warm-up */
    fprintf(f, "{region} %d %.5f %.5f\\n", i, layers_t[i][1 + (c - 1) / 10], layers_t[i][1 + (c - 1) / 2]);
  }}
  fclose(f);
}}
static void layers_add(int i, double ms) {{
  static int registered;
  if (!registered) {{
    registered = 1;
    atexit(layers_dump);
  }}
  if (layers_count[i] < LAYERS_RUNS) layers_t[i][layers_count[i]] = ms;
  layers_count[i]++;
}}
"""


def instrument(text: str, region: str) -> tuple[str, list[str]]:
    """The region's C with every kernel call timed, and each call's title (the step comment above it)."""
    out, titles, title = [], [], ""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _TITLE.match(line)
        if m:
            title = m.group(1)
        if ".winograd = 1" in line:         # the params of an int8 conv on a Winograd weight (int16, 16 x 4x4)
            title += " [winograd]"
        m = _CALL.match(line)
        if m and i + 1 < len(lines):
            pad, call = m.groups()
            out += [f"{pad}{{ const double layers_t0 = layers_now(); const int32_t layers_rc = {call};",
                    f"{pad}  layers_add({len(titles)}, layers_now() - layers_t0);",
                    f"{pad}  if (layers_rc != CK_OK)", lines[i + 1], f"{pad}}}"]
            titles.append(title)
            i += 2
            continue
        out.append(line)
        i += 1
    return _PRELUDE.format(n=max(len(titles), 1), region=region) + "\n".join(out), titles


def _key(title: str) -> tuple:
    """('conv', ic, oc, oh, kh) / ('dense',) / ('pool',) / ('other', op) of a step title."""
    shapes = [tuple(int(d) for d in s.split(",")) for s in _SHAPE.findall(title)]
    if "conv2d" in title and len(shapes) >= 3:
        (x, w, out) = shapes[0], shapes[1], shapes[-1]
        if len(w) == 4:
            return ("conv", x[1], w[0], out[2], w[2])
        if "[winograd]" in title:          # 16 transformed positions per (out, in) pair: a 3x3 kernel
            return ("conv", x[1], out[1], out[2], 3)
        # an int8 weight packed at codegen time is flat: about oc * ic * kh * kw bytes (+ per-channel sums)
        return ("conv", x[1], out[1], out[2], round((w[0] / out[1] / x[1]) ** 0.5))
    if "dense" in title:
        return ("dense",)
    if "pool" in title:
        return ("pool",)
    return ("other", title.split("(")[0].strip())


def _ort_key(prim) -> tuple:
    if prim.conv is not None:
        return ("conv", *prim.conv)
    if prim.kind in ("Gemm", "MatMul", "FusedGemm", "FusedMatMul"):
        return ("dense",)
    if "Pool" in prim.kind:
        return ("pool",)
    return ("other", prim.kind)


def byoc_layers(model: str, threads: int, repeat: int, toolchain: str, inputs: list) -> list[tuple]:
    """[(title, key, p10 ms, median ms)] per kernel call, in execution order (model: a zoo name or a file)."""
    from byoc_compiler.runtime.runner import run_runner_proc

    with tempfile.TemporaryDirectory(prefix="byoc-layers-") as tmp:
        project = Path(tmp)
        (project / "SConstruct").symlink_to(ROOT / "SConstruct")
        is_file = model.endswith(".onnx")
        stem = Path(model).stem if is_file else model
        runner = f"build/ccompiler/{toolchain}/{stem}/runner"
        spec = str(Path(model).resolve()) if is_file else model
        args = [sys.executable, "-m", "SCons", "-Q", "target=ccompiler", f"toolchain={toolchain}", f"model={spec}",
                "executor=aot", "interface=unpacked", "opt=-O3", f"config={ROOT / 'config.toml'}", runner]
        subprocess.run(args, cwd=project, check=True, capture_output=True)
        titles = {}
        for src in sorted((project / "build/ccompiler" / toolchain / stem / "src" / "ccompiler").glob("*.c")):
            text, titles[src.stem] = instrument(src.read_text(), src.stem)
            src.write_text(text)           # scons sees a changed source: recompiles this object, relinks
        subprocess.run(args, cwd=project, check=True, capture_output=True)
        out = project / "layers.txt"
        os.environ["BYOC_LAYERS_OUT"] = str(out)      # read by the instrumented runner at exit
        run_runner_proc(project / runner, [], inputs, project / "run", repeat, extra_args=("--threads", str(threads)))
        rows = []
        for line in out.read_text().splitlines():
            region, index, p10, median = line.split()
            title = titles[region][int(index)]
            rows.append((title, _key(title), float(p10), float(median)))
        return rows


def ort_layers(model: str, threads: int, repeat: int, inputs: dict) -> list[tuple]:
    """[(node, key, p10 ms, median ms)] per onnxruntime kernel, in execution order."""
    import breakdown
    from models import _onnx_bytes, _ort_session

    runs = breakdown.ort_runs(lambda profile_prefix: _ort_session(_onnx_bytes(model), threads, profile_prefix),
                              inputs, repeat)
    named = _qconv_keys(model)
    rows = []
    for i, prim in enumerate(runs[0]):
        times = sorted(run[i].ms for run in runs if len(run) == len(runs[0]))
        key = named.get(prim.what.split("_token_")[0], _ort_key(prim)) if prim.kind == "QLinearConv" else _ort_key(prim)
        rows.append((f"{prim.kind} {prim.what}", key, times[len(times) // 10], times[len(times) // 2]))
    return rows


def quantized_convs(model: str) -> list[tuple]:
    """(Conv node, its weight's dims, input dims, output dims) per convolution of an .onnx file, shapes inferred; a
    QDQ weight is followed back through its DequantizeLinear to its int8 initializer. Convolutions whose shapes
    are not all known are left out."""
    import onnx   # only for .onnx files

    graph = onnx.shape_inference.infer_shapes(onnx.load(model)).graph
    dims = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in graph.value_info}
    dims.update({t.name: list(t.dims) for t in graph.initializer})
    made = {o: n for n in graph.node for o in n.output}
    convs = []
    for node in graph.node:
        if node.op_type != "Conv":
            continue
        w = node.input[1]
        while w in made and made[w].op_type == "DequantizeLinear":     # QDQ: the weight's int8 initializer
            w = made[w].input[0]
        x, out = dims.get(node.input[0]), dims.get(node.output[0])
        if w in dims and x and out:
            convs.append((node, dims[w], x, out))
    return convs


def _qconv_keys(model: str) -> dict[str, tuple]:
    """Conv node name -> ('conv', ic, oc, oh, kh) from a quantized .onnx file's weights and inferred shapes:
    onnxruntime's QLinearConv events keep the node's name but list no weight (it is packed at load)."""
    if not model.endswith(".onnx"):
        return {}
    return {node.name: ("conv", x[1], w[0], out[2], w[2]) for node, w, x, out in quantized_convs(model)}


def pair(ours: list[tuple], theirs: list[tuple]) -> tuple[list, list, list]:
    """(pairs, ours alone, theirs alone): each of ours with the next of theirs of the same key, in order; then
    the convolutions left on both sides by output height and kernel alone (onnxruntime's NCHWc convolutions
    pad channels to 16: 24 channels show as 32)."""
    used, pairs, alone = set(), [], []
    for same in (lambda a, b: a == b, lambda a, b: a[0] == b[0] == "conv" and a[3:] == b[3:]):
        left = []
        for row in alone if pairs or alone else ours:
            j = next((j for j, t in enumerate(theirs) if j not in used and same(row[1], t[1])), None)
            if j is None:
                left.append(row)
            else:
                used.add(j)
                pairs.append((row, theirs[j]))
        alone = left
    return pairs, alone, [t for j, t in enumerate(theirs) if j not in used]


def _short(title: str) -> str:
    """A step title without the region's prefix on constant names and the composite's op list."""
    return re.sub(r"\[nn\.[^]]*\]", "", re.sub(r"tvmgen_\w+?_c(\d+)", r"c\1", title))[:100]


def table(pairs, alone, theirs_alone, top: int) -> str:
    lines = ["byoc p10  ort p10  byoc-ort  byoc med  ort med  layer", "-" * 110]
    for ours, theirs in sorted(pairs, key=lambda p: p[1][2] - p[0][2])[:top]:
        lines.append(f"{ours[2]:8.3f} {theirs[2]:8.3f} {ours[2] - theirs[2]:+9.3f} {ours[3]:9.3f} {theirs[3]:8.3f}  "
                     f"{_short(ours[0])}")
    sums = [sum(p[k][2] for p in pairs) for k in (0, 1)]
    lines.append(f"{sums[0]:8.3f} {sums[1]:8.3f} {sums[0] - sums[1]:+9.3f}  (all {len(pairs)} paired layers, ms)")
    lines += [f"{r[2]:8.3f}        -  byoc only: {_short(r[0])}" for r in alone]
    lines += [f"       - {r[2]:8.3f}  onnxruntime only: {r[0][:90]}" for r in theirs_alone]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="mobilenetv2", help="a zoo name, an .onnx file or int8:NAME")
    ap.add_argument("--threads", type=int, default=1, help="byoc's pool and onnxruntime's intra-op threads")
    ap.add_argument("--repeat", type=int, default=200, help="timed runs of each side")
    ap.add_argument("--toolchain", default="gcc")
    ap.add_argument("--top", type=int, default=25, help="rows of the table (largest losses first)")
    args = ap.parse_args()
    from byoc_compiler.check import deterministic_inputs
    from byoc_compiler.load import ModelSpecError, load_model
    from models import _materialize

    args.model = _materialize(args.model)        # "int8:NAME": the quantized file bench/models.py times
    try:
        mod = load_model(args.model)
    except ModelSpecError as err:                # a misspelt name: the loader's one line, not its traceback
        sys.exit(f"--model: {err}")
    inputs = deterministic_inputs(mod)
    order = [p.name_hint for p in mod["main"].params]
    ours = byoc_layers(args.model, args.threads, args.repeat, args.toolchain, [inputs[n] for n in order])
    theirs = ort_layers(args.model, args.threads, args.repeat, inputs)
    print(f"{args.model}, {args.threads} thread(s), {args.repeat} runs per side, wall ms per kernel call, "
          f"load {os.getloadavg()[0]:.1f}")
    print(table(*pair(ours, theirs), args.top))


if __name__ == "__main__":
    main()
