"""One copy of a build's large constants, however many toolchain directories use them.

`scons target=ccompiler model=resnet50.onnx` builds for gcc and clang; both write the same 100 MB
`constants.bin` (the byte order is the CPU's, and both are x86_64). So the codegen writes each
large-constant blob (constants.bin, src/byoc_constants.bin) once, named by its content, in a store
under the build root:

    <build root>/.constants/<sha256 of the bytes>.bin     read-only; written to a temp file, then renamed

and every `<build dir>/constants.bin` is a hard link to it, made under a temp name and renamed over the
old file, so neither an interrupted build nor a re-link ever leaves a half file. A toolchain of another
byte order (s390x) has other bytes, so another entry: the store holds any number of blobs per model.
A hard link is a file in its own right: `rm -rf build/.constants` (or the whole build root but one
directory) leaves the others whole. Where the filesystem refuses hard links the file is copied.

Which entries live: an entry whose only link is its own name (st_nlink 1) is used by no build directory
and is removed, under a lock (`<build root>/.constants.lock`), whenever a build places a blob (SCons
removed the old files of the directories it rebuilds, so their old entries dropped a link) and when
`scons -c` ends; the store directory goes when that empties it (and after `scons -c`, the lock file).
Placing (write the entry, link it) holds the same lock, so no entry is seen between its creation and
its first link, and a temp file seen under the lock is a killed build's: the sweep removes it too.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from pathlib import Path

try:
    import fcntl
except ImportError:          # not POSIX: no lock (and likely no hard links: every file is a copy)
    fcntl = None

STORE_DIR = ".constants"
LOCK_FILE = ".constants.lock"       # beside the store, so the store itself can go when it empties


def store_dir(build_root) -> Path:
    return Path(build_root) / STORE_DIR


@contextlib.contextmanager
def _locked(store: Path):
    """The store's lock: flock on a file of its own (separate opens exclude each other, threads included)."""
    store.parent.mkdir(parents=True, exist_ok=True)
    with open(store.parent / LOCK_FILE, "a") as handle:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(handle, fcntl.LOCK_UN)


def _entries(store: Path) -> list[Path]:
    try:
        return [p for p in store.iterdir() if p.suffix == ".bin" and not p.name.startswith(".")]
    except OSError:
        return []


def _temp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{id(path)}.tmp")


def _write_entry(entry: Path, data: bytes) -> None:
    tmp = _temp_name(entry)
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o444)     # read-only: every build directory linking it shares these bytes
        os.replace(tmp, entry)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def place(data: bytes, dest, build_root) -> str:
    """Make `dest` hold `data`: a hard link to the store's entry for it ("link"), or a copy ("copy")
    where the filesystem has no hard links. Sweeps unused entries afterwards."""
    dest = Path(dest)
    store = store_dir(build_root)
    entry = store / f"{hashlib.sha256(data).hexdigest()}.bin"
    dest.parent.mkdir(parents=True, exist_ok=True)
    with _locked(store):
        store.mkdir(exist_ok=True)
        try:
            if entry.stat().st_size != len(data):
                raise FileNotFoundError(entry)        # not ours (a truncated copy): write it again
        except FileNotFoundError:
            _write_entry(entry, data)
        how = _link_or_copy(entry, dest)
        _sweep_locked(store)
    return how


def _link_or_copy(entry: Path, dest: Path) -> str:
    with contextlib.suppress(FileNotFoundError):
        if os.path.samefile(entry, dest):
            return "link"            # already this entry (rename would be a no-op and leave the temp name)
    tmp = _temp_name(dest)
    try:
        try:
            os.link(entry, tmp)
            how = "link"
        except OSError:
            # No hard links here (another filesystem, a FAT volume, a sandbox): the same bytes, copied.
            shutil.copyfile(entry, tmp)
            how = "copy"
        os.replace(tmp, dest)
        return how
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _sweep_locked(store: Path) -> list[Path]:
    removed = []
    # Entries are written only under the lock, so a temp file seen under it is a killed build's.
    for stale in store.glob(".*.tmp") if store.is_dir() else ():
        with contextlib.suppress(OSError):
            stale.unlink()
    for entry in _entries(store):
        try:
            if entry.stat().st_nlink == 1:
                entry.unlink()
                removed.append(entry)
        except FileNotFoundError:
            pass
    with contextlib.suppress(OSError):
        store.rmdir()            # only when empty
    return removed


def sweep(build_root, final: bool = False) -> list[Path]:
    """Remove the entries no build directory links, and the store when that empties it; `final` (the
    end of `scons -c`, nothing else placing) removes the lock file too once the store is gone."""
    store = store_dir(build_root)
    if not store.is_dir() and not (final and (store.parent / LOCK_FILE).exists()):
        return []
    with _locked(store):
        removed = _sweep_locked(store)
    if final and not store.exists():
        with contextlib.suppress(OSError):
            (store.parent / LOCK_FILE).unlink()
    return removed
