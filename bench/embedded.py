"""Size and memory of the int8 microcontroller models on the bare-metal lanes, beside TensorFlow Lite Micro.

    python bench/embedded.py [--models resnet8_int8,...] [--lanes cortex-m55,cortex-m3] [--opt -Os] [--markdown]

For each int8 zoo model (zoo/tiny: ds_cnn, resnet8, mobilenet_v1_025, fc_autoencoder) on each board lane
(the model in ccompiler regions on cortex-m55 and cortex-m3, and host-only on cortex-m3) it builds the
bare-metal image byoc runs (AOT, unpacked, linked constants, `--opt`), links it once more with a linker map
and reads from that map, per input section, `.text` / `.rodata` / `.data` / `.bss` of:
  runtime core   byoc_compiler/runtime/src (core.c, parallel.c)
  generated      host.c and the regions' C
  kernels        the ccompiler kernel library (ck_*.c)
  constants      byoc_constants.S (the linked weights; small constants are C literals in `generated`)
  startup        the image's startup code, semihosting and main() (byoc's checking driver)
  libc / libm / libgcc   the archives' members (picolibc's libm lives in libc.a, members `libm_*`)
It prints the arena per pool (the build's workspace in each pool of the board, beside its lower bound, the
peak of simultaneously live buffers), the stack's high-water mark (the image paints the stack and prints
`stack_used`; qemu runs it once) and its static bound (-fcallgraph-info=su of every compiled file: the
deepest call chain from the reset handler; an indirect call counts as the deepest chain of any kernel or runtime
function, C library frames are not counted), and TensorFlow Lite Micro's arena for the .tflite twin of the
same model (the `tflite-micro` package's interpreter: total, head = the non-persistent tensors, tail). The
ratio columns are byoc's arena over its lower bound and over TFLM's total.
"""
from __future__ import annotations

import argparse
import dataclasses
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import byoc_compiler as byoc  # noqa: E402
from byoc_compiler import toolchain as tcmod  # noqa: E402
from byoc_compiler import zoo  # noqa: E402
from byoc_compiler.backend import compile_link  # noqa: E402
from byoc_compiler.runtime.runner import run_runner_proc  # noqa: E402
from byoc_compiler.config import load_config  # noqa: E402
from byoc_compiler.linker_script import LINKER_SCRIPT  # noqa: E402
from byoc_compiler.runtime.sources import runtime_sources  # noqa: E402

MODELS = ("ds_cnn_int8", "resnet8_int8", "mobilenet_v1_025_int8", "fc_autoencoder_int8")
# (lane, targets): ccompiler on both boards, and host-only on cortex-m3 (the acceptance's split)
LANES = (("cortex-m55", ("ccompiler",)), ("cortex-m3", ("ccompiler",)), ("cortex-m3", ()))
SECTIONS = ("text", "rodata", "data", "bss")
PARTS = ("runtime core", "generated", "kernels", "constants", "startup", "libc", "libm", "libgcc", "other")


def tflm_arena(name: str) -> dict:
    """TFLM's allocation record for the .tflite twin: {'total', 'head', 'tail'} in bytes."""
    code = ("import sys\nfrom tflite_micro.python.tflite_micro import runtime\n"
            "runtime.Interpreter.from_bytes(sys.stdin.buffer.read()).print_allocations()\n")
    proc = subprocess.run([sys.executable, "-c", code], input=zoo.tflite_model(name), capture_output=True,
                          timeout=300)
    text = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    found = {k: int(v) for k, v in re.findall(r"Arena allocation (total|head|tail) (\d+) bytes", text)}
    if len(found) != 3:
        raise RuntimeError(f"{name}: TFLM printed no allocation record:\n{text[-2000:]}")
    return found


def _config(lane: str):
    """The settings with the lane's cflags + the call graph with stack sizes (.ci files beside the objects)."""
    cfg = load_config()
    tc = cfg.toolchains[lane]
    cfg.toolchains[lane] = dataclasses.replace(tc, cflags=tuple(tc.cflags) + ("-fcallgraph-info=su",))
    return cfg


