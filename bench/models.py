"""Real models end to end, per model and target: SCons build cost and run time against onnxruntime.

    python bench/models.py                                   # realsize set (resnet50, mobilenetv2), ccompiler
    python bench/models.py --set tiny --targets ccompiler --rounds 5 --repeat 20
    python bench/models.py --models resnet50 --toolchain clang --check
    python bench/models.py --set int8                        # quantized ResNet-50 / MobileNetV2: host, ccompiler
    python bench/models.py --set host --clock cpu            # host-only builds of the real-size CNNs
    python bench/models.py --set shuffle                     # ShuffleNet v1 through dnnl (one region: shuffles in oneDNN)
    python bench/models.py --models resnet50 --targets dnnl --breakdown   # + where the time goes, per primitive

For each (model, target), in a fresh project directory (a link to SConstruct):
full build of the runner (`scons target=T toolchain=gcc model=M executor=aot interface=unpacked
opt=-O3`), null build (the same command again), bytes of generated C (the model's src/: .c and .h),
peak build memory (the largest resident set of any process of the build, scons or compiler:
getrusage(RUSAGE_CHILDREN).ru_maxrss in a wrapper process per build), and run time: the runner's
median over --repeat runs (after one untimed run), alternated --rounds times, a pause of ORT_SPIN_S after
onnxruntime's runs each time (its idle workers spin on, see there), with onnxruntime's median over as many runs of
the same ONNX model on the same inputs, at 1 and at 2 intra-op threads, in a process of its own started each
round as the runner's is (`--peer-process one`: in the bench's process for every round). Reported: medians of the
rounds, and the ratios run / onnxruntime (< 1: faster than onnxruntime). `--check` also compares the
outputs with the float64 reference (the margin of `scons check`). `--clock cpu` times CPU time instead
of wall time on both sides (the runner's `--profile` thread CPU time, onnxruntime's calling thread at 1
thread; no 2-thread column): on a loaded machine a fresh runner process waits behind the others longer
than the long-lived Python process running onnxruntime, which inflates wall-clock ratios. `--breakdown` (dnnl) also prints
oneDNN's own time of every primitive summed per category against onnxruntime's profile of its
kernels, at 1 and 2 threads, and the convolutions where byoc loses most (bench/breakdown.py).

Rows are tables: MODEL_SETS (name -> models) and TARGETS (name -> the scons target= value); add a
model set (int8, transformers) or a target (dnnl) as a row. A model is a zoo name (its ONNX graph is
zoo.onnx_model) or an .onnx file (run as it is by both sides).

tflite rows ("tflite:NAME": the zoo's .tflite form, `--set tflite`) build the .tflite file with byoc and
time it against LiteRT, its default kernels (XNNPACK) at 1 thread and its reference kernels, and compare the
output with TensorFlow Lite Micro's (elements equal, largest difference in integer steps).

int8 rows ("int8:NAME": the zoo model quantized, QDQ, per-channel int8 weights, uint8 activations, cached
by content; byoc_compiler.testing.quantize) run the same .onnx file through byoc and onnxruntime's int8
kernels, and also report how many output elements equal onnxruntime's exact integer session's
(testing.quantize.integer_session) and the largest difference in output steps (LSB). SET_DEFAULTS gives such sets their targets and fewer runs (a host-C int8 ResNet-50
takes seconds per run).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# Model sets: other helpers add theirs (e.g. "int8": [...], "transformer": [...]).
MODEL_SETS: dict[str, list[str]] = {
    "realsize": ["resnet50", "mobilenetv2"],
    "tiny": ["resnet50_tiny", "mobilenetv2_tiny"],
    "modern": ["bert_tiny", "efficientnet_lite"],          # today's ops: transformer encoder, HardSwish CNN
    # "int8:NAME": zoo model NAME quantized (QDQ, per-channel, U8S8; byoc_compiler.testing.quantize), run as
    # the same .onnx file by byoc and by onnxruntime (int8 kernels)
    "int8": ["int8:resnet50", "int8:mobilenetv2"],
    "int8-tiny": ["int8:resnet50_tiny", "int8:mobilenetv2_tiny"],
    # host-only builds (no partitioning: every op in the host's own C) of the real-size CNNs
    "host": ["resnet50", "mobilenetv2", "efficientnet_lite"],
    # ShuffleNet v1 through dnnl: its 16 channel shuffles run as oneDNN's shuffle, the model is one region
    "shuffle": ["shufflenet"],
    # "tflite:NAME": the zoo's .tflite form of NAME (zoo.tflite_model), against LiteRT and TensorFlow Lite Micro
    "tflite": ["tflite:mobilenet_v1_025_int8", "tflite:resnet8_int8", "tflite:ds_cnn_int8"],
}

# Per model set: the targets, rounds and repeat used when the command line does not give them.
SET_DEFAULTS: dict[str, dict] = {
    "int8": {"targets": "host,ccompiler", "rounds": 3, "repeat": 3},
    "int8-tiny": {"targets": "host,ccompiler", "rounds": 5, "repeat": 10},
    "host": {"targets": "host", "rounds": 3, "repeat": 5},
    "shuffle": {"targets": "dnnl", "rounds": 7, "repeat": 20},
    "tflite": {"targets": "host,ccompiler", "rounds": 5, "repeat": 20},
}
DEFAULTS = {"targets": "ccompiler", "rounds": 5, "repeat": 10}

# Targets: the bench name -> the scons `target=` value (a priority list for several targets).
TARGETS: dict[str, str] = {
    "ccompiler": "ccompiler",
    "host": "host",
    "dnnl": "dnnl",
}
# Every runner is timed at 1 thread against onnxruntime's 1 intra-op thread and at 2 against its 2: the
# runtime's pool (runner --threads N) and, for oneDNN's OpenMP, BYOC_NUM_THREADS / OMP_NUM_THREADS = N.
THREADED_TARGETS = {"dnnl"}     # their breakdown reads oneDNN's per-primitive timing
# onnxruntime's intra-op workers spin after a run (session.intra_op.allow_spinning, on by default): an idle 2-thread
# bert_tiny session burned 40-100% of a core for 80-120 ms after its last run (process CPU time per 10 ms window).
# A runner started inside that window shares its second core with them: bert_tiny's 2-thread runs (--repeat 5)
# were slower than its 1-thread ones after onnxruntime's. So the bench waits this long after onnxruntime's runs.
ORT_SPIN_S = 0.3


@contextlib.contextmanager
def _thread_count(threads: int | None):
    """BYOC_NUM_THREADS and OMP_NUM_THREADS set to `threads` inside the block (None: left alone)."""
    names = ("BYOC_NUM_THREADS", "OMP_NUM_THREADS")
    saved = {n: os.environ.get(n) for n in names}
    if threads is not None:
        os.environ.update({n: str(threads) for n in names})
    try:
        yield
    finally:
        for n, v in saved.items():
            if v is None:
                os.environ.pop(n, None)
            else:
                os.environ[n] = v


def _huge_pages_mode() -> str:
    """The kernel's transparent-huge-pages mode: byoc's runtime asks for huge pages for its constants and arenas
    (byoc_advise_huge_pages), which only `always` and `madvise` grant, so a figure depends on it."""
    try:
        text = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return "none"
    chosen = [w.strip("[]") for w in text.split() if w.startswith("[")]
    return chosen[0] if chosen else text.strip()


def isa_path() -> str:
    """The micro-kernels ccompiler's library picks on this CPU (its run-time dispatch): float32 and int8, e.g.
    "avx512-8x32, int8 amx-int8-32x32"."""
    import ctypes  # noqa: PLC0415  (only this report loads a library)

    from byoc_compiler.contrib.ccompiler import kernels as K  # noqa: PLC0415  (only this report needs it)

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "libck.so"
        subprocess.run(["gcc", "-std=c99", "-O1", "-fPIC", "-shared", "-I", str(K.INCLUDE_DIR),
                        *map(str, K.SOURCES), *K.standalone_args(), "-o", str(out), *K.LDFLAGS], check=True)
        lib = ctypes.CDLL(str(out))
        lib.ck_gemm_kernel_name.restype = lib.ck_qgemm_kernel_name.restype = ctypes.c_char_p
        return f"{lib.ck_gemm_kernel_name().decode()}, int8 {lib.ck_qgemm_kernel_name().decode()}"


# One build measured in a wrapper process, so that RUSAGE_CHILDREN covers that build alone.
_WRAPPER = ("import resource, subprocess, sys, time\n"
            "t = time.perf_counter(); p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
            "sys.stdout.write(p.stdout[-4000:]); sys.stderr.write(p.stderr[-4000:])\n"
            "print(f'@@ {time.perf_counter() - t} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}')\n"
            "sys.exit(p.returncode)\n")


@dataclass
class Row:
    model: str
    target: str
    toolchain: str
    full_build_s: float
    null_build_s: float
    generated_c_bytes: int
    peak_build_mb: float
    run_ms: float
    ort1_ms: float
    ort2_ms: float | None
    margin: float | None = None
    run2_ms: float | None = None       # threaded targets: the run at 2 threads (run_ms is at 1)
    ort_equal: float | None = None     # int8 models: fraction of output elements equal to onnxruntime's
    ort_max_lsb: float | None = None   # ... and the largest difference in output steps
    breakdown: str | None = None       # --breakdown: per-primitive tables (bench/breakdown.py)
    clock: str = "wall"                # "cpu": run_ms and ort1_ms are CPU times; no ort2_ms

    @property
    def ratio1(self) -> float:
        return self.run_ms / self.ort1_ms

    @property
    def ratio2(self) -> float:
        if self.ort2_ms is None:
            return float("nan")
        return (self.run2_ms if self.run2_ms is not None else self.run_ms) / self.ort2_ms


def _scons(project: Path, args: list[str]) -> tuple[float, float]:
    """(seconds, peak resident MB of the build's processes) of one scons run in `project`."""
    argv = [sys.executable, "-c", _WRAPPER, sys.executable, "-m", "SCons", "-Q", *args]
    proc = subprocess.run(argv, cwd=project, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"scons {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    seconds, kib = proc.stdout.strip().splitlines()[-1].split()[1:]
    return float(seconds), int(kib) / 1024.0


def _onnx_bytes(model: str) -> bytes:
    if model.endswith(".onnx"):
        return Path(model).read_bytes()
    from byoc_compiler import zoo

    return zoo.onnx_model(model).SerializeToString()


class _LiteRT:
    """A .tflite model in LiteRT with the session interface measure() times: its default kernels (XNNPACK) at 1
    thread (`threads`=1), or its reference kernels (BUILTIN_REF, `threads`=2: the second peer column)."""

    def __init__(self, path: str, threads: int):
        from ai_edge_litert.interpreter import Interpreter, OpResolverType   # a test extra: tflite rows only

        kind = OpResolverType.AUTO if threads == 1 else OpResolverType.BUILTIN_REF
        self.interp = Interpreter(model_path=path, experimental_op_resolver_type=kind, num_threads=1)
        self.interp.allocate_tensors()

    def run(self, _names, inputs: dict):
        for detail, value in zip(self.interp.get_input_details(), inputs.values()):
            self.interp.set_tensor(detail["index"], value)
        self.interp.invoke()
        return [self.interp.get_tensor(d["index"]) for d in self.interp.get_output_details()]


def _peers(model: str, threads: tuple[int, ...]) -> dict:
    if model.endswith(".tflite"):
        return {n: _LiteRT(model, n) for n in threads}
    return {n: _ort_session(_onnx_bytes(model), n) for n in threads}


def _ort_session(model_bytes: bytes, threads: int, profile_prefix: str | None = None):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    if profile_prefix is not None:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    return onnxruntime.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])


