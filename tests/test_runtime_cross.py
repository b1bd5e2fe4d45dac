"""The runner and .npy I/O on foreign CPUs under qemu-user, big-endian s390x included: the same
little-endian and big-endian .npy files and the little-endian params blob give the numpy results,
and outputs are written in the target's byte order with the matching descr."""
import os
import subprocess

import numpy as np
import pytest

import needs

from byoc_compiler.config import load_config
from runtime_fixtures import builder

CROSS = ["s390x-gcc", "aarch64-gcc"]  # one big-endian, one little-endian target keeps this quick

X = np.array([[1, -2, 3], [-4, 5, -6]], dtype=np.float32)
Y = np.full((2, 3), 0.5, dtype=np.float32)
A = np.array([3, -1, 1 << 20, 0], dtype=np.int32)
B = np.array([[1.0, -3.0], [0.125, 1e6]], dtype=np.float32)


@pytest.fixture(scope="session", params=CROSS)
def cross(request, tmp_path_factory):
    tc = load_config().toolchains[request.param]
    needs.toolchain(tc)
    out = tmp_path_factory.getbasetemp().parent / "byoc-runtime-build" / request.param
    runners = {kind: builder.build_model(kind, tc.cc, out, runner=True, flags=tc.cflags, ldflags=tc.ldflags)
               for kind in ("graph", "aot")}
    return tc, runners


def _run(tc, exe, *args, cwd):
    return subprocess.run([*tc.run, str(exe), *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          timeout=120, env=dict(os.environ))


@pytest.mark.parametrize("order", ["<", ">"], ids=["le-files", "be-files"])
def test_graph_model_under_qemu(cross, tmp_path, order):
    tc, runners = cross
    np.save(tmp_path / "x.npy", X.astype(order + "f4"))
    np.save(tmp_path / "y.npy", Y.astype(order + "f4"))
    proc = _run(tc, runners["graph"], "--repeat", "3", "x.npy", "y.npy", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("median_ms=")
    native = ">" if tc.arch == "s390x" else "<"
    for i, want in enumerate(builder.graph_reference(X, Y)):
        got = np.load(tmp_path / f"out{i}.npy")
        assert got.dtype.str == native + "f4"
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("order", ["<", ">"], ids=["le-files", "be-files"])
def test_aot_model_under_qemu(cross, tmp_path, order):
    tc, runners = cross
    np.save(tmp_path / "a.npy", A.astype(order + "i4"))
    np.save(tmp_path / "b.npy", B.astype(order + "f4"))
    proc = _run(tc, runners["aot"], "a.npy", "b.npy", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for i, want in enumerate(builder.aot_reference(A, B)):
        np.testing.assert_array_equal(np.load(tmp_path / f"out{i}.npy"), want)


def test_malformed_params_rejected_under_qemu(cross, tmp_path):
    tc, runners = cross
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "y.npy", Y)
    (tmp_path / "p.bin").write_bytes(builder.params_blob()[:-2])
    proc = _run(tc, runners["graph"], "--params", "p.bin", "x.npy", "y.npy", cwd=tmp_path)
    assert proc.returncode == 1 and "params blob: truncated" in proc.stderr, proc.stderr
