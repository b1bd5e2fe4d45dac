"""examplejson: the ExampleJSON graph format of TVM's BYOC guide plus a C runtime, enabled by USE_EXAMPLEJSON.

This file is the op table. The codegen (codegen.py of this folder, when
present) sets `target.codegen` and the runtime sources that execute the JSON.
"""
from byoc_compiler.backend.target import Target, float32_only, import_optional

target = Target("examplejson", flag="USE_EXAMPLEJSON",
                description="ExampleJSON subgraphs executed by a small C runtime")

target.supports(
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "negative", "exp", "tanh", "sigmoid", "nn.relu",
    "nn.dense", "nn.bias_add", "nn.conv2d", "nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d",
    "reshape", "nn.softmax",
    predicate=float32_only)

# TVM's spelling, for readers coming from `tvm.relay.op.contrib.examplejson`: partition for this target alone.
partition_for_examplejson = target.partition_for

target.codegen = None  # set by codegen.py
import_optional(__name__ + ".codegen")
