"""Tests that can fail: no test skips or swallows an error except for a specific, listed reason.

Two layers. At run time, in CI, tests/skip_policy.py fails every skip or xfail whose reason is not on
the reviewed tests/skip_allowlist.toml (whatever form produced it). Here, in the sources of tests/ and
byoc_compiler/testing/ (the check's own code), every skip form and every error-swallowing form is listed
with why it is specific: a missing program goes through matrix/needs.py (a skip on a developer's
machine, a failure under BYOC_REQUIRE_TOOLCHAINS=1, which CI sets). A new one fails this test until it
is made specific or listed. (An early `return` in a test is not detected by either layer.)"""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import needs
import skip_policy

TESTS = Path(__file__).resolve().parent
CHECK_CODE = TESTS.parent / "byoc_compiler" / "testing"
PATTERN = re.compile(r"pytest\.skip\(|importorskip\(|mark\.skipif|mark\.skip\(|mark\.xfail|pytest\.xfail\("
                     r"|suppress\(|except\s*:|except\s+(Base)?Exception\b")

ALLOWED = {
    # the one place a missing program becomes a skip (or, in CI, a failure)
    ("matrix/needs.py", "pytest.skip("),
    # the sanitizer build runs this file again under ASan: the compile-only cases need not run twice
    ("test_ccompiler_kernels.py", "mark.skipif"),
    ("test_ccompiler_reduce_resize_kernels.py", "mark.skipif"),
    # a matrix case whose target is disabled in config.toml or has no codegen (the matrix covers every target)
    ("matrix/conftest.py", "pytest.skip("),
    # fuzz triage mode saves every unexpected exception instead of stopping; the plain targets do not catch
    ("fuzz/py_targets.py", "except Exception"),
    # known build failures of ONNX conformance cases, strict: the test fails when one starts to pass
    ("test_onnx_conformance.py", "mark.xfail"),
    # a batched conformance build that fails in any way is halved to the cases that fail, each reported
    # with its error: the test fails either way
    ("test_onnx_conformance.py", "except Exception"),
    # the conformance allow-list generator records every refusal with its exception type (it does not pass)
    ("onnx_conformance.py", "except Exception"),
    # the fake libraries of test_load_says_what_the_file_is are foreign only to an x86_64 host
    ("test_bad_inputs.py", "mark.skipif"),
    # a child interpreter's code (a string) prints the exception's type; the test asserts it is a ByocError
    # the mutant replay's child (a string) reports a build or run the mutant broke; the test asserts which
    ("test_mutants_replay.py", "except Exception"),
    ("test_zoo_tiny.py", "except Exception"),
    # a reproducer's comment header that does not parse is left out; the model itself is written either way
    ("byoc_compiler/testing/random_graph/reproducer.py", "except Exception"),
}


def _hits():
    for path in sorted([*TESTS.rglob("*.py"), *CHECK_CODE.rglob("*.py")]):
        rel = path.relative_to(TESTS if path.is_relative_to(TESTS) else TESTS.parent).as_posix()
        if path == Path(__file__).resolve():
            continue  # its table quotes the patterns
        for n, line in enumerate(path.read_text().splitlines(), 1):
            m = PATTERN.search(line.split("#")[0])
            if m:
                yield rel, n, m.group(0).replace("Base", "") if m.group(0).startswith("except") else m.group(0)


def test_every_skip_and_broad_except_is_listed():
    unlisted = [f"{rel}:{n}: {what}" for rel, n, what in _hits()
                if (rel, re.sub(r"\s+", " ", what)) not in ALLOWED]
    assert not unlisted, ("skips or broad excepts without a specific reason (use needs.py for a missing program, "
                          "or catch the specific exception):\n" + "\n".join(unlisted))


def test_a_missing_program_fails_where_toolchains_are_required(monkeypatch):
    monkeypatch.setenv(needs.ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="byoc-no-such-program not installed.*BYOC_REQUIRE_TOOLCHAINS"):
        needs.programs("byoc-no-such-program")


def test_a_missing_program_skips_on_a_developer_machine(monkeypatch):
    monkeypatch.delenv(needs.ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="byoc-no-such-program not installed"):
        needs.programs("byoc-no-such-program")


@pytest.mark.parametrize("line", ["    pytest.mark.skip(reason='x')", "    pytest.xfail('later')",
                                  "    with contextlib.suppress(OSError):", "    with suppress(ValueError):"],
                         ids=["mark.skip", "pytest.xfail", "contextlib.suppress", "suppress"])
def test_every_skip_form_is_seen(line):
    assert PATTERN.search(line)


def test_allowlist_entries_are_reviewed():
    entries = skip_policy.load_allowlist()
    assert entries and all(len(e.why) > 30 for e in entries)
    assert skip_policy.unreviewed("tests/test_x.py::test_y", "compile-only, once", entries)      # other file
    assert not skip_policy.unreviewed("tests/test_ccompiler_kernels.py::test_compiles_without_warnings[gcc-O2]",
                                      "compile-only, once", entries)


SAMPLE = """
import pytest

def test_listed():
    pytest.skip("target 'dnnl' is disabled: set USE_DNNL = true in [backends]")

def test_unlisted():
    pytest.skip("not today")

@pytest.mark.xfail(reason="flaky", strict=True)
def test_xfail_unlisted():
    assert False

@pytest.mark.parametrize("cc", [])
def test_empty(cc):
    pass
"""


# in CI the empty parameter list fails at setup: pytest counts it as an error
@pytest.mark.parametrize("ci, expect", [("true", "2 failed, 1 skipped, 1 error"), ("", "3 skipped, 1 xfailed")],
                         ids=["ci", "developer"])
def test_ci_fails_unreviewed_skips(tmp_path, ci, expect):
    """In CI an unlisted skip, xfail or empty parameter list is a failure; a listed one stays a skip."""
    tests = tmp_path / "tests" / "matrix"
    tests.mkdir(parents=True)
    (tests / "test_sample.py").write_text(SAMPLE)
    env = {"PATH": "/usr/bin:/bin", "CI": ci, "PYTHONPATH": os.pathsep.join(map(str, (TESTS, TESTS / "matrix", TESTS.parent))), "HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "skip_policy", "-p", "no:cacheprovider",
                           "-p", "no:randomly", str(tests)], capture_output=True, text=True, cwd=tmp_path, env=env)
    tail = proc.stdout.strip().splitlines()[-1]
    assert tail.startswith(expect), proc.stdout[-3000:]
    if ci:
        assert proc.returncode == 1 and "not on the reviewed allow-list: 'not today'" in proc.stdout
