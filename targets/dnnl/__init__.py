"""dnnl: regions as JSON graphs executed by oneDNN (Intel's deep-learning library), enabled by USE_DNNL.

This file is the op table: each predicate states what oneDNN's primitives take (ops.py), and the
composite patterns are the fusions oneDNN does as post-ops (bias, the residual `sum`, relu). The
codegen (codegen.py) writes one JSON graph per region (FORMAT.md); the runtime module
(runtime/*.c, C99 on oneDNN's C API) builds the primitives from it when the model starts. build.py, the
build side (codegen, runtime sources, oneDNN as a system library), is imported only when a build needs it.

oneDNN is a system library: Debian's libdnnl-dev (oneDNN 2.x), x86-64 only here.
"""
from functools import partial

from byoc_compiler.vendor import Target, partition_for

from . import ops
from .patterns import declare_patterns

target = Target("dnnl", flag="USE_DNNL", description="JSON graphs executed by oneDNN primitives")
target.builds_for("x86_64", why="the oneDNN this project links is Debian's x86-64 libdnnl; its JIT emits x86 code")
target.runs_on("hosted", why="oneDNN is a C++ library that allocates, uses threads and needs an OS")

for op_names, predicate in ops.TABLE:
    target.supports(*op_names, predicate=predicate)
declare_patterns(target)

# TVM's spelling, for readers coming from `tvm.relay.op.contrib.dnnl`: partition for this target alone.
partition_for_dnnl = partial(partition_for, target)

target.build_side(__name__ + ".build")
