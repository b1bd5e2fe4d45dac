"""A firmware-ready export: one tar in the layout of TVM's Model Library Format (docs/bare-metal.md).

    metadata.json                  what was built: pools (bytes, alignment), memory per function, inputs and
                                   outputs, constants, the flags and the include path of every part
    codegen/host/src/              host.c (with <mod>_run), each C region's source, byoc_constants.S + .bin
    codegen/host/include/<mod>.h   the model's interface
    codegen/lib/<target>/          the kernel library files a region references (kernel_sources.py), and the
                                   headers of its include directories
    runtime/src/                   the runtime core, core.c and parallel.c (a firmware build defines
                                   BYOC_FREESTANDING: parallel.c is then a serial loop)
    runtime/include/               byoc/core.h, runtime.h, parallel.h and dlpack/dlpack.h (what generated code includes)
    parameters/<mod>.params        the constants main passes to kernels, in byoc's params format
    src/model.txt                  the partitioned model's IR text (+ model.txt.bin: its large constants)

A firmware project compiles every .c and .S under codegen/ and runtime/src with its own build: nothing in
the export allocates, prints, opens files or needs an OS (tests/test_baremetal.py runs `nm -u` over the
objects and builds docs/bare-metal.md's Makefile example for cortex-m55 under qemu).
"""
from __future__ import annotations

import io
import json
import tarfile
import time
from pathlib import Path

from ..errors import ByocError
from ..runtime import dlpack_include_dir, include_dir, source_dir

MLF_VERSION = 1
RUNTIME_HEADERS = ("byoc/core.h", "byoc/runtime.h", "byoc/parallel.h")
RUNTIME_SOURCES = ("core.c", "parallel.c")      # runtime_sources(profile="freestanding") without the runner


def mlf_files(result) -> dict[str, bytes]:
    """Relative path in the tar -> bytes, for a BuildResult with a firmware interface."""
    fw = result.firmware
    if fw is None:
        raise ByocError("export_model_library_format: only AOT + unpacked builds with linked constants and no "
                        "blob regions have a firmware interface; build with executor='aot', interface='unpacked', "
                        f"constants='linked' (this build: {result.executor}, {result.interface}, "
                        f"{result.constants_mode}, targets {', '.join(result.metadata['targets']) or 'none'})")
    out: dict[str, bytes] = {}
    for rel, text in result.sources().items():
        if rel.startswith("src/") and rel != "src/byoc_main.c":        # the checking image's main is byoc's
            out["codegen/host/" + rel] = text.encode()
    for rel, data in result.constant_files().items():
        out["codegen/host/" + rel] = data if isinstance(data, bytes) else data.encode()
    out[f"codegen/host/include/{fw.header_name}"] = result.firmware_files()[f"include/{fw.header_name}"].encode()
    libs = _library_files(result)
    out.update(libs)
    for name in RUNTIME_SOURCES:
        out[f"runtime/src/{name}"] = (source_dir() / name).read_bytes()
    for rel in RUNTIME_HEADERS:
        out[f"runtime/include/{rel}"] = (include_dir() / rel).read_bytes()
    out["runtime/include/dlpack/dlpack.h"] = (dlpack_include_dir() / "dlpack" / "dlpack.h").read_bytes()
    out[f"parameters/{fw.prefix}.params"] = result.params_blob
    text, sidecar = result.model_text_with_sidecar()
    out["src/model.txt"] = text.encode()
    if sidecar:
        out["src/model.txt.bin"] = sidecar
    out["metadata.json"] = (json.dumps(_metadata(result, sorted({p.split("/")[2] for p in libs})), indent=2)
                            + "\n").encode()
    return out


def _library_files(result) -> dict[str, bytes]:
    """codegen/lib/<target>/: the library sources the build compiles, and every header of their include dirs."""
    out: dict[str, bytes] = {}
    owner = {}
    for symbol, target in result.region_targets.items():
        for f in target.runtime_sources:
            owner[Path(f)] = (target.name, list(target.include_dirs) + list(result.artifacts[symbol].include_dirs))
    for src, _ in result.library_sources():
        name, incs = owner.get(Path(src), ("lib", []))
        out[f"codegen/lib/{name}/{Path(src).name}"] = Path(src).read_bytes()
        for d in incs:
            for h in sorted(Path(d).glob("*.h")):
                out[f"codegen/lib/{name}/{h.name}"] = h.read_bytes()
    return out


def _metadata(result, libraries: list[str]) -> dict:
    fw, meta = result.firmware, result.metadata
    regions = {r["symbol"]: r for r in meta["regions"]}
    functions = [{"name": s.symbol, "kind": "region" if s.symbol in regions else "host kernel",
                  "target": regions[s.symbol]["target"] if s.symbol in regions else "host",
                  "workspace_bytes": int(getattr(result.artifacts.get(s.symbol), "workspace_bytes", 0) or 0)}
                 for s in dict((s.symbol, s) for s in result.program.steps).values()]
    return {
        "version": MLF_VERSION, "producer": "byoc", "model_name": fw.prefix, "export_datetime":
            time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime()),
        "toolchain": meta["toolchain"], "arch": meta["arch"], "executor": "aot", "interface": "unpacked",
        "run_function": f"{fw.prefix}_run", "header": f"codegen/host/include/{fw.header_name}",
        "memory": {"pools": [{"name": p.name, "size_bytes": p.size, "alignment": p.alignment,
                              "kinds": ["workspace"]} for p in fw.pools],
                   "constants_bytes": fw.constants_bytes, "functions": functions,
                   # the board's pools as the planner filled them (backend/pools.py): used beside the lower bound
                   "board_pools": meta.get("pools", [])},
        "inputs": meta["inputs"], "outputs": meta["outputs"],
        "build": {"defines": ["BYOC_FREESTANDING", "BYOC_UNPACKED_API"],
                  "include_dirs": ["codegen/host/include", "runtime/include",
                                   *(f"codegen/lib/{n}" for n in libraries)],
                  "assembler_include_dirs": ["codegen/host/src"],
                  "sources": ["codegen/host/src/**/*.c", "codegen/host/src/*.S", "codegen/lib/*/*.c",
                              "runtime/src/*.c"],
                  "libm": "the functions docs/bare-metal.md lists; link -lm",
                  "cflags_used_by_byoc": [*result.toolchain.cflags, result.opt]},
    }


def write_tar(files: dict[str, bytes], path) -> Path:
    """The files as one tar (deterministic order and times; written to a temp name, then renamed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with tarfile.open(tmp, "w") as tar:
        for rel in sorted(files):
            info = tarfile.TarInfo(rel)
            info.size = len(files[rel])
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(files[rel]))
    tmp.replace(path)
    return path