def _category(path: str, generated: set, runtime: set, startup: set) -> str:
    """Which part an input section of the map belongs to, from its file (an object or archive member)."""
    member = re.search(r"lib(c|m|gcc|nosys|semihost)\.a\((.+)\)", path)
    if member:
        lib, obj = member.groups()
        if lib == "gcc":
            return "libgcc"
        return "libm" if lib == "m" or obj.startswith("libm_") else "libc"
    stem = Path(path).stem
    if stem == "byoc_constants":
        return "constants"
    if stem.startswith("ck_"):
        return "kernels"
    for part, stems in (("generated", generated), ("runtime core", runtime), ("startup", startup)):
        if stem in stems:
            return part
    return "other"


def _output_kind(name: str) -> str | None:
    for kind in SECTIONS:
        if name == f".{kind}" or name.startswith(f".{kind}."):
            return kind
    return {".vectors": "text", ".isr_vector": "text", ".noinit": "bss"}.get(name)


def map_sizes(map_text: str, classify) -> dict:
    """(part, section kind) -> bytes, summed over the input sections the linker map lists under each output
    section (`.text`, `.rodata`, `.data`, `.bss` and their like)."""
    sizes: dict = {}
    out_kind = None
    pending = None                           # an input section name whose address and size wrap to the next line
    for line in map_text.split("\n"):
        head = re.match(r"^(\.[\w.]+)\s", line) or re.match(r"^(\.[\w.]+)$", line)
        if head:
            out_kind = _output_kind(head.group(1))
            continue
        if out_kind is None:
            continue
        m = re.match(r"^ (\.[\w.$]+)?\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$", line)
        if m and (m.group(1) or pending):
            size = int(m.group(3), 16)
            if size:
                key = (classify(m.group(4).strip()), out_kind)
                sizes[key] = sizes.get(key, 0) + size
            pending = None
        elif re.match(r"^ \.[\w.$]+$", line):
            pending = line.strip()
    return sizes


