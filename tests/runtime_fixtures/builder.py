"""Builds the hand-written runtime fixture models (graph_model.c, aot_model.c) and drivers with a
given compiler. Test modules use these through session-scoped fixtures so each variant compiles once."""
import contextlib
import copy
import fcntl
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np

from byoc_compiler import runtime

HERE = Path(__file__).resolve().parent
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-g"]
OPT = ["-O1"]
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
SAN_ENV = {"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0:exitcode=99",
           "UBSAN_OPTIONS": "halt_on_error=1:exitcode=98:print_stacktrace=1"}

F32 = "float32"


def _op(name, func, inputs, num_outputs=1):
    return {"op": "tvm_op", "name": name, "inputs": [[n, i, 0] for n, i in inputs],
            "attrs": {"func_name": func, "num_inputs": str(len(inputs)), "num_outputs": str(num_outputs),
                      "flatten_data": "0"}}


# out0 = relu(x + y + p0), out1 = -relu(x + y + p0)   (see graph_model.c)
GRAPH = {
    "nodes": [
        {"op": "null", "name": "x", "inputs": []},
        {"op": "null", "name": "y", "inputs": []},
        {"op": "null", "name": "p0", "inputs": []},
        _op("add0", "k_add", [(0, 0), (1, 0)]),
        _op("bias", "k_bias_add", [(3, 0), (2, 0)]),
        _op("relu", "k_relu", [(4, 0)]),
        _op("split", "k_split2", [(5, 0)], num_outputs=2),
        _op("add1", "k_add", [(6, 0), (6, 1)]),
    ],
    "arg_nodes": [0, 1, 2],
    "heads": [[7, 0, 0], [6, 1, 0]],
    "node_row_ptr": [0, 1, 2, 3, 4, 5, 6, 8, 9],
    "attrs": {
        "dltype": ["list_str", [F32] * 9],
        "shape": ["list_shape", [[2, 3], [2, 3], [3], [2, 3], [2, 3], [2, 3], [2, 3], [2, 3], [2, 3]]],
        # the plan as memory_plan writes it: inputs and p0 own ids 0-2; add0's and relu's outputs and add1's
        # share 3, bias's and split's first 4 (each dead before the next is written); split's second, a head, 5
        "storage_id": ["list_int", [0, 1, 2, 3, 4, 3, 4, 5, 3]],
    },
}
P0 = np.array([0.5, -1.0, 2.0], dtype=np.float32)
# three storage ids of intermediates (3, 4, 5) -> three 64-byte-aligned blocks of 24 bytes
GRAPH_WORKSPACE = 3 * 64


def graph_json(graph=None) -> str:
    return json.dumps(GRAPH if graph is None else graph)


def graph_copy() -> dict:
    return copy.deepcopy(GRAPH)


def params_blob(params=None) -> bytes:
    return runtime.save_params({"p0": P0} if params is None else params)


def graph_reference(x, y):
    r = np.maximum(x + y + P0, 0)
    return [r, -r]


def aot_reference(a, b):
    return [a * 3 + 1, b * np.float32(0.5)]


def _c_string(text: str) -> str:
    return "".join(f"\\{b:03o}" if not (32 <= b < 127) or chr(b) in '"\\?' else chr(b) for b in text.encode())


def write_data_header(out_dir: Path, graph: str, params: bytes) -> Path:
    """graph_model_data.h: the embedded graph.json text and params blob."""
    body = ", ".join(str(b) for b in params)
    text = (f'static const char kGraphJson[] = "{_c_string(graph)}";\n'
            f"static const unsigned char kParams[] = {{{body}}};\n")
    header = out_dir / "graph_model_data.h"
    if not header.exists() or header.read_text() != text:
        header.write_text(text)
    return out_dir


def compile_c(cc: str, sources, out: Path, *, flags=(), shared=False, include=(), ldflags=("-lm",)) -> Path:
    """Compiles and links; raises with the compiler's output on failure."""
    cmd = [cc, *STRICT, *(() if SANITIZE[0] in flags else OPT), *flags, *runtime.include_flags(), *[f"-I{d}" for d in include]]
    cmd += ["-shared", "-fPIC"] if shared else []
    cmd += [str(s) for s in sources] + ["-o", str(out), *ldflags]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"compile failed: {' '.join(cmd)}\n{proc.stderr}")
    return out


def have(cc: str) -> bool:
    return shutil.which(cc) is not None


@contextlib.contextmanager
def _locked(out_dir: Path):
    """Builds of one directory are serialized across processes (xdist workers share the directory)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _fresh(out: Path, sources) -> bool:
    """Up to date with the given sources, every runtime header and every fixture source."""
    deps = [*map(Path, sources), *runtime.include_dir().rglob("*.h"), *runtime.source_dir().glob("*.h"),
            *HERE.glob("*.c"), *out.parent.glob("*.h")]
    return out.exists() and all(out.stat().st_mtime >= d.stat().st_mtime for d in deps)


def build_model(kind: str, cc: str, out_dir: Path, *, runner: bool, sanitize=False, flags=(), ldflags=("-lm",)):
    """kind "graph" or "aot": a runner executable (runner=True) or a shared library."""
    with _locked(out_dir):
        return _build_model(kind, cc, out_dir, runner=runner, sanitize=sanitize, flags=flags, ldflags=ldflags)


def _build_model(kind, cc, out_dir, *, runner, sanitize, flags, ldflags):
    executor = "graph" if kind == "graph" else "aot"
    sources = runtime.runtime_sources(executor, runner=runner) + [HERE / f"{kind}_model.c"]
    include = ()
    if kind == "graph":
        include = (write_data_header(out_dir, graph_json(), params_blob()),)
    extra = list(flags) + (SANITIZE if sanitize else [])
    lf = list(ldflags) + (["-fsanitize=address,undefined"] if sanitize else [])
    name = f"{kind}_{'runner' if runner else 'lib'}" + ("" if runner else ".so")
    if _fresh(out_dir / name, sources):
        return out_dir / name
    return compile_c(cc, sources, out_dir / name, flags=extra, shared=not runner, include=include, ldflags=lf)


def build_graph_check(cc: str, out_dir: Path, sanitize=True) -> Path:
    sources = runtime.runtime_sources("graph") + [HERE / "graph_check.c"]
    with _locked(out_dir):
        if _fresh(out_dir / "graph_check", sources):
            return out_dir / "graph_check"
        return compile_c(cc, sources, out_dir / "graph_check", flags=SANITIZE if sanitize else (),
                         ldflags=["-lm"] + (["-fsanitize=address,undefined"] if sanitize else []))
