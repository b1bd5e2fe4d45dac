"""Real-size models through the dnnl target against onnxruntime, 1 and 2 threads, measured in the same run.

    python bench/dnnl_models.py                          # resnet50 and mobilenetv2, 10 runs each
    python bench/dnnl_models.py --models resnet50 --repeat 20 --rounds 3

Each model is partitioned for dnnl, built (graph executor, gcc) and its runner checked once against
the numpy reference. Then, per thread count, the runner (`--repeat N`, its median) and an
onnxruntime session (intra_op_num_threads = the same count, N runs, median) take turns for
`--rounds` rounds, so both see the same machine load; the table gives the median of the rounds and
the ratio dnnl / onnxruntime (below 1.0: dnnl is faster). oneDNN's threads come from OpenMP in
Debian's build: the runner runs with OMP_NUM_THREADS set to the thread count.

Waiting threads: both libraries spin by default (OpenMP's OMP_WAIT_POLICY=active, onnxruntime's
session.intra_op.allow_spinning=1). On a machine with more runnable threads than cores, spinning
threads steal the cores the working ones need, so the table also has a "passive" row per thread
count > 1: OMP_WAIT_POLICY=PASSIVE for the runner and allow_spinning=0 for onnxruntime.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _runner_ms(exe: Path, inputs: list[Path], outdir: Path, threads: int, repeat: int, passive: bool) -> float:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    if passive:
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    proc = subprocess.run([str(exe), "--repeat", str(repeat), "--out", str(outdir), *map(str, inputs)],
                          capture_output=True, text=True, env=env, timeout=1800, check=True)
    line = next(x for x in proc.stdout.splitlines() + proc.stderr.splitlines() if x.startswith("median_ms="))
    return float(line.split("=", 1)[1])


def _ort_ms(session, feed: dict, repeat: int) -> float:
    session.run(None, feed)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        session.run(None, feed)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def bench(name: str, repeat: int, rounds: int, threads=(1, 2)) -> list[dict]:
    import onnxruntime as ort

    import byoc_compiler as byoc
    from byoc_compiler import testing, zoo
    from byoc_compiler.check import deterministic_inputs
    from byoc_compiler.load import load_model

    mod = load_model(name)
    start = time.perf_counter()
    lib = byoc.build(byoc.partition_for("dnnl", mod))
    work = Path(tempfile.mkdtemp(prefix="bench-dnnl-"))
    exe = lib.export_runner(work / "runner")
    build_s = time.perf_counter() - start
    inputs = deterministic_inputs(mod, 0)
    paths = []
    for i, value in enumerate(inputs.values()):
        paths.append(work / f"in{i}.npy")
        np.save(paths[-1], value)
    (work / "out").mkdir()
    got = lib.run_runner(inputs)
    want = testing.run_reference(mod, inputs)
    err = max(float(np.max(np.abs(g - w))) for g, w in zip(got, want))
    rows = []
    model_bytes = zoo.onnx_model(name).SerializeToString()
    for t, passive in [(t, p) for t in threads for p in ((False, True) if t > 1 else (False,))]:
        options = ort.SessionOptions()
        options.intra_op_num_threads = t
        options.inter_op_num_threads = 1
        if passive:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
        feed = {i.name: v for i, v in zip(session.get_inputs(), inputs.values())}
        ours, theirs = [], []
        for _ in range(rounds):
            ours.append(_runner_ms(exe, paths, work / "out", t, repeat, passive))
            theirs.append(_ort_ms(session, feed, repeat))
        rows.append({"model": name, "threads": f"{t}{' passive' if passive else ''}", "dnnl_ms": statistics.median(ours),
                     "ort_ms": statistics.median(theirs), "max_abs_err": err, "build_s": build_s})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet50,mobilenetv2")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    rows = []
    for name in args.models.split(","):
        rows += bench(name.strip(), args.repeat, args.rounds)
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print("| model | threads | dnnl ms | onnxruntime ms | ratio | max abs err vs reference | build s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['model']} | {r['threads']} | {r['dnnl_ms']:.1f} | {r['ort_ms']:.1f} | "
              f"{r['dnnl_ms'] / r['ort_ms']:.2f} | {r['max_abs_err']:.2g} | {r['build_s']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