def _peer_process_ms(model: str, counts: tuple[int, ...], inputs: dict, repeat: int, cpu: bool,
                     workdir: Path) -> dict[int, float]:
    """The peer's median ms per thread count, measured in a process of its own started for this round, as the
    runner is (--peer-process round). On this bench's VM a process's speed is a draw made at its start: the same
    runner pinned to one CPU, run after run, took 64-125 ms of CPU time (medians of 5 runs each), and
    onnxruntime's ResNet-50 in fresh processes 53-98 ms; one onnxruntime process for the whole bench against
    one runner process per round made the ratio hang on onnxruntime's single draw (ResNet-50 at 1 thread read
    1.08-1.45 in five runs of the same build within six minutes)."""
    workdir.mkdir(parents=True, exist_ok=True)
    feed = workdir / "peer_inputs.npz"
    if not feed.exists():
        np.savez(feed, **{f"i{k}": v for k, v in enumerate(inputs.values())})
    names = list(inputs)
    request = json.dumps({"model": model, "counts": list(counts), "names": names, "feed": str(feed),
                          "repeat": repeat, "cpu": cpu})
    proc = subprocess.run([sys.executable, __file__, "--peer-worker", request], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"the peer's process failed for {model}:\n{proc.stderr.strip()}")
    return {int(n): ms for n, ms in json.loads(proc.stdout.strip().splitlines()[-1]).items()}


