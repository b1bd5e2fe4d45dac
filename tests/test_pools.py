"""Memory pools (backend/pools.py, config.toml [boards.*]): the one planner places every buffer of a build,
regions' workspaces included, in a board's pools; a model that does not fit fails at build time naming the
pool, its size and what it needed; constants (linked bytes and C literals alike) go to the board's read-only
section, checked in the compiled objects with objdump; the per-pool report against independent numbers."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

import byoc_compiler as byoc
from byoc_compiler import zoo
from byoc_compiler.backend.memory_plan import PoolFull, align_up, aot_arena, plan_in_pools
from byoc_compiler.config import ConfigError, load_config
from byoc_compiler.errors import ByocError

from build_cache import built
from test_memory_plan import _peak_live_intermediates

BOARD = """
[toolchains.gcc-board]
cc = "gcc"
arch = "x86_64"
cflags = ["-std=c99", "-fPIC"]
ldflags = ["-lm"]
board = "testboard"

[toolchains.gcc-freestanding]
cc = "gcc"
arch = "x86_64"
cflags = ["-std=c99"]
profile = "freestanding"

[boards.testboard]
alignment = 16
{section}
{pools}
"""
ONE_POOL = '[[boards.testboard.pools]]\nname = "sram"\nsize = {size}\nkinds = ["workspace", "io", "constants"]\n'
SPLIT = ('[[boards.testboard.pools]]\nname = "flash"\nsize = {flash}\nkinds = ["constants"]\n'
         '[[boards.testboard.pools]]\nname = "dtcm"\nsize = {dtcm}\nkinds = ["workspace"]\n'
         '[[boards.testboard.pools]]\nname = "sram"\nsize = {sram}\nkinds = ["workspace", "io"]\n')


def board_config(tmp_path, pools: str, section: str = "") -> Path:
    path = tmp_path / "config.toml"
    path.write_text(BOARD.format(pools=pools, section=section))     # over the packaged defaults
    return path


def small_cnn_ccompiler():
    return byoc.partition_for(["ccompiler"], zoo.get("small_cnn"))


def test_report_of_a_hosted_build_is_one_unbounded_pool():
    lib = byoc.build(zoo.get("small_cnn"), executor="aot")
    (row,) = lib.metadata["pools"]
    assert (row["name"], row["size"], lib.metadata["board"]) == ("host", None, None)
    # every op a host step: the lower bound is graph.json's peak of live intermediates, computed apart
    assert row["workspace_lower_bound_bytes"] == _peak_live_intermediates(json.loads(lib.graph_json))
    assert row["workspace_bytes"] == lib.metadata["workspace_bytes"]
    io = sum(int(np.prod(e["shape"])) * 4 for e in lib.metadata["inputs"] + lib.metadata["outputs"])
    consts = sum(int(np.prod(p["shape"])) * 4 for p in lib.metadata["params"].values())
    assert row["io_bytes"] == io
    assert consts <= row["constants_bytes"] <= consts + 64 * len(lib.metadata["params"])   # linked ones aligned


def test_workspace_fits_split_pools_and_every_buffer_is_in_room(tmp_path):
    """Intermediates and a region's workspace spread over two workspace pools; each pool's buffers end
    within its size (sram less the caller's io), and none share bytes while live."""
    cfg = board_config(tmp_path, SPLIT.format(flash=1 << 20, dtcm=8192, sram=1 << 20))
    lib = byoc.build(zoo.get("small_cnn"), toolchain="gcc-board", executor="aot", config=cfg)
    rows = {r["name"]: r for r in lib.metadata["pools"]}
    assert rows["flash"]["workspace_bytes"] == 0 and rows["flash"]["constants_bytes"] > 0
    assert 0 < rows["dtcm"]["workspace_bytes"] <= 8192 and rows["sram"]["workspace_bytes"] > 0
    assert rows["sram"]["io_bytes"] > 0 and rows["dtcm"]["io_bytes"] == 0
    total = rows["dtcm"]["workspace_bytes"] + rows["sram"]["workspace_bytes"]
    assert lib.metadata["workspace_bytes"] >= total
    for r in rows.values():
        assert r["lower_bound_bytes"] <= r["used_bytes"]
    # the hosted instance lays the pools out in one block and computes what the one-pool build does
    outs = []
    for result in (lib, built("small_cnn", "gcc", "aot", "packed")):
        m = result.load(werror=True)
        for k, v in zoo.inputs("small_cnn").items():
            m.set_input(k, v)
        m.run()
        outs.append(m.get_output(0))
        m.close()
    np.testing.assert_array_equal(*outs)


@pytest.mark.parametrize("pools,message", [
    pytest.param(ONE_POOL.format(size=4096), r"workspace pool\(s\) of board 'testboard': 'sram' \(4096 bytes, "
                 r"\d+ of them the caller's inputs and outputs\); its workspace needs \d+ bytes \(lower bound, "
                 r"the peak of simultaneously live buffers: \d+\)", id="workspace"),
    pytest.param(SPLIT.format(flash=1024, dtcm=1 << 20, sram=1 << 20),
                 r"pool 'flash' of board 'testboard' \(1024 bytes\): it needs \d+ \(constants \d+", id="constants"),
    pytest.param(SPLIT.format(flash=1 << 20, dtcm=1 << 20, sram=64),
                 r"pool 'sram' of board 'testboard' \(64 bytes\): it needs \d+ \(constants 0, the caller's inputs "
                 r"and outputs \d+, workspace 0\)", id="io"),
])
def test_a_model_too_large_for_a_pool_fails_naming_it(tmp_path, pools, message):
    cfg = board_config(tmp_path, pools)
    with pytest.raises(ByocError, match=message):
        byoc.build(small_cnn_ccompiler(), toolchain="gcc-board", executor="aot", config=cfg)


@pytest.mark.parametrize("name", zoo.names())
def test_region_workspaces_share_the_arena_by_lifetime(name):
    """A C region's workspace is a buffer live during its step: it never overlaps a live intermediate."""
    lib = byoc.build(byoc.partition_for(["ccompiler", "examplejson"], zoo.get(name)), executor="aot")
    prog = lib.program
    region_ws = {s: a.workspace_bytes for s, a in lib.artifacts.items() if hasattr(a, "workspace_bytes")}
    plan = aot_arena(prog, region_ws)
    life = dict(prog.lifetimes())
    size = {t: prog.tensors[t].nbytes for t in plan.arena.offsets if not isinstance(t, tuple)}
    for i, step in enumerate(prog.steps):
        if region_ws.get(step.symbol):
            life[("scratch", i)], size[("scratch", i)] = (i, i), region_ws[step.symbol]
    assert set(size) == set(plan.arena.offsets) and plan.arena.total_bytes == lib.metadata["workspace_bytes"]
    items = [(plan.arena.offsets[k], plan.arena.offsets[k] + size[k], life[k]) for k in size]
    for i, (a0, a1, la) in enumerate(items):
        assert a1 <= plan.arena.total_bytes
        for b0, b1, lb in items[i + 1:]:
            if la[0] <= lb[1] and lb[0] <= la[1]:
                assert a1 <= b0 or b1 <= a0


def test_pool_full_names_the_buffer():
    with pytest.raises(PoolFull) as info:
        plan_in_pools({"a": 100, "b": 300}, {"a": (0, 1), "b": (1, 2)}, [256], alignment=16)
    assert (info.value.key, info.value.nbytes) == ("b", 304)
    plan = plan_in_pools({"a": 100, "b": 300, "c": 50}, {"a": (0, 1), "b": (1, 2), "c": (2, 3)}, [128, None], 16)
    assert plan.placed["b"][0] == 1 and plan.placed["a"] == (0, 0) and plan.placed["c"][0] == 0
    assert plan.pool_bytes == (align_up(100, 16), align_up(300, 16))


def _symbols_by_section(obj: Path) -> dict[str, str]:
    """symbol -> section, from objdump -t (an independent reader of the object)."""
    out = subprocess.run(["objdump", "-t", str(obj)], capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        m = re.match(r"^[0-9a-f]+ .{7} (\S+)\s+[0-9a-f]+\s+(?:\.hidden\s+)?(\S+)$", line)
        if m:
            found[m.group(2)] = m.group(1)
    return found


def test_constants_are_in_the_boards_section(tmp_path, section=".rodata.my_weights"):
    """Small constants (C literals in host.c and in the ccompiler region) and large ones (.incbin) alike, in
    the section the board names (the bare-metal lanes link the default one, .rodata.byoc_constants)."""
    cfg = board_config(tmp_path, ONE_POOL.format(size=1 << 20), f'constants_section = "{section}"')
    lib = byoc.build(small_cnn_ccompiler(), toolchain="gcc-board", executor="aot", config=cfg,
                     large_constant_bytes=512)
    objects, _ = lib._objects(werror=True)
    symbols = {}
    for obj in objects:
        symbols.update(_symbols_by_section(obj))
    small = [s for s in symbols if re.fullmatch(r"c\d+", s) or s.startswith("byoc_const_")]
    large = [s for s in symbols if re.fullmatch(r"tvmgen_\w+_c\d+", s) and symbols[s] != "*UND*"]
    assert small and large, symbols
    assert {symbols[s] for s in small + large} == {section}


def test_hosted_builds_keep_small_constants_in_rodata():
    lib = byoc.build(small_cnn_ccompiler(), executor="aot")
    assert "__attribute__((section" not in lib.get_source() + lib.get_source("ccompiler")


@pytest.mark.parametrize("edit,message", [
    pytest.param(lambda t: t.replace('kinds = ["workspace", "io", "constants"]', 'kinds = ["heap"]'),
                 "kinds = ['heap']: each kind must be one of workspace, constants, io", id="bad-kind"),
    pytest.param(lambda t: t.replace("size = 65536", "size = 0"),
                 "size must be a positive integer", id="zero-size"),
    pytest.param(lambda t: t.replace('board = "testboard"', 'board = "testbord"'),
                 "board names 'testbord' (did you mean 'testboard'?)", id="unknown-board"),
    pytest.param(lambda t: t.replace("alignment = 16", "alignment = 24"), "must be a power of two", id="alignment"),
    pytest.param(lambda t: t + ONE_POOL.format(size=1), "names a pool twice", id="duplicate-pool"),
])
def test_board_config_mistakes_are_named(tmp_path, edit, message):
    path = board_config(tmp_path, ONE_POOL.format(size=65536))
    path.write_text(edit(path.read_text()))
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(path)


def test_a_board_bounds_int8_conv_scratch_and_equals_the_reference(tmp_path):
    """On a board with bounded pools ccompiler's int8 convs im2col 32 output pixels at a time and a QDQ
    residual add is one int8 pass: ResNet-8's workspace stays near its activations (not 147 KB of im2col
    and float32 adds), and the result equals byoc's integer reference bit for bit."""
    from byoc_compiler.testing.reference import run_reference

    cfg = board_config(tmp_path, ONE_POOL.format(size=1 << 20))
    mod = zoo.get("resnet8_int8")
    lib = byoc.build(byoc.partition_for(["ccompiler"], mod), toolchain="gcc-board", executor="aot", config=cfg)
    source = lib.get_source("ccompiler")
    assert ".im2col_columns = 32}" in source and "ck_qdq_add(" in source
    (row,) = lib.metadata["pools"]
    assert row["workspace_bytes"] <= 60 * 1024 and row["workspace_bytes"] <= 1.05 * row["workspace_lower_bound_bytes"]
    inputs = zoo.inputs("resnet8_int8")
    want = run_reference(mod, inputs)
    m = lib.load(werror=True)
    for k, v in inputs.items():
        m.set_input(k, v)
    m.run()
    np.testing.assert_array_equal(m.get_output(0), want[0])
    m.close()
