"""Targets shipped as packages: byoc finds them through entry points of the group `byoc.targets` (package
metadata, here written by hand as an installed distribution's .dist-info), lists each with its
distribution and version, refuses one written for another vendor API naming both versions, and reports
a package that fails to import or claims a taken name without breaking the other targets.
(docs/writing-a-target.md, "Ship it as a package", builds and installs a real wheel.)"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import toy_target

ROOT = Path(__file__).resolve().parent.parent


def install(site: Path, dist: str, version: str, entry_points: dict[str, str]) -> None:
    """What pip leaves for an installed distribution: its .dist-info with METADATA and entry_points.txt."""
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(
        "[byoc.targets]\n" + "".join(f"{name} = {value}\n" for name, value in entry_points.items()))


def toy(site: Path, module: str, name: str, vendor_api: str | None = None) -> None:
    package = toy_target.write_package(site / module, name, toy_target_flag(name))
    if vendor_api:
        init = package / "__init__.py"
        init.write_text(init.read_text().replace('description=', f"vendor_api={vendor_api}, description="))


def toy_target_flag(name: str) -> str:
    return "USE_" + name.upper()


def broken(site: Path, module: str) -> None:
    (site / module).mkdir(parents=True)
    (site / module / "__init__.py").write_text("raise RuntimeError('the vendor SDK is not set up')\n")


def byoc_targets(site: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "BYOC_CONFIG"}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "byoc_compiler", "targets"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def setup_listed(site):
    toy(site, "byoc_toya", "toya", vendor_api="(1, 0)")
    install(site, "byoc-toya", "1.2.0", {"toya": "byoc_toya:target"})


def setup_major(site):
    toy(site, "byoc_toya", "toya", vendor_api="(2, 0)")
    install(site, "byoc-toya", "2.0.1", {"toya": "byoc_toya:target"})


def setup_minor(site):
    toy(site, "byoc_toya", "toya", vendor_api="(1, 99)")
    install(site, "byoc-toya", "1.9.0", {"toya": "byoc_toya:target"})


def setup_broken(site):
    broken(site, "byoc_bad")
    install(site, "byoc-bad", "0.1", {"bad": "byoc_bad:target"})


def setup_collision(site):
    toy(site, "byoc_toya", "toya")
    toy(site, "byoc_toyb", "toya")
    install(site, "byoc-toya", "1.0", {"toya": "byoc_toya:target"})
    install(site, "byoc-toyb", "3.1", {"toya": "byoc_toyb:target"})


def setup_claims_builtin(site):
    toy(site, "byoc_evil", "ccompiler")
    install(site, "byoc-evil", "0.1", {"ccompiler": "byoc_evil:target"})


# (id, set-up, exit code of `byoc targets`, texts its output holds)
CASES = [
    pytest.param(setup_listed, 0, ["toya", "USE_TOYA", "byoc-toya 1.2.0", "byoc_toya", "ready"], id="listed"),
    pytest.param(setup_major, 1, ["toya: target 'toya' (byoc-toya 2.0.1) was written for byoc's vendor API 2.0, and "
                                  "this byoc provides vendor API 1.", "install a release of byoc-toya written for "
                                  "vendor API 1.x"], id="other-major-vendor-api"),
    pytest.param(setup_minor, 1, ["was written for byoc's vendor API 1.99", "upgrade byoc_compiler to one whose "
                                  "vendor API is 1.99 or later"], id="newer-minor-vendor-api"),
    pytest.param(setup_broken, 1, ["bad: importing byoc_bad failed: RuntimeError: the vendor SDK is not set up"],
                 id="fails-to-import"),
    pytest.param(setup_collision, 1, ["toya: the name 'toya' is declared by more than one package: byoc-toya 1.0 "
                                      "(byoc_toya), byoc-toyb 3.1 (byoc_toyb)"], id="two-packages-one-name"),
    pytest.param(setup_claims_builtin, 1, ["ccompiler: also declared by byoc-evil 0.1 (byoc_evil), which is ignored"],
                 id="claims-a-builtin-name"),
]


@pytest.mark.parametrize("setup, code, texts", CASES)
def test_a_target_package_is_listed_or_reported_without_breaking_the_others(tmp_path, setup, code, texts):
    site = tmp_path / "site"
    site.mkdir()
    setup(site)
    proc = byoc_targets(site, tmp_path)
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == code, proc.stdout + proc.stderr
    for text in texts:
        assert " ".join(text.split()) in out, proc.stdout + proc.stderr
    rows = {line.split()[0]: line for line in proc.stdout.splitlines() if line.strip()}
    for builtin in ("ccompiler", "examplejson"):    # the other targets are untouched
        assert rows[builtin].split()[1] == "yes" and "ready" in rows[builtin], proc.stdout
        assert "byoc_compiler.contrib." + builtin in rows[builtin], proc.stdout


def test_a_package_target_can_be_disabled_by_its_flag(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    setup_listed(site)
    (tmp_path / "byoc.toml").write_text("[backends]\nUSE_TOYA = false\n")
    proc = byoc_targets(site, tmp_path)
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if line.startswith("toya "))
    assert row.split()[1] == "no" and "disabled" in row