def _peer_worker(request: str) -> None:
    """--peer-worker: time the peer once per thread count (after one untimed run) and print the medians as JSON."""
    r = json.loads(request)
    with np.load(r["feed"]) as feed:
        inputs = {name: feed[f"i{k}"] for k, name in enumerate(r["names"])}
    medians = {}
    for n, s in _peers(r["model"], tuple(r["counts"])).items():
        s.run(None, inputs)
        medians[n] = _median_ms(lambda s=s: s.run(None, inputs), r["repeat"],
                                time.thread_time if r["cpu"] else time.perf_counter)
    print(json.dumps(medians))


def _median_ms(fn, repeat: int, clock=time.perf_counter) -> float:
    times = []
    for _ in range(repeat):
        start = clock()
        fn()
        times.append((clock() - start) * 1e3)
    return statistics.median(times)


def _runner_cpu_ms(runner: Path, arrays: list, workdir: Path, repeat: int) -> tuple[list, float]:
    """(outputs, median thread CPU ms of a run): the runner's --profile timing."""
    import re

    from byoc_compiler.runtime.runner import run_runner_proc

    outputs, proc = run_runner_proc(runner, [], arrays, workdir, repeat, extra_args=("--profile",))
    return outputs, float(re.search(r"median_cpu_ms=([0-9.eE+-]+)", proc.stdout).group(1))


