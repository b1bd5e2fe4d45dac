"""Writes the seed corpus of the ExampleJSON fuzz target (targets/examplejson/fuzz/fuzz_parser.c): the
guide's texts, every zoo model's regions (partitioned for examplejson alone and with ccompiler), and one
small text per op. It builds models, so it lives with the tests, not in the target (targets import only
byoc_compiler.vendor).

    python -m tests.fuzz.corpus_examplejson OUT_DIR      (from the repository's root)
"""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import byoc_compiler
from byoc_compiler import zoo
from byoc_compiler.backend.build import build

GUIDE = ("subgraph_0\n  input 0 10 10\n  input 1 10 10\n  add 2 inputs: 0 1 shape: 10 10\n",
         "subgraph_0\n  input 0 10 10\n  input 1 10 10\n  input 2 10 10\n  input 3 10 10\n"
         "  add 4 inputs: 0 1 shape: 10 10\n  sub 5 inputs: 4 2 shape: 10 10\n  add 6 inputs: 5 3 shape: 10 10\n")

SMALL = (
    "s\n  input 0 2 3\n  const 1 3 data: AACAPwAAAEAAAEBA\n  add 2 inputs: 0 1 shape: 2 3\n  output 2 0\n",
    "s\n  input 0 1 2 5 5\n  const 1 2 1 1 1 data: AACAPwAAAEA=\n"
    "  nn.conv2d 2 inputs: 0 1 shape: 1 2 5 5 strides: 1 1 padding: 0 0 0 0 dilation: 1 1 groups: 2\n"
    "  nn.max_pool2d 3 inputs: 2 shape: 1 2 3 3 pool_size: 2 2 strides: 2 2 padding: 0 0 0 0 dilation: 1 1 "
    "ceil_mode: 1\n  nn.avg_pool2d 4 inputs: 3 shape: 1 2 2 2 pool_size: 2 2 strides: 1 1 padding: 0 0 0 0 "
    "dilation: 1 1 ceil_mode: 0 count_include_pad: 1\n  nn.global_avg_pool2d 5 inputs: 4 shape: 1 2 1 1\n"
    "  reshape 6 inputs: 5 shape: 2\n  nn.softmax 7 inputs: 6 shape: 2 axis: -1\n",
    "s\n  input 0 4 3\n  clip 1 inputs: 0 shape: 4 3 a_min: -0.5 a_max: 0.5\n"
    "  nn.leaky_relu 2 inputs: 1 shape: 4 3 alpha: 0.1\n  nn.batch_flatten 3 inputs: 2 shape: 4 3\n"
    "  const 5 3 data: AACAPwAAAEAAAEBA\n  nn.bias_add 4 inputs: 3 5 shape: 4 3 axis: 1\n",
)


def texts() -> list[str]:
    out = list(GUIDE) + list(SMALL)
    for name in zoo.names():
        for targets in (["examplejson"], ["examplejson", "ccompiler"]):
            lib = build(byoc_compiler.partition_for(targets, zoo.get(name)))
            out.append(lib.get_source("examplejson"))
    return out


def write_corpus(directory) -> list[Path]:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for text in dict.fromkeys(texts()):
        path = directory / hashlib.sha1(text.encode()).hexdigest()[:16]
        path.write_text(text)
        paths.append(path)
    return paths


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tests.fuzz.corpus_examplejson OUT_DIR")
    print("\n".join(str(p) for p in write_corpus(sys.argv[1])))
