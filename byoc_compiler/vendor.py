"""The vendor API: everything a target package may import from byoc, and nothing else.

A target (`targets/<name>/`, or any module named in config.toml's [targets]) imports only this module:

    from byoc_compiler.vendor import Target, float32_only, is_op, wildcard, is_constant, CSourceArtifact

What is here is stable within a major `API_VERSION`: a name is removed or changes meaning only with a
new major version, and a new name raises the minor version. Everything else in `byoc_compiler` may
change in any release. `tests/test_layers.py` checks that in-tree targets import nothing else.

The groups:
- declaring a target: `Target` (with `runs_on`, the runtime profiles its code builds for, since 1.4), its predicates (`float32_only`, `dtypes_only`, `rank_at_most`, `all_of`),
  `SystemLibrary` (a vendor SDK it links, found or named by its Debian package), `TargetError`, `ByocError`;
- composite patterns: `is_op`, `wildcard`, `is_constant`, `is_var`, `is_tuple`, `is_tuple_get_item`;
- the IR a codegen reads: `Call`, `Constant`, `Function`, `GlobalVar`, `Op`, `Tuple`, `TupleGetItem`, `Var`,
  `TensorType`, `TupleType`, `flatten_type`, and the traversals `post_order`, `ExprVisitor`, `users`,
  `flat_value`; `pool_out_size` (a pool's output extent, for predicates that check windows), `matmul_dims`
  (batch, M, N, K of a batched matmul);
- quantized arithmetic, so an int8 kernel computes what the reference does (API 1.1): `requantize_ratios`
  (qnn.requantize's float32 factor per channel), `add_float32_params` and `add_multipliers` (qnn.add's
  float32 and fixed-point constants); `tflite_requantize_multipliers` (a rounding="tflite" requantize's
  31-bit multiplier and exponent per channel, since 1.6) and `tflite_add_params` (a rounding="tflite" qnn.add's
  left shift, multipliers and exponents, since 1.6);
- what a codegen returns: `CSourceArtifact`, `BlobArtifact`;
- writing C (byoc_compiler.ctext, the one writer of C text in byoc): `entry_points`, `core_signature` (both
  calling conventions of a region), `c_type`; names: `is_identifier`, `sanitize_identifier`,
  `unique_identifiers`, `c_string` (a string literal), `comment`; literals that read back bit-exact:
  `literal(value, dtype)`, `float_literal`, `double_literal`, `half_literal`, `int_literal`, `element_literals`
  (an initializer list's items); arrays: `const_array`, `line_array` (one line, any dtype), `int64_array`, `shape_text`, `wrap_list` (since 1.2);
- threads (since 1.5): `build_max_threads()` (inside a codegen: how many threads' scratch to plan, the
  build option max_threads) and `PARALLEL_HEADER` ("byoc/parallel.h": a C-source target's kernels include
  it -- the runtime's include directory is on every compile of a model -- for `byoc_parallel_for` and
  `byoc_parallel_chunks`, docs/runtime-abi.md);
- the CPU (since 1.8): `build_cpu_features()` (inside a codegen: the features, in /proc/cpuinfo spelling, the code
  may assume where it runs: the toolchain's cpu_features, else the building machine's for a native toolchain);
- workspaces: `plan_offsets` (an arena by lifetimes), `peak_live_bytes`, `align_up`, `WORKSPACE_ALIGNMENT`
  (what the caller aligns a region's workspace to, and plan_offsets' default; since 1.1); `workspace_budget()`
  (the build's largest workspace pool, None when unbounded: size kernel scratch by it; since 1.4);
- constants: `is_large`, `extern_declaration` (large constants are linked as bytes, not C text);
  `constant_array` (a small one as a `static const` array in the build's constants section, counted in the
  board's constants pool; since 1.4);
- partitioning for one target, TVM's `partition_for_<target>`: `partial(partition_for, target)`;
- testing a C runtime of your own outside a model: `standalone_library` (your runtime sources plus byoc's
  runtime core as a shared library for ctypes, built with a host toolchain's own commands: `toolchain=`
  since 1.7), `runtime_source_dir`, `runtime_include_flags`.

The top-level package (`byoc_compiler.build`, `.zoo`, `.runtime`, ...) is public too, for tools and tests,
not for targets: `.importlinter` closes every other module of byoc_compiler to them (tests/test_layers.py).
"""
from __future__ import annotations

