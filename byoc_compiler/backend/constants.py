"""Large constants out of the C text: raw bytes in one file, linked by the assembler's `.incbin`.

A ResNet-50 has 25 M float32 weights. Written as C literals they make a 400 MB source that the
compiler parses for minutes; written as raw bytes and pulled in by the assembler they cost a copy.
So every constant of at least `large_constant_bytes()` bytes (LARGE_CONSTANT_BYTES, 1 KiB: a
256-float bias stays a readable literal, every real weight tensor leaves) goes to a `ConstantPool`:

    src/byoc_constants.bin   the bytes of every large constant, each in the toolchain CPU's byte
                             order (big-endian for s390x), each starting on a 64-byte boundary
    src/byoc_constants.S     one `.incbin "byoc_constants.bin", offset, size` per constant under a
                             global (ELF-hidden) symbol in .rodata, aligned to 64 bytes

and the C that uses a constant declares it, with a comment naming its shape, dtype and size:

    /* tvmgen_default_ccompiler_main_0_c3: constant [64, 64, 3, 3] float32, 147456 bytes, in byoc_constants.bin */
    extern const float tvmgen_default_ccompiler_main_0_c3[36864];

The assembler finds the .bin through `-Xassembler -I<dir of the .S>` (toolchain.compile_argv adds it), so
the .S never holds a path and the export directory can move. GNU as and clang's integrated assembler
both read `.incbin` with offset and count and `.balign`, and `%object`/`.hidden` are valid for every
ELF target of config.toml (x86_64, aarch64, armhf, riscv64, s390x); tests/test_constants.py runs them.

build(constants="params") keeps the weights out of the binary instead (TVM's params vs. link-params):
the .S reserves the same layout in .bss, the bytes go to `constants.bin`, and the model's init copies
them in from what `byoc_set_constants` was given (size and CRC-32s checked: `init_source`).

Targets reach this through `CSourceArtifact(constants={name: array})` plus `extern_declaration`;
the host (AOT constants, the graph executor's params blob) and blob regions go through `c_array` /
`c_bytes`, which give either the literal (small) or the extern declaration (large).
"""
from __future__ import annotations

import contextlib
import contextvars
import zlib
from dataclasses import dataclass, field

import numpy as np

from ..ctext import c_type, comment_text, const_array, shape_text
from ..ir.expr import Constant
from ..ir.visitor import post_order

LARGE_CONSTANT_BYTES = 1024
ALIGNMENT = 64
BIN_NAME = "byoc_constants.bin"
ASM_NAME = "byoc_constants.S"
BIN_FILE = f"src/{BIN_NAME}"
ASM_FILE = f"src/{ASM_NAME}"
SECTION = ".rodata.byoc_constants"   # the linked constants' section (a board may name another)
# constants="params": the same bytes, loaded at init instead of linked (top level of the export directory).
PARAMS_FILE = "constants.bin"
MODES = ("linked", "params", "auto")
# constants="auto": a model whose large constants add up to this much keeps them in constants.bin (TVM's
# default, params beside the library): linking them too would put one more copy of the weights in the
# object, the library and every binary, for a model of this size the bulk of the build directory.
AUTO_PARAMS_BYTES = 64 << 20

# CPUs of config.toml's `arch` whose byte order is big-endian (every other one is little-endian).
BIG_ENDIAN_ARCHES = frozenset({"s390x", "s390", "ppc", "ppc64", "powerpc", "powerpc64", "mips", "mips64",
                               "sparc", "sparc64", "m68k"})

_THRESHOLD: contextvars.ContextVar[int | None] = contextvars.ContextVar("byoc_large_constant_bytes",
                                                                        default=LARGE_CONSTANT_BYTES)


@dataclass
class _Literals:
    """The small constants (C literals) of the build under way: their section and how many bytes."""
    section: str | None
    nbytes: int = 0


_LITERALS: contextvars.ContextVar[_Literals | None] = contextvars.ContextVar("byoc_constant_literals", default=None)


