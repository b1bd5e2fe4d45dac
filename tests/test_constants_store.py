"""The build root's constants store (byoc_compiler/scons/store.py): one file per blob of large
constants, hard-linked into every build directory that uses it, swept when no directory does.

The blobs come from the codegen SCons runs (codegen.write_outputs) and are compared with numpy's bytes of
the model's weights in each toolchain's byte order; nothing is compiled here (tests/test_scons.py builds
and checks through SCons)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
from byoc_compiler.scons import codegen, store  # noqa: E402

WEIGHTS_SHAPE = (32, 64)


def weights_model(path: Path, seed: int) -> np.ndarray:
    """dense(x, W) + b as model text, W (8 KiB) a large constant; returns W."""
    from byoc_compiler import op
    from byoc_compiler.ir import Function, IRModule, Var, astext, const
    from byoc_compiler.ir.types import TensorType

    w = np.random.default_rng(seed).standard_normal(WEIGHTS_SHAPE).astype(np.float32)
    x = Var("x", TensorType((2, 64), "float32"))
    b = const(np.linspace(-1, 1, 32).astype(np.float32))
    path.write_text(astext(IRModule.from_expr(Function([x], op.nn.relu(op.nn.bias_add(op.nn.dense(x, const(w)), b))))))
    return w


def write_constants(model: Path, root: Path, toolchain: str) -> Path:
    """What the codegen action writes for constants.bin of (host target, AOT, params) in <root>/host/<toolchain>/."""
    outdir = root / "host" / toolchain / "model"
    request = codegen.CodegenRequest(str(model), "host", toolchain, "aot", "packed", "-O2",
                                     str(ROOT / "config.toml"), str(outdir), "params")
    codegen.write_outputs(request, [str(outdir / "constants.bin")])
    return outdir / "constants.bin"


def entries(root: Path) -> list[Path]:
    return sorted((root / store.STORE_DIR).glob("*.bin")) if (root / store.STORE_DIR).exists() else []


def test_toolchains_share_one_entry_per_byte_order(tmp_path):
    w = weights_model(tmp_path / "model.txt", seed=1)
    root = tmp_path / "build"
    gcc, clang, s390x = (write_constants(tmp_path / "model.txt", root, tc) for tc in ("gcc", "clang", "s390x-gcc"))
    # gcc and clang (both x86_64): one inode, linked from two directories and the store
    assert os.stat(gcc).st_ino == os.stat(clang).st_ino and os.stat(gcc).st_nlink == 3
    # s390x is big-endian: other bytes, its own entry
    assert os.stat(s390x).st_ino != os.stat(gcc).st_ino and os.stat(s390x).st_nlink == 2
    by_bytes = {p.read_bytes(): p for p in entries(root)}
    assert len(by_bytes) == 2
    assert w.astype("<f4").tobytes() in by_bytes and w.astype(">f4").tobytes() in by_bytes
    assert gcc.read_bytes() == w.astype("<f4").tobytes() and s390x.read_bytes() == w.astype(">f4").tobytes()


def test_a_weights_edit_makes_a_new_entry_and_sweeps_the_old(tmp_path):
    root = tmp_path / "build"
    weights_model(tmp_path / "model.txt", seed=2)
    for tc in ("gcc", "clang"):
        write_constants(tmp_path / "model.txt", root, tc)
    [old] = entries(root)
    w = weights_model(tmp_path / "model.txt", seed=3)
    codegen._build.cache_clear()
    codegen.load_unpartitioned.cache_clear()
    for tc in ("gcc", "clang"):
        (root / "host" / tc / "model" / "constants.bin").unlink()      # SCons removes a target before its action
        path = write_constants(tmp_path / "model.txt", root, tc)
    [new] = entries(root)
    assert new != old and not old.exists()
    assert new.read_bytes() == w.astype("<f4").tobytes() and os.stat(new).st_nlink == 3 == os.stat(path).st_nlink


def test_relinking_the_same_bytes_keeps_the_file(tmp_path):
    """A codegen rerun with unchanged weights: same inode, no temp name left behind (rename of a file onto a
    hard link of itself does nothing)."""
    root = tmp_path / "build"
    dest = root / "a" / "b" / "c" / "constants.bin"
    assert store.place(b"x" * 100, dest, root) == "link"
    before = os.stat(dest)
    assert store.place(b"x" * 100, dest, root) == "link"
    assert os.stat(dest).st_ino == before.st_ino
    assert sorted(p.name for p in dest.parent.iterdir()) == ["constants.bin"]


def test_copy_when_the_filesystem_refuses_hard_links(tmp_path, monkeypatch):
    def no_links(src, dst, *args, **kwargs):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    root = tmp_path / "build"
    dest = root / "x" / "gcc" / "m" / "constants.bin"
    assert store.place(b"\x01\x02" * 1000, dest, root) == "copy"
    assert dest.read_bytes() == b"\x01\x02" * 1000 and os.stat(dest).st_nlink == 1
    assert not (root / store.STORE_DIR).exists()           # an entry nothing links is not kept


def test_an_interrupted_entry_write_leaves_no_entry(tmp_path, monkeypatch):
    root = tmp_path / "build"

    def killed(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        store.place(b"y" * 4096, root / "t" / "tc" / "m" / "constants.bin", root)
    assert list((root / store.STORE_DIR).iterdir()) == []
    assert not (root / "t" / "tc" / "m" / "constants.bin").exists()


def test_a_killed_builds_temp_file_goes_with_the_next_placement(tmp_path):
    """A build killed mid-write (SIGKILL: no cleanup) leaves a temp name, never an entry; the next build,
    under the lock no other writer holds, removes it."""
    root = tmp_path / "build"
    (root / store.STORE_DIR).mkdir(parents=True)
    stale = root / store.STORE_DIR / f".{'0' * 64}.bin.12345.678.tmp"
    stale.write_bytes(b"half")
    store.place(b"w" * 64, root / "t" / "tc" / "m" / "constants.bin", root)
    assert not stale.exists() and len(entries(root)) == 1


def test_sweep_after_clean_removes_the_store(tmp_path):
    root = tmp_path / "build"
    dests = [root / "t" / tc / "m" / "constants.bin" for tc in ("gcc", "clang")]
    for dest in dests:
        store.place(b"z" * 256, dest, root)
    dests[0].unlink()
    assert store.sweep(root, final=True) == [] and len(entries(root)) == 1    # clang still links it
    dests[1].unlink()
    assert len(store.sweep(root, final=True)) == 1
    assert not (root / store.STORE_DIR).exists() and not (root / store.LOCK_FILE).exists()