def _breakdown(model: str, runner: Path, workdir: Path, arrays: list, inputs: dict, threads: list[int],
               repeat: int) -> str:
    """bench/breakdown.py's tables, per thread count: oneDNN's primitive times against onnxruntime's profile."""
    import breakdown

    workdir.mkdir(parents=True, exist_ok=True)
    files = []
    for i, value in enumerate(arrays):
        np.save(workdir / f"bd_in{i}.npy", np.ascontiguousarray(value))
        files.append(str(workdir / f"bd_in{i}.npy"))
    (workdir / "bd_out").mkdir(exist_ok=True)
    parts = []
    for n in threads:
        ours = breakdown.dnnl_runs(runner, ["--out", str(workdir / "bd_out"), *files], n, repeat)
        theirs = breakdown.ort_runs(lambda profile_prefix, n=n: _ort_session(_onnx_bytes(model), n, profile_prefix),
                                    inputs, repeat)
        parts.append(f"{Path(model).stem}, {n} thread{'s' if n > 1 else ''} ({repeat} runs; "
                     f"each side's own timing of its kernels):\n\n{breakdown.table(ours, theirs)}")
    return "\n\n".join(parts)


def measure(model: str, target: str, toolchain: str, rounds: int, repeat: int, check: bool,
            breakdown: bool = False, clock: str = "wall", peer_process: str = "round") -> Row:
    from byoc_compiler.check import deterministic_inputs
    from byoc_compiler.runtime.runner import run_runner_timed
    from byoc_compiler.load import load_model

    scons_target = TARGETS[target]
    with tempfile.TemporaryDirectory(prefix="byoc-bench-models-") as tmp:
        project = Path(tmp)
        (project / "SConstruct").symlink_to(ROOT / "SConstruct")
        is_file = model.endswith((".onnx", ".tflite"))
        spec = str(Path(model).resolve()) if is_file else model
        stem = Path(model).stem if is_file else model
        label = stem.rsplit("-", 1)[0] if "-int8-" in stem else stem    # a quantized file: without its digest
        runner = f"build/{scons_target}/{toolchain}/{stem}/runner"
        args = [f"target={scons_target}", f"toolchain={toolchain}", f"model={spec}", "executor=aot",
                "interface=unpacked", "opt=-O3", f"config={ROOT / 'config.toml'}", runner]
        full_s, full_mb = _scons(project, args)
        null_s, null_mb = _scons(project, args)
        src = project / "build" / scons_target / toolchain / stem / "src"
        c_bytes = sum(p.stat().st_size for p in src.rglob("*") if p.suffix in (".c", ".h"))

        mod = load_model(spec)
        inputs = deterministic_inputs(mod)
        order = [p.name_hint for p in mod["main"].params]
        cpu = clock == "cpu"
        sessions = _peers(model, (1,) if cpu else (1, 2))
        for s in sessions.values():        # warm-up: first runs allocate and pick kernels
            s.run(None, inputs)
        time.sleep(ORT_SPIN_S)
        runs, runs2, ort = [], [], {1: [], 2: []}
        outputs = None
        counts = (1,) if cpu else (1, 2)
        for _ in range(rounds):            # alternated, so that load changes hit every side alike
            for threads, into in zip(counts, (runs, runs2)):
                with _thread_count(threads):
                    if cpu:
                        outputs, ms = _runner_cpu_ms(project / runner, [inputs[n] for n in order], project / "run",
                                                     repeat)
                    else:
                        outputs, ms = run_runner_timed(project / runner, [], [inputs[n] for n in order],
                                                       project / "run", repeat=repeat,
                                                       extra_args=["--threads", str(threads)])
                into.append(ms)
            if peer_process == "round":
                for n, ms in _peer_process_ms(model, counts, inputs, repeat, cpu, project / "peer").items():
                    ort[n].append(ms)
            else:
                for n, s in sessions.items():   # 1 thread: onnxruntime computes on the calling thread
                    ort[n].append(_median_ms(lambda s=s: s.run(None, inputs), repeat,
                                             time.thread_time if cpu else time.perf_counter))
            time.sleep(ORT_SPIN_S)          # its workers stop spinning before the next runner starts
        agreement = _int8_agreement(model, outputs, inputs)
        text = None
        if breakdown:
            if target not in THREADED_TARGETS:
                text = f"(no breakdown for target {target}: it needs oneDNN's per-primitive timing, target dnnl)"
            else:
                text = _breakdown(model, project / runner, project / "run", [inputs[n] for n in order], inputs,
                                  [1, 2], repeat)
        margin = None
        if check:
            from byoc_compiler.check import expected_outputs
            from byoc_compiler.testing.tolerance import compare_with_bounds

            margin = compare_with_bounds(outputs, expected_outputs(mod, inputs)).margin
    med = statistics.median
    return Row(label, target, toolchain, full_s, null_s, c_bytes, max(full_mb, null_mb), med(runs), med(ort[1]),
               med(ort[2]) if ort[2] else None, margin, med(runs2) if runs2 else None, *agreement, text, clock=clock)


