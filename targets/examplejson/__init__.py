"""examplejson: the ExampleJSON graph format of TVM's BYOC guide plus a C runtime, enabled by USE_EXAMPLEJSON.

This file is the op table. The codegen (codegen.py) writes one ExampleJSON subgraph block per
region (FORMAT.md); the runtime (runtime/*.c) parses it when the model starts and executes it. build.py,
the build side, is imported only when a build needs it.
"""
from functools import partial

from byoc_compiler.vendor import Target, float32_only, partition_for

target = Target("examplejson", flag="USE_EXAMPLEJSON",
                description="ExampleJSON subgraphs executed by a small C runtime")
target.runs_on("hosted", why="its runtime parses the JSON at init into malloc'ed nodes and formats errors with "
               "snprintf")

target.supports(
    "add", "subtract", "multiply", "divide", "maximum", "minimum",
    "negative", "abs", "exp", "log", "sqrt", "tanh", "sigmoid", "nn.relu", "clip", "nn.leaky_relu",
    "nn.dense", "nn.bias_add", "nn.conv2d", "nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d",
    "reshape", "nn.batch_flatten", "nn.softmax",
    predicate=float32_only)

# TVM's spelling, for readers coming from `tvm.relay.op.contrib.examplejson`: partition for this target alone.
partition_for_examplejson = partial(partition_for, target)

target.build_side(__name__ + ".build")
