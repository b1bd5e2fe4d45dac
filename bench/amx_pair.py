"""Do the two vCPUs share one AMX unit? A tile-only loop on each CPU alone and on both at once.

    python bench/amx_pair.py [--iters 2000000] [--rounds 3]

Each thread, pinned to its CPU, configures eight 16 x 64-byte tiles and runs --iters rounds of four independent
tdpbssd (tiles 0-3 += 4/5 x 6/7): no memory traffic at all, so its time is the tile unit's throughput
(tdpbssd: 16 x 16 x 64 multiply-adds, one per 16 cycles on Sapphire Rapids). The same for a loop of ten
independent AVX512-VNNI vpdpbusd on registers (the vector units), for comparison. Printed per round: each CPU
alone, both at once, and both-at-once time / alone time (1.0: each CPU has its own unit; 2.0: they share one).
Needs x86-64 Linux with AMX-INT8 (the tile state is asked with arch_prctl), gcc 11 or later, at least 2 CPUs.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = r"""
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef struct { unsigned char palette, start_row, reserved[14]; unsigned short colsb[16]; unsigned char rows[16]; } cfg_t;
static const cfg_t cfg __attribute__((aligned(64))) = {1, 0, {0}, {64, 64, 64, 64, 64, 64, 64, 64},
                                                       {16, 16, 16, 16, 16, 16, 16, 16}};
static signed char tile_data[16 * 64] __attribute__((aligned(64)));
static long iters;
static int vnni;
static pthread_barrier_t start;
static double ms[2];

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e3 + t.tv_nsec * 1e-6; }

__attribute__((target("amx-tile,amx-int8"))) static void amx_loop(long n) {
  long i;
  _tile_loadconfig(&cfg);
  _tile_loadd(4, tile_data, 64); _tile_loadd(5, tile_data, 64); _tile_loadd(6, tile_data, 64); _tile_loadd(7, tile_data, 64);
  _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
  for (i = 0; i < n; ++i) { _tile_dpbssd(0, 4, 6); _tile_dpbssd(1, 4, 7); _tile_dpbssd(2, 5, 6); _tile_dpbssd(3, 5, 7); }
  _tile_release();
}

static void vnni_loop(long n) {
  long i;
  for (i = 0; i < n * 4; ++i)
    __asm__ volatile("vpdpbusd %%zmm30, %%zmm31, %%zmm0\n\tvpdpbusd %%zmm30, %%zmm31, %%zmm1\n\t"
                     "vpdpbusd %%zmm30, %%zmm31, %%zmm2\n\tvpdpbusd %%zmm30, %%zmm31, %%zmm3\n\t"
                     "vpdpbusd %%zmm30, %%zmm31, %%zmm4\n\tvpdpbusd %%zmm30, %%zmm31, %%zmm5\n\t"
                     "vpdpbusd %%zmm30, %%zmm31, %%zmm6\n\tvpdpbusd %%zmm30, %%zmm31, %%zmm7\n\t"
                     "vpdpbusd %%zmm30, %%zmm31, %%zmm8\n\tvpdpbusd %%zmm30, %%zmm31, %%zmm9\n\t" ::: "xmm0", "xmm1",
                     "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9");
}

static void *run(void *arg) {
  const long cpu = (long)arg;
  cpu_set_t set;
  double t;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  pthread_barrier_wait(&start);
  t = now();
  if (vnni) vnni_loop(iters); else amx_loop(iters);
  ms[cpu] = now() - t;
  return NULL;
}

static void once(int n_threads, long first_cpu) {
  pthread_t t[2];
  long i;
  pthread_barrier_init(&start, NULL, (unsigned)n_threads);
  for (i = 0; i < n_threads; ++i) pthread_create(&t[i], NULL, run, (void *)(first_cpu + i));
  for (i = 0; i < n_threads; ++i) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&start);
}

int main(int argc, char **argv) {
  double a0, a1;
  iters = atol(argv[1]);
  vnni = atoi(argv[2]);
  if (!vnni && syscall(SYS_arch_prctl, 0x1023, 18) != 0) { puts("no AMX tile permission"); return 1; }
  once(1, 0); a0 = ms[0];
  once(1, 1); a1 = ms[1];
  once(2, 0);
  printf("%.1f %.1f %.1f %.1f\n", a0, a1, ms[0], ms[1]);
  return 0;
}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=2000000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "amx_pair"
        (Path(tmp) / "amx_pair.c").write_text(SOURCE)
        subprocess.run(["gcc", "-O2", "-o", str(exe), str(Path(tmp) / "amx_pair.c"), "-pthread"], check=True)
        print("loop              round  cpu0 alone ms  cpu1 alone ms  both: cpu0, cpu1 ms  both / alone")
        for unit, flag in (("amx tdpbssd", "0"), ("avx512 vpdpbusd", "1")):
            for r in range(args.rounds):
                out = subprocess.run([str(exe), str(args.iters), flag], capture_output=True, text=True, check=True)
                a0, a1, b0, b1 = map(float, out.stdout.split())
                ratio = max(b0, b1) / max(a0, a1)
                print(f"{unit:17s} {r + 1:5d}  {a0:13.1f}  {a1:13.1f}  {b0:9.1f}, {b1:9.1f}  {ratio:12.2f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
