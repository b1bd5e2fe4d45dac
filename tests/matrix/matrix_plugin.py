"""pytest plugin of the test matrix: its command-line options, markers, parametrization and summary table.

Loaded by tests/conftest.py (`pytest_plugins`), so `pytest -n auto --matrix=full` works from the
repository root as well as for `pytest tests/matrix`.
"""
from __future__ import annotations

import os

import pytest

MARKERS = {
    "matrix": "a case of the differential test matrix (tests/matrix)",
    "random_graph": "a matrix case whose model is a random graph",
    "host": "matrix case without partitioning (everything as host C)",
    "ccompiler": "matrix case partitioned for the ccompiler target",
    "examplejson": "matrix case partitioned for the examplejson target",
    "dnnl": "matrix case partitioned for the dnnl target (oneDNN; x86-64 toolchains only)",
    "qemu": "matrix case whose runner runs under qemu-user",
    "sanitizer": "matrix case built with ASan/UBSan",
    "quantized": "matrix case whose model is a quantized (int8) ONNX model",
}


def pytest_addoption(parser):
    group = parser.getgroup("byoc matrix", "the differential test matrix (docs/matrix.md)")
    group.addoption("--matrix", choices=("pairwise", "full"), default="pairwise",
                    help="pairwise: a covering set with every pair of dimension values (default); "
                         "full: the whole product")
    group.addoption("--fuzz-minutes", type=float, default=0.0, metavar="N",
                    help="also build random graphs for N minutes (failures are shrunk and saved)")
    group.addoption("--matrix-cache", default=os.environ.get("BYOC_MATRIX_CACHE", ""), metavar="DIR",
                    help="SCons CacheDir shared by matrix builds (default build/.matrix-cache; 'none' disables)")
    group.addoption("--reproducer-dir", default="", metavar="DIR",
                    help="where shrunk reproducers of failing random graphs go (default build/matrix-failures)")
    group.addoption("--require-toolchains", action="store_true",
                    default=bool(os.environ.get("BYOC_REQUIRE_TOOLCHAINS")),
                    help="fail (instead of skip) cases whose toolchain is not installed; also "
                         "BYOC_REQUIRE_TOOLCHAINS=1")


def pytest_configure(config):
    import matrix_harness as h

    # Markers pyproject.toml already registers are not added twice.
    names = {line.split(":", 1)[0].strip() for line in config.getini("markers")}
    for name, text in MARKERS.items():
        if name not in names:
            names.add(name)
            config.addinivalue_line("markers", f"{name}: {text}")
    from byoc_compiler.errors import ByocError

    try:
        tcs = h.load_config().toolchains.values()
    except ByocError:  # a broken config.toml is reported by the tests that read it
        tcs = ()
    for tc in tcs:
        for mark in h.toolchain_markers(tc):
            if mark not in names:
                names.add(mark)
                config.addinivalue_line("markers", f"{mark}: matrix case on toolchain {tc.name}")


def matrix_cases(config):
    import matrix_harness as h

    cfg = h.load_config()
    return h.full_cases(cfg) if config.getoption("matrix") == "full" else h.default_cases(cfg)


def pytest_generate_tests(metafunc):
    if "matrix_case" not in metafunc.fixturenames:
        return
    import matrix_harness as h

    cfg = h.load_config()
    cases = matrix_cases(metafunc.config)
    params = [pytest.param(c, id=c.id, marks=[getattr(pytest.mark, m) for m in c.markers(cfg)]) for c in cases]
    if metafunc.config.getoption("matrix") != "full":
        # The quantized models' wider set: marked int8, deselected unless asked for (tests/conftest.py).
        params += [pytest.param(c, id=c.id, marks=[getattr(pytest.mark, m) for m in c.markers(cfg) + ["int8"]])
                   for c in h.quantized_cases(cfg, "int8")]
    metafunc.parametrize("matrix_case", params)


def pytest_collection_modifyitems(config, items):
    # The fuzz lanes exist only in a --fuzz-minutes run: deselected, not skipped, otherwise.
    if config.getoption("fuzz_minutes") > 0:
        return
    fuzz = [item for item in items if item.originalname == "test_fuzz"]
    if fuzz:
        config.hook.pytest_deselected(items=fuzz)
        items[:] = [item for item in items if item.originalname != "test_fuzz"]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    import matrix_harness as h

    rows = []
    cfg = None
    for outcome in ("passed", "failed", "skipped"):
        for report in terminalreporter.stats.get(outcome, []):
            nodeid = getattr(report, "nodeid", "")
            if "::test_model[" not in nodeid or (outcome == "passed" and report.when != "call"):
                continue
            cfg = cfg or h.load_config()
            case_id = nodeid.split("[", 1)[1].rstrip("]")
            tc = h.toolchain_of_id(case_id, cfg) or "?"
            margin = dict(getattr(report, "user_properties", ())).get("margin")
            rows.append((tc, outcome, getattr(report, "duration", 0.0), case_id, margin))
    if rows:
        terminalreporter.write_sep("=", "byoc matrix summary")
        terminalreporter.write_line(h.summarize(rows))
        for why, pairs in h.exclusions(cfg or h.load_config()).items():
            terminalreporter.write_line(f"not built: {', '.join(pairs)}: {why}")
