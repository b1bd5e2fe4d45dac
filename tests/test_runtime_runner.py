"""Standalone runner + .npy I/O (AOT-style fixture model: a int32[4], b float32[2,2]):
byte orders, format versions, strict header checks, --inputs, --repeat, usage errors."""
import io

import numpy as np
import pytest

from runtime_fixtures import builder
from runtime_fixtures.fixtures import aot_runner, assert_clean_failure, rt_dir, run  # noqa: F401

A = np.array([1, -2, 300000, -7], dtype=np.int32)
B = np.array([[1.5, -2.25], [1e-3, 6e5]], dtype=np.float32)


def _save(path, arr, version=None):
    with open(path, "wb") as f:
        np.lib.format.write_array(f, arr, version=version)
    return path


def _expect_outputs(d):
    for i, want in enumerate(builder.aot_reference(A, B)):
        got = np.load(d / f"out{i}.npy")
        assert got.dtype == want.dtype and got.dtype.byteorder in "=<|"
        np.testing.assert_array_equal(got, want)
        # the format's own rule (numpy writes it so): the header pads the data to a 64-byte boundary, so a
        # memory-mapped output is aligned; numpy reads a misaligned one without complaint
        raw = (d / f"out{i}.npy").read_bytes()
        assert raw[6:8] == b"\x01\x00" and (10 + int.from_bytes(raw[8:10], "little")) % 64 == 0, raw[:16]


@pytest.mark.parametrize("order", ["<", ">"], ids=["little-endian", "big-endian"])
@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)], ids=["v1", "v2", "v3"])
def test_reads_both_byte_orders_and_versions(aot_runner, tmp_path, order, version):
    a = _save(tmp_path / "a.npy", A.astype(order + "i4"), version)
    b = _save(tmp_path / "b.npy", B.astype(order + "f4"), version)
    proc = run([aot_runner, "--out", tmp_path, a, b])
    assert proc.returncode == 0, proc.stderr
    _expect_outputs(tmp_path)


def test_inputs_dir_uses_input_names(aot_runner, tmp_path):
    (tmp_path / "in").mkdir()
    np.save(tmp_path / "in" / "a.npy", A)
    np.save(tmp_path / "in" / "b.npy", B)
    proc = run([aot_runner, "--inputs", tmp_path / "in", "--out", tmp_path])
    assert proc.returncode == 0, proc.stderr
    _expect_outputs(tmp_path)


def test_repeat_prints_median(aot_runner, tmp_path):
    np.save(tmp_path / "a.npy", A)
    np.save(tmp_path / "b.npy", B)
    proc = run([aot_runner, "--repeat", "7", "--out", tmp_path, tmp_path / "a.npy", tmp_path / "b.npy"])
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stdout.splitlines()
    assert line.startswith("median_ms=") and float(line.split("=")[1]) >= 0
    _expect_outputs(tmp_path)


def test_single_run_prints_nothing(aot_runner, tmp_path):
    np.save(tmp_path / "a.npy", A)
    np.save(tmp_path / "b.npy", B)
    proc = run([aot_runner, "--out", tmp_path, tmp_path / "a.npy", tmp_path / "b.npy"])
    assert proc.returncode == 0 and proc.stdout == ""


def _raw_npy(header: str, data: bytes, version=1) -> bytes:
    h = header.encode("latin1")
    if version == 1:
        return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h + data
    return b"\x93NUMPY\x02\x00" + len(h).to_bytes(4, "little") + h + data


def _npy_bytes(arr):
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


GOOD_A = _npy_bytes(A)
# (id, bytes of a.npy, fragments of the expected message)
BAD_A = [
    ("wrong-dtype", _npy_bytes(A.astype(np.float64)), ["input 0 'a'", "has dtype float64, expected int32"]),
    ("wrong-dtype-int64", _npy_bytes(A.astype(np.int64)), ["dtype int64, expected int32"]),
    ("wrong-shape", _npy_bytes(A.reshape(2, 2)), ["has shape (2, 2), expected (4,)"]),
    ("scalar", _npy_bytes(np.int32(4)), ["has shape (), expected (4,)"]),
    ("fortran", _npy_bytes(np.asfortranarray(np.zeros((2, 2), np.int32))), ["Fortran order"]),
    ("truncated-data", GOOD_A[:-3], ["truncated (13 of 16 data bytes)"]),
    ("trailing-data", GOOD_A + b"\0", ["trailing bytes"]),
    ("truncated-header", GOOD_A[:40], ["header truncated"]),
    ("bad-magic", b"\x93NUMPZ" + GOOD_A[6:], ["bad magic"]),
    ("empty", b"", ["bad magic"]),
    ("version-9", b"\x93NUMPY\x09\x00" + GOOD_A[8:], ["format version 9.0"]),
    # an item size no dtype has (a mutant dropping the size check read it as some int32 and survived)
    ("three-byte-int", _raw_npy("{'descr': '<i3', 'fortran_order': False, 'shape': (4,), }\n", bytes(12)),
     ["unsupported .npy dtype"]),
    ("object-dtype", _raw_npy("{'descr': '|O', 'fortran_order': False, 'shape': (4,), }\n", b""), ["unsupported .npy dtype"]),
    ("structured", _raw_npy("{'descr': [('x', '<i4')], 'fortran_order': False, 'shape': (4,), }\n", b""),
     ["malformed .npy header"]),
    ("missing-shape", _raw_npy("{'descr': '<i4', 'fortran_order': False, }\n", A.tobytes()), ["malformed"]),
    ("extra-key", _raw_npy("{'descr': '<i4', 'fortran_order': False, 'shape': (4,), 'x': 1}\n", A.tobytes()),
     ["malformed"]),
    ("paren-not-tuple", _raw_npy("{'descr': '<i4', 'fortran_order': False, 'shape': (4), }\n", A.tobytes()),
     ["malformed"]),
    ("huge-dim", _raw_npy("{'descr': '<i4', 'fortran_order': False, 'shape': (99999999999999999999,), }\n", b""),
     ["malformed"]),
    ("header-len-huge", b"\x93NUMPY\x02\x00\xff\xff\xff\x7f{", ["too long"]),
    ("garbage-after-dict", _raw_npy("{'descr': '<i4', 'fortran_order': False, 'shape': (4,), } junk\n",
                                    A.tobytes()), ["malformed"]),
]


