"""What an exact uint8 x int8 product costs this x86 CPU against onnxruntime's saturating one, in registers.

    python bench/int8_products.py [--rounds 7]

Without VNNI (AVX2 only: Zen 1-3, Intel before Ice Lake/Alder Lake) there is no instruction that multiplies
uint8 by int8 and adds into int32. onnxruntime's uint8 x int8 kernels use vpmaddubsw (two products summed in
int16, which saturates past 32767: 255 * 127 * 2 = 64770), vpmaddwd by ones to widen, vpaddd: three
instructions per 32 multiply-adds. ccompiler's exact AVX2 kernel widens both operands to int16 and uses
vpmaddwd + vpaddd: four per 32. This prints the time of each sequence on 8 independent accumulators (no loads,
no dependencies between them), in ns per 256 multiply-adds, medians of --rounds alternated runs, and the
ratio exact / saturating: the least an exact kernel at its instruction bound costs against one at the
saturating sequence's, whatever its loads and packing. Where the CPU has AVX512-VNNI or AVX-VNNI it also
times vpdpbusd (one exact instruction per 32 or 64 multiply-adds). The FMA line is float32 for scale.
"""
from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ITERATIONS = 20_000_000

# one loop body per sequence: 256 multiply-adds into accumulators ymm0..ymm7 (operands ymm12..ymm15)
SEQUENCES = {
    "exact: vpmaddwd + vpaddd (ccompiler's AVX2)": "".join(
        f"vpmaddwd %%ymm12,%%ymm13,%%ymm8\\n vpaddd %%ymm8,%%ymm{a},%%ymm{a}\\n"
        f"vpmaddwd %%ymm14,%%ymm15,%%ymm9\\n vpaddd %%ymm9,%%ymm{a},%%ymm{a}\\n" for a in range(8)),
    "saturating: vpmaddubsw + vpmaddwd + vpaddd (onnxruntime's AVX2)": "".join(
        f"vpmaddubsw %%ymm12,%%ymm13,%%ymm8\\n vpmaddwd %%ymm8,%%ymm14,%%ymm8\\n vpaddd %%ymm8,%%ymm{a},%%ymm{a}\\n"
        for a in range(8)),
    "float32 FMA (256 multiply-adds in 32 vfmadd231ps)": "".join(
        f"vfmadd231ps %%ymm12,%%ymm13,%%ymm{a}\\n" for a in range(8)) * 4,
}
VNNI = {
    "exact: vpdpbusd ymm (AVX512-VNNI / AVX-VNNI)": "".join(
        f"{{vex}} vpdpbusd %%ymm12,%%ymm13,%%ymm{a}\\n" for a in range(8)),
}

SOURCE = r"""
#include <stdio.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(void) {
  long n = @N@;
  double t;
  __asm__ volatile("vpcmpeqd %%ymm12,%%ymm12,%%ymm12\n vpabsb %%ymm12,%%ymm13\n vpabsw %%ymm12,%%ymm14\n"
                   "vpabsw %%ymm12,%%ymm15\n" ::: "xmm12", "xmm13", "xmm14", "xmm15");
  t = now();
  __asm__ volatile("1:\n @BODY@ dec %0\n jnz 1b\n" : "+r"(n) :: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5",
                   "xmm6", "xmm7", "xmm8", "xmm9");
  printf("%.6f\n", (now() - t) / @N@ * 1e9);
  return 0;
}
"""


def cpu_name() -> str:
    """'model name (family F model M)' from /proc/cpuinfo: the name alone does not tell Zen 3 from Zen 5."""
    fields = {}
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []:
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return f"{fields.get('model name', platform.processor())} (family {fields.get('cpu family', '?')} model " \
           f"{fields.get('model', '?')})"


def has_vnni() -> bool:
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    return " avx512_vnni" in flags or " avx_vnni" in flags


def build(tmp: Path, name: str, body: str) -> Path:
    src, exe = tmp / f"{name}.c", tmp / name
    src.write_text(SOURCE.replace("@N@", str(ITERATIONS)).replace("@BODY@", body))
    flags = ["-mavx2", "-mavxvnni"] if "vpdpbusd" in body else ["-mavx2"]
    subprocess.run(["gcc", "-O2", *flags, str(src), "-o", str(exe)], check=True)
    return exe


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    if platform.machine() not in ("x86_64", "AMD64"):
        print(f"int8 product sequences: x86-64 only (this machine: {platform.machine()})")
        return
    sequences = dict(SEQUENCES, **(VNNI if has_vnni() else {}))
    with tempfile.TemporaryDirectory(prefix="byoc-int8-products-") as tmp:
        exes = {label: build(Path(tmp), f"seq{i}", body) for i, (label, body) in enumerate(sequences.items())}
        times: dict[str, list[float]] = {label: [] for label in sequences}
        for _ in range(args.rounds):                       # alternated: a slow stretch hits every sequence
            for label, exe in exes.items():
                out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
                times[label].append(float(out))
    print(f"{cpu_name()}; ns per 256 multiply-adds on 8 independent accumulators, medians of {args.rounds} alternated runs")
    print("| sequence | ns / 256 | / saturating |")
    print("| --- | --- | --- |")
    saturating = statistics.median(times[next(k for k in times if k.startswith("saturating"))])
    for label, values in times.items():
        median = statistics.median(values)
        print(f"| {label} | {median:.3f} | {median / saturating:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
