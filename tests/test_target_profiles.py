"""Runtime profiles (Target.runs_on): ccompiler builds for hosted and freestanding toolchains, examplejson and
dnnl are hosted-only; a build refuses a hosted-only target on a freestanding toolchain with one message, and
the matrix leaves those pairs out, saying why."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import byoc_compiler as byoc
from byoc_compiler import zoo
from byoc_compiler.config import load_config
from byoc_compiler.errors import ByocError
from byoc_compiler.target import Target, TargetError, get_target

from test_pools import ONE_POOL, board_config

sys.path.insert(0, str(Path(__file__).parent / "matrix"))
import matrix_harness as h  # noqa: E402  (the matrix's own module, as its conftest imports it)


@pytest.mark.parametrize("name,profiles", [("ccompiler", ("hosted", "freestanding")), ("examplejson", ("hosted",)),
                                           ("dnnl", ("hosted",))])
def test_builtin_targets_declare_their_profiles(name, profiles):
    assert get_target(name, enabled_only=False).profiles == profiles


@pytest.mark.parametrize("targets,refused", [(["ccompiler"], None), (["examplejson"], "examplejson"),
                                             (["dnnl"], "dnnl")])
def test_freestanding_toolchain_refuses_hosted_only_targets(tmp_path, targets, refused):
    cfg = board_config(tmp_path, ONE_POOL.format(size=1 << 20))
    mod = byoc.partition_for(targets, zoo.get("small_cnn"))
    if refused is None:
        assert byoc.build(mod, toolchain="gcc-freestanding", executor="aot", interface="unpacked", config=cfg)
        return
    with pytest.raises(ByocError, match=rf"target '{refused}' runs only on a hosted runtime \(.+\), and toolchain "
                                        r"'gcc-freestanding' is freestanding; choose a hosted toolchain or leave"):
        byoc.build(mod, toolchain="gcc-freestanding", executor="aot", interface="unpacked", config=cfg)


def test_matrix_leaves_hosted_only_targets_out_of_freestanding_lanes(tmp_path):
    config = load_config(board_config(tmp_path, ONE_POOL.format(size=1 << 20)))
    assert h.excluded("ccompiler", "gcc-freestanding", config) is None
    for target_set in ("examplejson", "dnnl", "both"):
        assert "runs only on a hosted runtime" in h.excluded(target_set, "gcc-freestanding", config)
    reasons = h.exclusions(config)
    assert any("examplejson" in r and "hosted runtime" in r for r in reasons), reasons


def test_runs_on_takes_only_known_profiles():
    with pytest.raises(TargetError, match='runs_on takes "hosted" and/or "freestanding", got \'bare\''):
        Target("mynpu").runs_on("bare")
    assert Target("mynpu").profiles == ("hosted",)    # undeclared: hosted-only