from .backend.artifact import BlobArtifact, CSourceArtifact
from .backend.constants import extern_declaration, is_large
from .backend.constants import constant_array
from .backend.memory_plan import ALIGNMENT as WORKSPACE_ALIGNMENT
from .backend.threads import build_max_threads
from .backend.cpu_features import build_cpu_features
from .backend.memory_plan import align_up, peak_live_bytes, plan_offsets, workspace_budget
from .ctext import (c_string, c_type, comment, const_array, core_signature, double_literal, element_literals,
                    entry_points, float_literal, half_literal, int64_array, int_literal, is_identifier, line_array, literal,
                    sanitize_identifier, shape_text, unique_identifiers, wrap_list)
from .op.batch_matmul import matmul_dims
from .op.pool import pool_out_size
from .op.qnn import add_float32_params, add_multipliers, requantize_ratios, tflite_add_params, tflite_requantize_multipliers
from .target import VENDOR_API_VERSION, SystemLibrary, Target, TargetError, all_of, dtypes_only, float32_only, rank_at_most
from .errors import ByocError
from .partition import partition_for
from .runtime.sources import include_flags as runtime_include_flags
from .runtime.sources import source_dir as runtime_source_dir
from .runtime.standalone import standalone_library
from .ir.analysis import flat_value, users
from .ir.expr import Call, Constant, Function, GlobalVar, Op, Tuple, TupleGetItem, Var
from .ir.types import TensorType, TupleType, flatten_type
from .ir.visitor import ExprVisitor, post_order
from .pattern import is_constant, is_op, is_tuple, is_tuple_get_item, is_var, wildcard

API_VERSION = VENDOR_API_VERSION

PARALLEL_HEADER = "byoc/parallel.h"

# What changed, newest first (a minor version adds names; a major one may remove or change them):
CHANGELOG = {
    (1, 8): "build_cpu_features: the CPU features a codegen may assume where the model runs (a toolchain's "
            "cpu_features in config.toml, else the building machine's for a toolchain that builds for it)",
    (1, 7): "standalone_library(..., toolchain=NAME or ToolchainConfig): compiled and linked with that host "
            "toolchain's own commands (default: the first of the settings' [build] toolchains that can load here); "
            "cc= names a toolchain the same way",
    (1, 6): "tflite_requantize_multipliers (TFLite's multiplier and exponent per channel of a rounding=\"tflite\" "
            "requantize), tflite_add_params (a rounding=\"tflite\" qnn.add's)",
    (1, 5): "threads: build_max_threads (per-thread scratch to plan), PARALLEL_HEADER (byoc/parallel.h: "
            "byoc_parallel_for, byoc_parallel_chunks)",
    (1, 4): "Target.runs_on (the runtime profiles, hosted and/or freestanding, a target's code builds for); "
            "constant_array; CSourceArtifact.workspace_lower_bound; workspace_budget",
    (1, 3): "Target(..., vendor_api=(major, minor)): the API version a target was written for; byoc refuses a "
            "target of another major version (or of a newer minor one) with a message naming both",
    (1, 2): "C text writers from byoc_compiler.ctext: literal, float_literal, double_literal, half_literal, "
            "int_literal, element_literals, const_array, line_array, int64_array, shape_text, wrap_list, c_string, comment",
    (1, 1): "WORKSPACE_ALIGNMENT; requantize_ratios, add_float32_params, add_multipliers",
    (1, 0): "the first versioned vendor API",
}

__all__ = [
    "API_VERSION", "CHANGELOG",
    "Target", "TargetError", "ByocError", "SystemLibrary", "pool_out_size", "matmul_dims",
    "requantize_ratios", "tflite_requantize_multipliers", "tflite_add_params", "add_float32_params", "add_multipliers", "all_of", "dtypes_only", "float32_only", "rank_at_most",
    "is_op", "wildcard", "is_constant", "is_var", "is_tuple", "is_tuple_get_item",
    "Call", "Constant", "Function", "GlobalVar", "Op", "Tuple", "TupleGetItem", "Var",
    "TensorType", "TupleType", "flatten_type", "post_order", "ExprVisitor", "users", "flat_value",
    "CSourceArtifact", "BlobArtifact",
    "entry_points", "core_signature", "c_type", "is_identifier", "sanitize_identifier", "unique_identifiers",
    "c_string", "comment", "literal", "float_literal", "double_literal", "half_literal", "int_literal",
    "element_literals", "const_array", "line_array", "int64_array", "shape_text", "wrap_list",
    "build_max_threads", "PARALLEL_HEADER", "build_cpu_features",
    "plan_offsets", "peak_live_bytes", "align_up", "WORKSPACE_ALIGNMENT", "workspace_budget",
    "is_large", "extern_declaration", "constant_array",
    "partition_for", "runtime_source_dir", "runtime_include_flags", "standalone_library",
]