@contextlib.contextmanager
def literal_section(section: str | None):
    """Inside the block, small constants written through `small_constant` go to `section` (None: the
    compiler's .rodata) and are counted; yields the counter (its `nbytes` after the block)."""
    literals = _Literals(section)
    token = _LITERALS.set(literals)
    try:
        yield literals
    finally:
        _LITERALS.reset(token)


def small_constant(cname: str, data, literal) -> str:
    """`literal(cname, data)` (a `static const T name[n] = {...};` writer) for a small constant, placed in
    the build's constants section when it has one (a board: the linker script puts it in flash with the
    large ones) and counted in the constants pool."""
    text = literal(cname, data)
    literals = _LITERALS.get()
    if literals is None:
        return text
    literals.nbytes += data.nbytes if isinstance(data, np.ndarray) else len(data)
    if literals.section is None:
        return text
    head, sep, tail = text.partition(" = {")
    return f'{head} __attribute__((section("{literals.section}"))){sep}{tail}'


def constant_array(cname: str, array) -> str:
    """A small constant array as `static const T cname[n] = {...};` (ctext.const_array), in the build's
    constants section and counted in its constants pool: what a target writes for constants it keeps in
    its C text (large ones: `extern_declaration`)."""
    return small_constant(cname, np.asarray(array), const_array)


def large_constant_bytes() -> int | None:
    """Constants of at least this many bytes leave the C text (None: none do) in the build under way."""
    return _THRESHOLD.get()


@contextlib.contextmanager
def threshold(nbytes: int | None):
    """Use `nbytes` as the large-constant threshold inside the block (build() sets it per build)."""
    token = _THRESHOLD.set(nbytes)
    try:
        yield
    finally:
        _THRESHOLD.reset(token)


def is_large(data) -> bool:
    """True when an ndarray (or bytes) is big enough to be linked as raw bytes instead of C literals."""
    limit = _THRESHOLD.get()
    nbytes = data.nbytes if isinstance(data, np.ndarray) else len(data)
    return limit is not None and nbytes >= limit and nbytes > 0


def auto_mode(mod) -> str:
    """What constants="auto" means for `mod`: "params" when its large constants (every function, composites
    included) add up to AUTO_PARAMS_BYTES or more, else "linked"."""
    total = 0
    for func in mod.functions.values():
        for node in post_order(func.body, into_functions=True):
            if isinstance(node, Constant) and is_large(node.data):
                total += node.data.nbytes
    return "params" if total >= AUTO_PARAMS_BYTES else "linked"


def byte_order(arch: str) -> str:
    """numpy's byte-order character for a config.toml arch: '>' big-endian, '<' little-endian."""
    return ">" if arch in BIG_ENDIAN_ARCHES else "<"


def extern_declaration(cname: str, array: np.ndarray) -> str:
    """The declaration a C file uses for a pooled array, with a comment naming its shape, dtype and size."""
    array = np.asarray(array)
    return (f"/* {cname}: constant {shape_text(array.shape)} {array.dtype}, {array.nbytes} bytes, "
            f"in {BIN_NAME} */\n"
            f"extern const {c_type(str(array.dtype))} {cname}[{max(1, array.size)}];\n")


@dataclass
class _Entry:
    symbol: str
    data: bytes
    note: str
    offset: int = 0
    source: object = None       # the ndarray it came from (model.txt may refer to its bytes)


def _symbol(e: _Entry, contents: str) -> list[str]:
    """The assembly of one constant: an aligned, hidden global object whose bytes are `contents`."""
    return ["",
            f"/* {e.symbol}: {e.note}, {len(e.data)} bytes at offset {e.offset} */",
            f"\t.balign {ALIGNMENT}",
            f"\t.globl {e.symbol}",
            f"\t.hidden {e.symbol}",
            f"\t.type {e.symbol}, %object",
            f"\t.size {e.symbol}, {len(e.data)}",
            f"{e.symbol}:",
            contents]


