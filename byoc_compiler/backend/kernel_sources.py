"""Which files of a target's C kernel library a build needs: the ones its generated code references.

A build's compile time is mostly the kernel library (a firmware project compiles what it is given, and
a small model needs a few of ccompiler's files): so every build and the Model Library Format export take
only the files that define a function or object the generated sources name, closed over the files' own
references. The reading is lexical and
errs on the side of keeping: any identifier counts as a reference (calls, function pointers, comments), a
file whose external function definitions cannot be read is kept, and assembly or other files are kept. A
file dropped wrongly would show as an undefined reference at link time (tests/test_baremetal.py links
the images and the export's example).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Sequence

# An external function definition: a line not starting with `static`, ending in `name(params) {`.
_DEFINITION = re.compile(r"^(?!static\b)(?:[A-Za-z_][\w \t*]*?[\s*])?([A-Za-z_]\w*)\s*\(([^;{}()]|\([^()]*\))*\)\s*\{",
                         re.M)
# An external object definition at file scope: `type name = ...` or `type name[N] = ...` on an unindented
# line (a target runtime's `const ByocModuleKind byoc_module_kind_<kind> = {...}` is what the runtime links by).
_OBJECT = re.compile(r"^(?!static\b|extern\b|typedef\b)[A-Za-z_][\w \t*]*?[\s*]([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*=",
                     re.M)
_TOKEN = re.compile(r"[A-Za-z_]\w*")


def defined_functions(text: str) -> set[str]:
    """The external functions and objects a C file defines."""
    return {m.group(1) for m in _DEFINITION.finditer(text)} | {m.group(1) for m in _OBJECT.finditer(text)}


def used_sources(roots: Iterable[str], library: Sequence[Path]) -> list[Path]:
    """The files of `library` (in their order) that the texts `roots` need, directly or through each other."""
    texts = {Path(f): Path(f).read_text(errors="replace") for f in library if Path(f).suffix == ".c"}
    defines = {f: defined_functions(t) for f, t in texts.items()}
    keep = {Path(f) for f in library if Path(f) not in texts or not defines[Path(f)]}
    wanted: set[str] = set()
    pending = list(roots) + [texts[f] for f in keep if f in texts]
    while pending:
        wanted |= set(_TOKEN.findall(pending.pop()))
        for f, names in defines.items():
            if f not in keep and names & wanted:
                keep.add(f)
                pending.append(texts[f])
    return [Path(f) for f in library if Path(f) in keep]


def link_signature(library: Sequence[Path]) -> str:
    """What used_sources' choice depends on besides the roots: each C file's definitions and the other files'
    names it uses. An edit that leaves them (a comment, a loop's body) keeps the signature, so SCons
    recompiles the file without planning again; a new call into another file changes it."""
    texts = {Path(f): Path(f).read_text(errors="replace") for f in library if Path(f).suffix == ".c"}
    defines = {f: defined_functions(t) for f, t in texts.items()}
    everything = set().union(*defines.values()) if defines else set()
    lines = []
    for f in sorted(texts):
        used = (set(_TOKEN.findall(texts[f])) & everything) - defines[f]
        lines.append(f"{f}: {' '.join(sorted(defines[f]))} | {' '.join(sorted(used))}")
    return "\n".join(lines)