@pytest.mark.parametrize("content,fragments", [c[1:] for c in BAD_A], ids=[c[0] for c in BAD_A])
def test_bad_npy_is_rejected_naming_the_input(aot_runner, tmp_path, content, fragments):
    (tmp_path / "a.npy").write_bytes(content)
    np.save(tmp_path / "b.npy", B)
    proc = run([aot_runner, "--out", tmp_path, tmp_path / "a.npy", tmp_path / "b.npy"])
    assert_clean_failure(proc, str(tmp_path / "a.npy"), *fragments)


USAGE = [
    ("no-inputs", [], "takes 2 input(s): 'a', 'b'; 0 .npy file(s) given", 2),
    ("too-many", ["a.npy", "b.npy", "b.npy"], "3 .npy file(s) given", 2),
    ("missing-file", ["a.npy", "nope.npy"], "input 1 'b': cannot open", 1),
    ("repeat-zero", ["--repeat", "0", "a.npy", "b.npy"], "--repeat needs an integer", 2),
    ("repeat-text", ["--repeat", "x", "a.npy", "b.npy"], "--repeat needs an integer", 2),
    ("repeat-no-value", ["a.npy", "b.npy", "--repeat"], "missing value after: --repeat", 2),
    ("unknown-option", ["--fast", "a.npy", "b.npy"], "unknown option: --fast", 2),
    ("both-input-forms", ["--inputs", ".", "a.npy", "b.npy"], "not both", 2),
    ("graph-on-aot", ["--graph", "g.json", "a.npy", "b.npy"], 'need a model built with executor="graph"', 2),
    ("out-dir-missing", ["--out", "no/such/dir", "a.npy", "b.npy"], "cannot create", 1),
]


@pytest.mark.parametrize("args,fragment,code", [c[1:] for c in USAGE], ids=[c[0] for c in USAGE])
def test_usage_errors(aot_runner, tmp_path, args, fragment, code):
    np.save(tmp_path / "a.npy", A)
    np.save(tmp_path / "b.npy", B)
    proc = run([aot_runner, *args], cwd=tmp_path)
    assert_clean_failure(proc, fragment)
    assert proc.returncode == code


# ---- byoc_compiler.runtime.runner.run_runner: how the SCons check and the test matrix run a runner
def test_check_run_runner_returns_the_outputs(aot_runner, tmp_path):
    from byoc_compiler.runtime.runner import run_runner

    got = run_runner(aot_runner, [], {"b": B, "a": A}, ["a", "b"], tmp_path)
    for g, want in zip(got, builder.aot_reference(A, B), strict=True):
        np.testing.assert_array_equal(g, want)


RUNNER_FAILURES = [
    ("missing-program", lambda exe: ([], "/no/such/runner", {"a": A, "b": B}), "program '/no/such/runner' not found"),
    ("missing-run-prefix", lambda exe: (["no-such-qemu"], exe, {"a": A, "b": B}), "program 'no-such-qemu' not found"),
    ("wrong-shape", lambda exe: ([], exe, {"a": A[:2], "b": B}), "failed (exit code"),
]


@pytest.mark.parametrize("make,fragment", [c[1:] for c in RUNNER_FAILURES], ids=[c[0] for c in RUNNER_FAILURES])
def test_check_run_runner_failure_is_one_byoc_error(aot_runner, tmp_path, make, fragment):
    from byoc_compiler.runtime.runner import run_runner
    from byoc_compiler.errors import ByocError

    prefix, exe, inputs = make(aot_runner)
    with pytest.raises(ByocError, match=fragment.replace("(", r"\(")):
        run_runner(exe, prefix, inputs, ["a", "b"], tmp_path)


def test_an_output_the_descriptor_gives_no_size_is_refused(rt_dir, tmp_path):
    """A descriptor whose output has no byte size (0-bit floats): the runner stops with a message before it
    runs the model (which would write through the output it could not allocate)."""
    runner = builder.build_model("aot", "gcc", rt_dir / "aot-bad-output", runner=True,
                                 flags=["-O0", "-DBYOC_FIXTURE_BAD_OUTPUT"])
    np.save(tmp_path / "a.npy", A)
    np.save(tmp_path / "b.npy", B)
    proc = run([runner, "--out", tmp_path, tmp_path / "a.npy", tmp_path / "b.npy"])
    assert_clean_failure(proc, "output 1: invalid shape/dtype")
    assert not (tmp_path / "out0.npy").exists()