@dataclass
class ConstantPool:
    """The large constants of one build, in the byte order of its toolchain's CPU.

    mode "linked": byoc_constants.S pulls byoc_constants.bin into .rodata with .incbin.
    mode "params": byoc_constants.S reserves the same layout in .bss (`.skip`), and the model's init
    copies the build's constants.bin into it (`init_source`), so the binary holds no weights."""
    order: str = "<"                       # '<' or '>'
    mode: str = "linked"
    section: str = SECTION      # mode "linked": where the .S puts them
    entries: list = field(default_factory=list)
    _symbols: set = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.entries)

    def add_array(self, symbol: str, array: np.ndarray, note: str = "") -> None:
        array = np.asarray(array)
        if array.dtype == np.bool_:
            raw = array.astype(np.uint8).tobytes(order="C")
        else:
            raw = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder(self.order)).tobytes(order="C")
        self._add(symbol, raw, f"{shape_text(array.shape)} {array.dtype}" + (f", {note}" if note else ""))
        self.entries[-1].source = array

    def add_bytes(self, symbol: str, data: bytes, note: str = "") -> None:
        self._add(symbol, bytes(data), note or "bytes")

    def _add(self, symbol: str, data: bytes, note: str) -> None:
        if symbol in self._symbols:
            raise ValueError(f"constant symbol {symbol!r} is defined twice")
        self._symbols.add(symbol)
        offset = 0
        if self.entries:
            last = self.entries[-1]
            offset = -(-(last.offset + len(last.data)) // ALIGNMENT) * ALIGNMENT
        self.entries.append(_Entry(symbol, data, comment_text(note), offset))

    def binary(self) -> bytes:
        """byoc_constants.bin: every entry at its (64-byte aligned) offset, zero padding between."""
        out = bytearray()
        for e in self.entries:
            out += b"\0" * (e.offset - len(out))
            out += e.data
        return bytes(out)

    def locate(self, array) -> tuple[int, int] | None:
        """(offset, nbytes) of `array` (the same object that was added) in binary(), or None."""
        if not hasattr(self, "_by_id") or len(self._by_id) != len(self.entries):
            self._by_id = {id(e.source): e for e in self.entries if e.source is not None}
        entry = self._by_id.get(id(array))
        return (entry.offset, len(entry.data)) if entry is not None and entry.source is array else None

    @property
    def total_bytes(self) -> int:
        return self.entries[-1].offset + len(self.entries[-1].data) if self.entries else 0

    def assembly(self) -> str:
        """byoc_constants.S: one hidden global symbol per entry, its bytes taken from the .bin (linked)
        or reserved in .bss at the same offsets (params)."""
        endian = "big" if self.order == ">" else "little"
        note = " * Each symbol is declared in C as `extern const T name[N];` by the file that uses it. */"
        if self.mode == "params":
            lines = [f"/* Generated by byoc: room for the large constants of the model ({self.total_bytes} bytes), "
                     f"filled at init from {PARAMS_FILE} ({endian}-endian).", note,
                     '\t.section .bss.byoc_constants,"aw",%nobits', f"\t.balign {ALIGNMENT}",
                     "\t.globl byoc_constants_base", "\t.hidden byoc_constants_base", "byoc_constants_base:"]
            fills = [f"\t.skip {len(e.data)}" for e in self.entries]
        else:
            lines = [f"/* Generated by byoc: the large constants of the model, linked from {BIN_NAME} ({endian}-endian).",
                     note, f'\t.section {self.section},"a"']
            fills = [f'\t.incbin "{BIN_NAME}", {e.offset}, {len(e.data)}' for e in self.entries]
        for e, fill in zip(self.entries, fills):
            lines += _symbol(e, fill)
        # No executable stack for the objects linked with this one.
        lines += ["", '\t.section .note.GNU-stack,"",%progbits', ""]
        return "\n".join(lines)

    def checksum(self) -> int:
        """CRC-32 of each half of binary(), as one 64-bit number: init refuses a constants.bin of
        another build (zlib's CRC-32, which the C of init_source computes the same way)."""
        data = self.binary()
        half = len(data) // 2
        return (zlib.crc32(data[:half]) << 32) | zlib.crc32(data[half:])

    def init_source(self, model_name_literal: str) -> str:
        """host.c's byoc_constants_init (mode "params"): check the bytes given, copy them into .bss."""
        n = self.total_bytes
        if n == 0:
            return "static int32_t byoc_constants_init(void) { return 0; }\n"
        return (
            f"\n/* ---- large constants: {n} bytes loaded at init from {PARAMS_FILE} (constants=\"params\") ---- */\n"
            f"extern unsigned char byoc_constants_base[{n}];\n"
            "static uint32_t byoc_crc32(const unsigned char* p, size_t n) {  /* zlib's CRC-32, by table */\n"
            "  uint32_t table[256], c;\n"
            "  size_t i;\n"
            "  int k;\n"
            "  for (i = 0; i < 256; ++i) {\n"
            "    c = (uint32_t)i;\n"
            "    for (k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));\n"
            "    table[i] = c;\n"
            "  }\n"
            "  c = 0xFFFFFFFFu;\n"
            "  for (i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xFFu] ^ (c >> 8);\n"
            "  return c ^ 0xFFFFFFFFu;\n"
            "}\n"
            "static int32_t byoc_constants_init(void) {\n"
            "  const void* data;\n"
            "  size_t size;\n"
            "  byoc_get_constants(&data, &size);\n"
            "  if (data == NULL) {\n"
            f"    byoc_set_last_error(\"model %s: built with constants=\\\"params\\\": give it its {PARAMS_FILE} ({n} bytes) \"\n"
            "                        \"before init (runner --constants FILE, runtime.load(path, constants=FILE), \"\n"
            f"                        \"byoc_set_constants)\", {model_name_literal});\n"
            "    return -1;\n"
            "  }\n"
            f"  if (size != (size_t){n}\n"
            f"      || ((uint64_t)byoc_crc32((const unsigned char*)data, {n // 2}) << 32\n"
            f"          | byoc_crc32((const unsigned char*)data + {n // 2}, {n - n // 2})) != UINT64_C({self.checksum()})) {{\n"
            f"    byoc_set_last_error(\"model %s: the constants given (%lu bytes) are not the {PARAMS_FILE} of this \"\n"
            f"                        \"build ({n} bytes, checksum %s)\", {model_name_literal}, (unsigned long)size,\n"
            f"                        size != (size_t){n} ? \"not checked\" : \"differs\");\n"
            "    return -1;\n"
            "  }\n"
            f"  byoc_advise_huge_pages(byoc_constants_base, {n});  /* before the copy first writes it */\n"
            f"  memcpy(byoc_constants_base, data, {n});\n"
            "  return 0;\n"
            "}\n")

    def files(self) -> dict:
        """Relative path -> content of the pool's two files (nothing when the pool is empty)."""
        if not self.entries:
            return {}
        if self.mode == "params":
            return {ASM_FILE: self.assembly(), PARAMS_FILE: self.binary()}
        return {ASM_FILE: self.assembly(), BIN_FILE: self.binary()}


def c_array(pool: ConstantPool | None, cname: str, array: np.ndarray, literal) -> str:
    """C text for a constant array: the extern declaration of a pooled copy when it is large, else
    `literal(cname, array)` (the caller's static const initializer)."""
    if pool is not None and is_large(np.asarray(array)):
        pool.add_array(cname, array)
        return extern_declaration(cname, array)
    return small_constant(cname, np.asarray(array), literal)


def c_bytes(pool: ConstantPool | None, cname: str, data: bytes, literal, what: str) -> str:
    """C text for a byte blob (a params blob, a target's blob): extern when large, else `literal(cname, data)`."""
    if pool is not None and is_large(data):
        pool.add_bytes(cname, data, what)
        return (f"/* {cname}: {comment_text(what)}, {len(data)} bytes, in {BIN_NAME} */\n"
                f"extern const unsigned char {cname}[{len(data)}];\n")
    return small_constant(cname, bytes(data), literal)