def _int8_agreement(model: str, outputs, inputs) -> tuple[float | None, float | None]:
    """(fraction equal, max LSB) of a quantized model's first output against onnxruntime's exact integer session
    (testing.quantize.integer_session: the timed session's uint8 x int8 kernels saturate on x86 without VNNI)
    (.tflite: against TensorFlow Lite Micro's, one LSB being one integer step); Nones otherwise."""
    from byoc_compiler.testing.quantize import int8_agreement, integer_session, output_step

    if model.endswith(".tflite"):
        sys.path.insert(0, str(ROOT / "tests"))
        import tflite_models   # the tests' TensorFlow Lite Micro runner

        (micro,) = tflite_models.run_tflm(Path(model).read_bytes(), inputs)[:1]
        if micro.dtype.kind not in "iu":
            return None, None
        got = np.asarray(outputs[0]).astype(np.int64)
        return float(np.mean(got == micro)), float(np.abs(got - micro).max())
    lsb = output_step(model) if model.endswith(".onnx") else 0.0
    if not lsb:
        return None, None
    return int8_agreement(outputs[0], integer_session(model).run(None, inputs)[0], lsb)


def table(rows: list[Row]) -> str:
    header = ("model", "target", "toolchain", "full build s", "null build s", "generated C", "peak build MB",
              "run ms", "ort 1T ms", "ort 2T ms", "run/ort 1T", "run/ort 2T", "run 1T/2T", "ort 1T/2T")
    int8 = any(r.ort_equal is not None for r in rows)
    if int8:
        header += ("= ort", "max LSB")
    lines = ["| " + " | ".join(header) + (" | margin |" if any(r.margin is not None for r in rows) else " |"),
             "|" + " --- |" * (len(header) + any(r.margin is not None for r in rows))]
    for r in rows:
        cells = [r.model, r.target, r.toolchain, f"{r.full_build_s:.1f}", f"{r.null_build_s:.2f}",
                 _size(r.generated_c_bytes), f"{r.peak_build_mb:.0f}",
                 f"{r.run_ms:.1f}" + (f" / {r.run2_ms:.1f} (1T / 2T)" if r.run2_ms is not None else ""), f"{r.ort1_ms:.1f}",
                 "-" if r.ort2_ms is None else f"{r.ort2_ms:.1f}", f"{r.ratio1:.2f}",
                 "-" if r.ort2_ms is None else f"{r.ratio2:.2f}",
                 "-" if r.run2_ms is None else f"{r.run_ms / r.run2_ms:.2f}",
                 "-" if r.ort2_ms is None else f"{r.ort1_ms / r.ort2_ms:.2f}"]
        if int8:
            cells += ["-", "-"] if r.ort_equal is None else [f"{r.ort_equal:.4%}", f"{r.ort_max_lsb:.0f}"]
        if r.margin is not None:
            cells.append(f"{r.margin:.3g}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


def _materialize(model: str) -> str:
    """An "int8:NAME" entry as the path of its quantized .onnx file (made once, kept in a cache dir); a
    "tflite:NAME" entry as the zoo's .tflite file of NAME, written under build/.tflite-bench/."""
    if model.startswith("tflite:"):
        from byoc_compiler import zoo

        path = ROOT / "build" / ".tflite-bench" / f"{model[len('tflite:'):]}.tflite"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(zoo.tflite_model(model[len("tflite:"):]))
        return str(path)
    if not model.startswith("int8:"):
        return model
    from byoc_compiler.testing.quantize import quantized_zoo_model

    return str(quantized_zoo_model(model[len("int8:"):], "qdq", True))   # cached by content


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="realsize", choices=sorted(MODEL_SETS), help="a row of MODEL_SETS")
    parser.add_argument("--models", nargs="*", help="zoo names or .onnx files (instead of --set)")
    parser.add_argument("--targets", help=f"comma-separated, of: {', '.join(TARGETS)} (default: the set's "
                                          "SET_DEFAULTS, else ccompiler)")
    parser.add_argument("--toolchain", default="gcc")
    parser.add_argument("--rounds", type=int, help="alternations of the runner and onnxruntime (default 5)")
    parser.add_argument("--repeat", type=int, help="runs per round on each side (default 10)")
    parser.add_argument("--check", action="store_true", help="also print the check's margin (float64 reference)")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="cpu: CPU time of the computing thread on both sides (1 thread; for a loaded machine)")
    parser.add_argument("--breakdown", action="store_true",
                        help="also print where the time goes: oneDNN's per-primitive times against onnxruntime's "
                             "profile, per category and per convolution (dnnl target; bench/breakdown.py)")
    parser.add_argument("--peer-process", choices=("round", "one"), default="round",
                        help="round: the peer runs in a fresh process each round, as the runner does (default; see "
                             "_peer_process_ms); one: in the bench's own process for every round")
    args = parser.parse_args()
    defaults = DEFAULTS if args.models else SET_DEFAULTS.get(args.set, DEFAULTS)
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    models = [_materialize(m) for m in (args.models or MODEL_SETS[args.set])]
    targets = args.targets.split(",")
    unknown = [t for t in targets if t not in TARGETS]
    if unknown:
        sys.exit(f"unknown target {unknown[0]!r}; TARGETS has: {', '.join(TARGETS)}")
    rows = []
    for model in models:
        for target in targets:
            rows.append(measure(model, target, args.toolchain, args.rounds, args.repeat, args.check, args.breakdown,
                                args.clock, args.peer_process))
            print(f"measured {model} / {target}", file=sys.stderr, flush=True)
    load = os.getloadavg()
    print(f"{os.cpu_count()} CPUs, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; medians of "
          f"{args.rounds} alternated rounds of {args.repeat} runs; build: aot, unpacked, -O3"
          + ("; CPU time of the computing thread (--clock cpu)" if args.clock == "cpu" else "")
          + ("; the peer in a fresh process each round" if args.peer_process == "round" else "; the peer in this process")
          + f"; ccompiler's ISA path on this CPU: {isa_path()}; transparent huge pages: {_huge_pages_mode()}")
    if any(m.endswith(".tflite") for m in models):
        print("for .tflite models the peer columns are LiteRT: 'ort 1T' = its default kernels (XNNPACK) at 1 thread, "
              "'ort 2T' = its reference kernels (BUILTIN_REF); '= ort' and 'max LSB' compare with TensorFlow Lite Micro")
    print(table(rows))
    for r in rows:
        if r.breakdown:
            print(f"\n{r.breakdown}")
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in rows], indent=1))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    np.set_printoptions(precision=4)
    if sys.argv[1:2] == ["--peer-worker"]:
        _peer_worker(sys.argv[2])
    else:
        main()
