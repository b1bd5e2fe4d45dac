"""The fuzz targets of tests/fuzz (docs/fuzzing.md): every saved finding replays clean, and every target
runs for a short bounded time (CI's share of the campaigns bench/fuzz.py runs for minutes).

- test_c_seeds_and_regressions: each C target built standalone with gcc -fsanitize=address,undefined runs
  its seed corpus and every saved input under tests/fuzz/regressions/<target>/.
- test_python_regressions: each saved input goes through the same function atheris fuzzes.
- test_short_fuzz_run (marked `fuzz`): libFuzzer / atheris for 1 s each in the default run (one C and one
  Python target: SMOKE_DEFAULT), every target for 20 s with `-m fuzz`, BYOC_FUZZ_SECONDS if set
  (tests/conftest.py: fuzz_seconds);
  a finding fails the test naming the saved input (fix it, then copy the input into regressions/).
  The targets' own harnesses (examplejson, dnnl) run in tests/test_target_fuzz.py.
"""
import os
import subprocess

import pytest

import needs
from fuzz import campaign
from fuzz.py_targets import TARGETS as PY_TARGETS

C_TARGETS = [t for t in campaign.TARGETS if t.is_c and t.name != "examplejson"]
SHORT = [t for t in campaign.TARGETS if t.name != "examplejson"]
# The default run's smoke run: one C target (libFuzzer: its build and start-up; the Python targets' findings
# replay in test_python_regressions); the others are marked `every_fuzz_target` (`-m fuzz` runs them all). Six
# smoke runs were 43 s of the default run for 6 s of fuzzing (each builds its harness and imports its parsers),
# the atheris one (`text`) 8.5 s on the sixteenth session's slower CPU.
SMOKE_DEFAULT = ("params",)


@pytest.mark.parametrize("target", C_TARGETS, ids=lambda t: t.name)
def test_c_seeds_and_regressions(target, tmp_path):
    needs.programs("gcc")
    exe = campaign.build(target, tmp_path / f"fuzz_{target.name}", libfuzzer=False)
    corpus = tmp_path / "corpus"
    count = campaign.write_seeds(target, corpus)
    files = sorted(corpus.iterdir())
    proc = subprocess.run([exe, *files], capture_output=True, text=True, timeout=600,
                          env={**os.environ, **campaign.ENV})
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert f"ran {len(files)} inputs" in proc.stdout and len(files) == count > 5


@pytest.mark.parametrize("name", sorted(PY_TARGETS))
def test_python_regressions(name):
    inputs = campaign.BY_NAME[name].regression_inputs()
    assert inputs, f"tests/fuzz/regressions/{name}/ holds the findings of the {name} fuzzer"
    for path in inputs:
        PY_TARGETS[name](path.read_bytes())  # returns, or raises a ByocError inside (caught there)


@pytest.mark.fuzz
@pytest.mark.parametrize("target", [
    pytest.param(t, id=t.name, marks=[] if t.name in SMOKE_DEFAULT else [pytest.mark.every_fuzz_target])
    for t in SHORT])
def test_short_fuzz_run(target, tmp_path, fuzz_seconds):
    if target.is_c:
        needs.programs("clang", hint="libFuzzer comes with clang (bash scripts/setup.sh)")
    seconds = fuzz_seconds(20)
    result = campaign.run(target, tmp_path, seconds)
    print(f"{target.name}: {result.executions} executions in {seconds:.0f} s, corpus {result.corpus}")
    assert not result.findings, (
        f"fuzzing {target.name} found {[p.name for p in result.findings]} in {tmp_path / 'findings'}; fix it, "
        f"then copy the input into tests/fuzz/regressions/{target.name}/\n" + result.log[-4000:])
    assert not result.failure, f"fuzzing {target.name}: {result.failure}\n" + result.log[-4000:]
    assert result.executions > 0, result.log[-4000:]