def static_stack_bound(ci_files, kernel_stems: set) -> int:
    """The deepest chain of stack frames from the reset handler (main() without one) over the call graphs
    gcc wrote (-fcallgraph-info=su)."""
    frames: dict = {}
    edges: dict = {}
    owner: dict = {}
    for path in ci_files:
        text = Path(path).read_text(errors="replace")
        for title, label in re.findall(r'node: \{ title: "([^"]+)" label: "([^"]*)"', text):
            m = re.search(r"(\d+) bytes", label)
            if m:
                frames[title] = int(m.group(1))
                owner[title] = Path(path).name.split(".")[0]
        for src, dst in re.findall(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"', text):
            edges.setdefault(src, []).append(dst)
    memo: dict = {}

    def deepest(node: str, seen: frozenset) -> int:
        if node in memo:
            return memo[node]
        if node in seen:                     # recursion: not bounded statically; count the frame once
            return 0
        seen = seen | {node}
        callees = edges.get(node, [])
        if "__indirect_call" in callees:      # any kernel or runtime function may be the target
            callees = [c for c in callees if c != "__indirect_call"] + \
                [t for t in frames if owner.get(t, "").startswith("ck_") or owner.get(t) in kernel_stems]
        memo[node] = frames.get(node, 0) + max([deepest(c, seen) for c in callees] + [0])
        return memo[node]

    return deepest("byoc_reset_handler" if "byoc_reset_handler" in frames else "main", frozenset())


def measure(name: str, lane: str, targets, opt: str) -> dict:
    """One model on one lane: section sizes per part, arena per pool, stack used and its static bound."""
    cfg = _config(lane)
    mod = zoo.get(name)
    compile_link._OBJECT_CACHE.clear()      # compile every file here, so each writes its call graph (.ci)
    lib = byoc.build(byoc.partition_for(targets, mod) if targets else mod, toolchain=lane, executor="aot",
                     interface="unpacked", opt=opt, config=cfg)
    model_objs, driver_objs = lib._objects(False)   # the objects BuildResult links (compiled once)
    work = Path(tempfile.mkdtemp(prefix="embedded-"))
    exe, map_file = work / "image.elf", work / "image.map"
    libs, dirs = lib.link_libraries()
    argv = tcmod.link_exe_argv(lib.toolchain, driver_objs + model_objs, exe, libs, dirs, lib._built[(LINKER_SCRIPT,)])
    subprocess.run(argv + [f"-Wl,-Map={map_file}"], check=True, capture_output=True)
    startup = {o.stem for o in driver_objs} | {"byoc_main"}      # the checking image's main() is generated
    generated = {Path(rel).stem for rel in lib.sources()} - startup
    runtime = {f.stem for f in runtime_sources("aot", profile="freestanding")}
    sizes = map_sizes(map_file.read_text(), lambda p: _category(p, generated, runtime, startup))
    proc = run_runner_proc(exe, lib.toolchain.run, [zoo.inputs(name)[i["name"]] for i in lib.metadata["inputs"]],
                           work / "run", 1, lib.toolchain.timeout, what=f"{name} on {lane}")[1]
    used = re.search(r"stack_used=(\d+)", proc.stdout + proc.stderr)
    ci = sorted(Path(model_objs[0]).parent.glob("*.ci"))
    return {"sizes": sizes, "pools": lib.metadata["pools"], "stack_used": int(used.group(1)) if used else None,
            "stack_bound": static_stack_bound(ci, runtime), "workspace": lib.metadata["workspace_bytes"]}


def _row(name: str, lane: str, r: dict, tflm: dict) -> list[str]:
    """One table row; `lane` already says the targets."""
    ws = [p for p in r["pools"] if p["workspace_bytes"]]
    arena = sum(p["workspace_bytes"] for p in ws)
    lower = sum(p["workspace_lower_bound_bytes"] for p in ws)
    cells = [name, lane]
    for part in PARTS:
        vals = [r["sizes"].get((part, k), 0) for k in SECTIONS]
        cells.append("/".join(str(v) for v in vals) if any(vals) else "-")
    cells += [" ".join(f"{p['name']}:{p['workspace_bytes']}" for p in ws) or "0", str(lower),
              f"{arena / lower:.3f}" if lower else "-", str(tflm["total"]), str(tflm["head"]),
              f"{arena / tflm['total']:.2f}", str(r["stack_used"]), str(r["stack_bound"])]
    return cells


HEADER = (["model", "lane"] + [f"{p} text/rodata/data/bss" for p in PARTS]
          + ["arena per pool", "lower bound", "arena/lb", "TFLM total", "TFLM head", "arena/TFLM", "stack used",
             "stack bound"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--lanes", default=",".join(f"{lane}:{'+'.join(t) or 'host'}" for lane, t in LANES),
                    help="lane:targets, comma-separated (targets 'host' for host-only)")
    ap.add_argument("--opt", default="-Os")
    ap.add_argument("--markdown", action="store_true", help="a table for docs/bare-metal.md")
    args = ap.parse_args()
    rows = []
    for name in args.models.split(","):
        tflm = tflm_arena(name)
        for spec in args.lanes.split(","):
            lane, _, targets = spec.partition(":")
            targets = () if targets in ("", "host") else tuple(targets.split("+"))
            rows.append(_row(name, f"{lane} {'+'.join(targets) or 'host'}", measure(name, lane, targets, args.opt),
                             tflm))
            if not args.markdown:
                print("  ".join(f"{h}={c}" for h, c in zip(HEADER, rows[-1])), flush=True)
    if args.markdown:
        print("| " + " | ".join(HEADER) + " |\n|" + " --- |" * len(HEADER))
        for cells in rows:
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
