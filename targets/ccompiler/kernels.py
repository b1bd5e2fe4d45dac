"""The ccompiler target's kernel library, described for its codegen.

The library itself is C (kernels/byoc_ck.h and kernels/ck_*.c): float32, contiguous row-major,
int64 shapes, no allocation. This module says where it is, which C function serves which op and
with which signature, the enum spellings, the fields of its parameter structs (for C99
designated initializers), and mirrors the two size formulas a code generator needs at codegen
time (the output size and the scratch bytes of each call) so it can plan a static workspace.
The C compiler checks the descriptions against the headers (kernel_check.py); tests/test_ccompiler_kernels.py
checks the size formulas by calling the C beside them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from byoc_compiler.vendor import build_max_threads, matmul_dims, runtime_include_flags, runtime_source_dir


def element_count(dims) -> int:
    """Elements of a shape whose dims may be numpy integers: a Python int, for C literals and sizes."""
    return math.prod(int(d) for d in dims)


KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
INCLUDE_DIR = KERNEL_DIR
HEADER = "byoc_ck.h"
SOURCES = tuple(KERNEL_DIR / name for name in (
    "ck_microkernel.c", "ck_gemm.c", "ck_dense.c", "ck_conv2d.c", "ck_elementwise.c", "ck_pool.c", "ck_shape.c",
    "ck_transformer.c", "ck_reduce.c", "ck_resize.c", "ck_qgemm.c", "ck_qconv.c", "ck_qwinograd.c", "ck_qdirect.c",
    "ck_qelementwise.c",
    "ck_activation.c", "ck_depthwise.c", "ck_dw_flat.c", "ck_stem.c", "ck_parallel.c", "ck_winograd.c"))
HEADERS = (KERNEL_DIR / HEADER, KERNEL_DIR / "ck_internal.h", KERNEL_DIR / "ck_transformer.h",
           KERNEL_DIR / "ck_reduce.h", KERNEL_DIR / "ck_resize.h", KERNEL_DIR / "ck_qnn.h", KERNEL_DIR / "ck_qinternal.h",
           KERNEL_DIR / "ck_activation.h", KERNEL_DIR / "ck_depthwise.h", KERNEL_DIR / "ck_stem.h")


def standalone_args() -> list[str]:
    """Compiler arguments that build the library outside a model (tests, bench/kernels.py): the runtime's
    headers and the sources it calls (the thread pool of byoc/parallel.h and the last error)."""
    return [*runtime_include_flags(), str(runtime_source_dir() / "parallel.c"), str(runtime_source_dir() / "runtime.c")]


# Link flags the library needs (expf, sqrtf, ...).
LDFLAGS = ("-lm",)


@dataclass(frozen=True)
class KernelFunction:
    name: str                          # C symbol
    params: tuple[tuple[str, str], ...]  # (C type, parameter name), in order
    doc: str
    returns: str = "int32_t"           # 0 = success

    def declaration(self) -> str:
        args = ", ".join(f"{ctype} {name}" if not ctype.endswith("*") else f"{ctype}{name}"
                         for ctype, name in self.params) or "void"
        space = "" if self.returns.endswith("*") else " "
        return f"{self.returns}{space}{self.name}({args});"


def _fn(name: str, params: str, doc: str, returns: str = "int32_t") -> KernelFunction:
    """params as 'type name, type name' text (one source of truth, readable like the header)."""
    parsed = []
    for item in ([] if params == "void" else params.split(",")):
        item = item.strip()
        split = max(item.rfind(" "), item.rfind("*"))
        parsed.append((item[:split + 1].strip(), item[split + 1:].strip()))
    return KernelFunction(name, tuple(parsed), doc, returns)


FUNCTIONS: dict[str, KernelFunction] = {f.name: f for f in (
    _fn("ck_gemm_workspace_bytes", "int64_t m, int64_t n, int64_t k", "scratch of ck_gemm", "size_t"),
    _fn("ck_gemm_kernel_name", "void", "name of the register-tile kernel in use", "const char *"),
    _fn("ck_gemm_kernel_at", "int32_t index", "names of the compiled-in kernels, NULL past the end", "const char *"),
    _fn("ck_gemm_use_kernel", "const char *name", "force a kernel (tests, benchmarks)"),
    _fn("ck_gemm", "int64_t m, int64_t n, int64_t k, const float *a, int64_t a_row_stride, int64_t a_col_stride, "
        "const float *b, int64_t b_row_stride, int64_t b_col_stride, float *c, int64_t ldc, "
        "const ck_epilogue *epilogue, void *workspace", "C = A . B, any element strides"),
    _fn("ck_dense_workspace_bytes", "int64_t m, int64_t n, int64_t k", "scratch of ck_dense", "size_t"),
    _fn("ck_dense", "int64_t m, int64_t n, int64_t k, const float *data, const float *weight, "
        "const float *bias, int32_t activation, float *out, void *workspace",
        "nn.dense (+ bias_add, + relu): out[M,N] = data[M,K] . weight[N,K]^T"),
    _fn("ck_matmul_workspace_bytes", "int64_t m, int64_t n, int64_t k", "scratch of ck_matmul", "size_t"),
    _fn("ck_matmul", "int64_t m, int64_t n, int64_t k, const float *a, int32_t transpose_a, const float *b, "
        "int32_t transpose_b, float *out, void *workspace", "nn.matmul"),
    _fn("ck_gemm_packed_b_bytes", "int64_t n, int64_t k", "size of a packed B (dense/matmul weight)", "size_t"),
    _fn("ck_gemm_pack_b", "int64_t n, int64_t k, const float *b, int64_t b_row_stride, int64_t b_col_stride, "
        "float *packed", "B[K, N] -> the micro-kernels' packed layout (pack_gemm_b mirrors it)"),
    _fn("ck_gemm_prepacked_workspace_bytes", "int64_t m, int64_t n, int64_t k", "scratch of the *_prepacked gemms",
        "size_t"),
    _fn("ck_dense_prepacked", "int64_t m, int64_t n, int64_t k, const float *data, const float *packed_weight, "
        "const float *bias, int32_t activation, float *out, void *workspace", "ck_dense on a packed weight"),
    _fn("ck_matmul_prepacked", "int64_t m, int64_t n, int64_t k, const float *a, int32_t transpose_a, "
        "const float *packed_b, float *out, void *workspace", "ck_matmul on a packed op(b)"),
    _fn("ck_batch_matmul_prepacked", "int64_t batch, int64_t m, int64_t n, int64_t k, const float *a, "
        "const int64_t *a_offsets, int32_t transpose_a, const float *packed_b, const int64_t *b_offsets, "
        "float *out, void *workspace", "ck_batch_matmul on packed B matrices"),
    _fn("ck_conv2d_output_hw", "const ck_conv2d_params *p, int64_t *out_h, int64_t *out_w", "conv2d output size"),
    _fn("ck_conv2d_workspace_bytes", "const ck_conv2d_params *p", "scratch of ck_conv2d", "size_t"),
    _fn("ck_conv2d", "const ck_conv2d_params *p, const float *data, const float *weight, const float *bias, "
        "int32_t activation, float *out, void *workspace", "nn.conv2d (+ bias_add, + relu), NCHW/OIHW"),
    _fn("ck_conv2d_packed_weight_bytes", "const ck_conv2d_params *p", "size of a packed conv2d weight", "size_t"),
    _fn("ck_conv2d_pack_weight", "const ck_conv2d_params *p, const float *weight, float *packed",
        "conv2d weight -> the micro-kernels' packed layout (pack_conv2d_weight mirrors it)"),
    _fn("ck_conv2d_prepacked", "const ck_conv2d_params *p, const float *data, const float *packed_weight, "
        "const float *bias, int32_t activation, float *out, void *workspace", "ck_conv2d on a packed weight"),
    _fn("ck_conv2d_prepacked_add", "const ck_conv2d_params *p, const float *data, const float *packed_weight, "
        "const float *bias, const float *residual, int32_t activation, float *out, void *workspace",
        "activation(ck_conv2d_prepacked + residual): a residual add (+ relu) in the conv's epilogue"),
    _fn("ck_conv2d_winograd_weight_bytes", "const ck_conv2d_params *p, int32_t m",
        "size of a Winograd F(m x m, 3 x 3) weight (winograd.pack_weight); 0: not this path's geometry", "size_t"),
    _fn("ck_conv2d_winograd_workspace_bytes", "const ck_conv2d_params *p, int32_t m", "scratch of ck_conv2d_winograd",
        "size_t"),
    _fn("ck_conv2d_winograd", "const ck_conv2d_params *p, int32_t m, const float *data, const float *packed_weight, "
        "const float *bias, const float *residual, int32_t activation, float *out, void *workspace",
        "activation(conv2d + bias [+ residual]) by Winograd F(m x m, 3 x 3): stride 1, 3x3, one group"),
    _fn("ck_binary", "int32_t op, const float *lhs, int32_t lhs_ndim, const int64_t *lhs_shape, "
        "const float *rhs, int32_t rhs_ndim, const int64_t *rhs_shape, float *out, int32_t out_ndim, "
        "const int64_t *out_shape", "binary op with numpy broadcasting"),
    _fn("ck_unary", "int32_t op, int64_t n, const float *in, float *out, float p0, float p1",
        "unary op; clip: p0=a_min p1=a_max; leaky_relu: p0=alpha"),
    _fn("ck_bias_add", "int64_t outer, int64_t channels, int64_t inner, const float *data, const float *bias, "
        "float *out", "nn.bias_add on data viewed as [outer, channels, inner]"),
    _fn("ck_batch_norm", "int64_t outer, int64_t channels, int64_t inner, const float *data, const float *gamma, "
        "const float *beta, const float *mean, const float *var, float epsilon, int32_t center, int32_t scale, "
        "float *out", "nn.batch_norm output 0 (inference)"),
    _fn("ck_pool2d_output_hw", "const ck_pool2d_params *p, int64_t *out_h, int64_t *out_w", "pool output size"),
    _fn("ck_max_pool2d", "const ck_pool2d_params *p, const float *data, float *out", "nn.max_pool2d"),
    _fn("ck_avg_pool2d", "const ck_pool2d_params *p, const float *data, float *out", "nn.avg_pool2d"),
    _fn("ck_global_avg_pool2d", "int64_t planes, int64_t plane, const float *data, float *out",
        "nn.global_avg_pool2d: planes = N*C, plane = H*W"),
    _fn("ck_copy", "int64_t n, const float *in, float *out", "reshape (and other pure copies)"),
    _fn("ck_transpose", "int32_t ndim, const int64_t *in_shape, const int32_t *axes, const float *in, float *out",
        "transpose, any rank up to CK_MAX_RANK"),
    _fn("ck_concatenate", "int32_t num_inputs, const float *const *inputs, const int64_t *sizes, int64_t outer, "
        "int64_t inner, float *out", "concatenate: input i viewed as [outer, sizes[i], inner]"),
    _fn("ck_batch_matmul_workspace_bytes", "int64_t m, int64_t n, int64_t k", "scratch of ck_batch_matmul", "size_t"),
    _fn("ck_batch_matmul", "int64_t batch, int64_t m, int64_t n, int64_t k, const float *a, "
        "const int64_t *a_offsets, int32_t transpose_a, const float *b, const int64_t *b_offsets, "
        "int32_t transpose_b, float *out, void *workspace", "nn.batch_matmul (broadcast batch as offsets)"),
    _fn("ck_softmax_rows", "int64_t rows, int64_t n, const float *in, float *out", "nn.softmax on the last axis"),
    _fn("ck_layer_norm_rows", "int64_t rows, int64_t n, const float *in, const float *gamma, const float *beta, "
        "float epsilon, float *out", "nn.layer_norm on the last axis"),
    _fn("ck_gelu", "int64_t n, const float *in, float *out, int32_t approximate", "nn.gelu"),
    _fn("ck_reduce", "int32_t op, int32_t ndim, const int64_t *shape, const int32_t *reduce, const float *in, "
        "float *out", "sum, mean, max, min, prod over the axes flagged in reduce (any set)"),
    _fn("ck_resize", "int32_t ndim, const int64_t *in_shape, const int64_t *out_shape, const double *scales, "
        "const double *roi, int32_t method, int32_t coordinate_mode, int32_t nearest_mode, "
        "float extrapolation_value, const float *in, float *out",
        "image.resize, nearest or linear, ONNX Resize's coordinate and nearest modes"),
    _fn("ck_hard_sigmoid", "int64_t n, const float *in, float *out, float alpha, float beta", "nn.hard_sigmoid"),
    _fn("ck_hard_swish", "int64_t n, const float *in, float *out", "nn.hard_swish"),
)}

# The int8/uint8 functions (ck_qnn.h) are described in qkernels.py.
from .qkernels import qfunctions  # noqa: E402

FUNCTIONS.update(qfunctions(_fn))

# Enum spellings (C identifiers from byoc_ck.h) per Relay op.
BINARY_OPS = {"add": "CK_ADD", "subtract": "CK_SUBTRACT", "multiply": "CK_MULTIPLY", "divide": "CK_DIVIDE",
              "maximum": "CK_MAXIMUM", "minimum": "CK_MINIMUM"}
UNARY_OPS = {"negative": "CK_NEGATIVE", "abs": "CK_ABS", "exp": "CK_EXP", "log": "CK_LOG", "sqrt": "CK_SQRT",
             "tanh": "CK_TANH", "sigmoid": "CK_SIGMOID", "nn.relu": "CK_RELU", "clip": "CK_CLIP",
             "nn.leaky_relu": "CK_LEAKY_RELU"}
ACTIVATIONS = {None: "CK_ACT_NONE", "nn.relu": "CK_ACT_RELU", "relu6": "CK_ACT_RELU6"}
REDUCE_OPS = {"sum": "CK_REDUCE_SUM", "mean": "CK_REDUCE_MEAN", "max": "CK_REDUCE_MAX", "min": "CK_REDUCE_MIN",
              "prod": "CK_REDUCE_PROD"}
# image.resize attributes -> ck_resize's enums (ck_resize.h); what is not listed stays on the host.
RESIZE_METHODS = {"nearest": "CK_RESIZE_NEAREST", "linear": "CK_RESIZE_LINEAR"}
COORDINATE_MODES = {"half_pixel": "CK_COORD_HALF_PIXEL", "half_pixel_symmetric": "CK_COORD_HALF_PIXEL_SYMMETRIC",
                    "pytorch_half_pixel": "CK_COORD_PYTORCH_HALF_PIXEL", "align_corners": "CK_COORD_ALIGN_CORNERS",
                    "asymmetric": "CK_COORD_ASYMMETRIC", "tf_crop_and_resize": "CK_COORD_TF_CROP_AND_RESIZE"}
NEAREST_MODES = {"round_prefer_floor": "CK_ROUND_PREFER_FLOOR", "round_prefer_ceil": "CK_ROUND_PREFER_CEIL",
                 "floor": "CK_NEAREST_FLOOR", "ceil": "CK_NEAREST_CEIL"}
# Numeric values of the enums (the order in byoc_ck.h), for callers that do not include the header.
ENUM_VALUES = {**{name: i for i, name in enumerate(BINARY_OPS.values())},
               **{name: i for i, name in enumerate(UNARY_OPS.values())},
               "CK_ACT_NONE": 0, "CK_ACT_RELU": 1, "CK_ACT_RELU6": 2,
               **{name: i for table in (REDUCE_OPS, RESIZE_METHODS, COORDINATE_MODES, NEAREST_MODES)
                  for i, name in enumerate(table.values())}}

# Which function computes which op.
OP_FUNCTIONS = {
    **{op: "ck_binary" for op in BINARY_OPS},
    **{op: "ck_unary" for op in UNARY_OPS},
    "nn.dense": "ck_dense", "nn.matmul": "ck_matmul", "nn.conv2d": "ck_conv2d", "nn.bias_add": "ck_bias_add",
    "nn.batch_norm": "ck_batch_norm", "nn.max_pool2d": "ck_max_pool2d", "nn.avg_pool2d": "ck_avg_pool2d",
    "nn.global_avg_pool2d": "ck_global_avg_pool2d", "reshape": "ck_copy", "transpose": "ck_transpose",
    "concatenate": "ck_concatenate",
    "nn.batch_matmul": "ck_batch_matmul", "nn.softmax": "ck_softmax_rows", "nn.layer_norm": "ck_layer_norm_rows",
    "nn.gelu": "ck_gelu",
    **{op: "ck_reduce" for op in REDUCE_OPS}, "image.resize": "ck_resize",
    "nn.hard_sigmoid": "ck_hard_sigmoid", "nn.hard_swish": "ck_hard_swish",
}
MAX_RANK = 8  # CK_MAX_RANK: ck_binary / ck_transpose take at most this many dims

# Struct fields in declaration order (all int64_t unless listed in *_INT32_FIELDS).
CONV2D_PARAM_FIELDS = ("batch", "channels", "height", "width", "out_channels", "kernel_h", "kernel_w",
                       "stride_h", "stride_w", "pad_top", "pad_left", "pad_bottom", "pad_right",
                       "dilation_h", "dilation_w", "groups")
POOL2D_PARAM_FIELDS = ("batch", "channels", "height", "width", "pool_h", "pool_w", "stride_h", "stride_w",
                       "pad_top", "pad_left", "pad_bottom", "pad_right", "dilation_h", "dilation_w",
                       "ceil_mode", "count_include_pad")
POOL2D_INT32_FIELDS = ("ceil_mode", "count_include_pad")


def c_struct_initializer(fields: tuple[str, ...], values: dict[str, int]) -> str:
    """`{.batch = 1, .channels = 3, ...}` for a ck_*_params struct (every field required)."""
    missing = [f for f in fields if f not in values]
    if missing:
        raise ValueError(f"missing kernel parameter(s) {missing}; give every field of {fields}")
    return "{" + ", ".join(f".{f} = {int(values[f])}" for f in fields) + "}"


def conv2d_params(data_shape, weight_shape, strides, padding, dilation, groups) -> dict[str, int]:
    """ck_conv2d_params values from Relay's nn.conv2d types and attributes."""
    n, c, h, w = data_shape
    o, _, kh, kw = weight_shape
    return dict(batch=n, channels=c, height=h, width=w, out_channels=o, kernel_h=kh, kernel_w=kw,
                stride_h=strides[0], stride_w=strides[1], pad_top=padding[0], pad_left=padding[1],
                pad_bottom=padding[2], pad_right=padding[3], dilation_h=dilation[0], dilation_w=dilation[1],
                groups=groups)


def pool2d_params(data_shape, pool_size, strides, padding, dilation, ceil_mode, count_include_pad=False):
    """ck_pool2d_params values from Relay's pool attributes."""
    n, c, h, w = data_shape
    return dict(batch=n, channels=c, height=h, width=w, pool_h=pool_size[0], pool_w=pool_size[1],
                stride_h=strides[0], stride_w=strides[1], pad_top=padding[0], pad_left=padding[1],
                pad_bottom=padding[2], pad_right=padding[3], dilation_h=dilation[0], dilation_w=dilation[1],
                ceil_mode=int(bool(ceil_mode)), count_include_pad=int(bool(count_include_pad)))


# ---- size formulas, mirrored from the C (ck_internal.h, ck_gemm.c, ck_conv2d.c) ----------------
M_QUANTUM, N_QUANTUM, MC, KC, ALIGN = 24, 32, 96, 256, 64  # CK_* of ck_internal.h (kernel_check.py asserts them)
_N_CHUNK, _MIN_TASKS, _ROW_TASKS = 1024, 8, 16    # ck_gemm.c's split of C into tasks
_NARROW_MIN_COLS = 512            # ck_gemm.c's CK_NARROW_MIN_COLS (two row blocks: column chunks only)
_DW_TASK_GROUPS = 4               # ck_conv2d.c's split of one-channel groups into tasks
PM_MR, PM_MAX_PIXELS, PM_MAX_OFFSET_PIXELS = 7, 1024, 4096  # pixel-major tiles (CK_PM_MR, CK_PM_MAX_*PIXELS)
PM_REDUCE_PIXELS = 196            # ck_conv2d.c's CK_PM_REDUCE_PIXELS (1x1 convolutions that reduce channels)
NR_MAX, STEM_MAX_CHANNELS = 32, 4  # ck_stem.c's widest tile (CK_NR_MAX) and input channels (CK_STEM_MAX_CHANNELS)


def _round_up(x: int, q: int) -> int:
    return (x + q - 1) // q * q


def gemm_split(m: int, n: int) -> tuple[int, int]:
    """ck_gemm_split_of: (column chunks of at most _N_CHUNK, as even as the 32-column grid allows, or about
    _MIN_TASKS narrower ones where that would be one chunk over one row block (_gemm_chunk_cols); row groups
    of whole 24-row slivers, about _ROW_TASKS tasks in all, made when there are fewer than _MIN_TASKS chunks
    and more than one MC block of rows); the shape alone decides: results do not depend on the thread count."""
    chunks = -(-n // _gemm_chunk_cols(m, n))
    if chunks >= _MIN_TASKS or m <= MC or _narrow(m, n):
        return chunks, 1
    slivers = -(-m // M_QUANTUM)
    per_group = -(-slivers // min(slivers, -(-_ROW_TASKS // chunks)))
    return chunks, -(-slivers // per_group)


def _narrow(m: int, n: int) -> bool:
    """Two row blocks over at least _NARROW_MIN_COLS columns, in fewer than _MIN_TASKS chunks: column chunks only,
    about _ROW_TASKS of them."""
    wide = _round_up(-(-n // -(-n // _N_CHUNK)), N_QUANTUM)      # the chunks of at most _N_CHUNK columns
    return -(-n // wide) < _MIN_TASKS and -(-m // MC) == 2 and n >= _NARROW_MIN_COLS


def _gemm_chunk_cols(m: int, n: int) -> int:
    """ck_gemm_split_of's column chunk width (one row block and one chunk: about _MIN_TASKS narrower ones; two row
    blocks on wide planes: about _ROW_TASKS)."""
    if _narrow(m, n):
        return _round_up(-(-n // _ROW_TASKS), N_QUANTUM)
    chunks = -(-n // _N_CHUNK)
    cols = _round_up(-(-n // chunks), N_QUANTUM)
    if m <= MC and chunks == 1 and n > N_QUANTUM:
        cols = _round_up(-(-n // _MIN_TASKS), N_QUANTUM)
    return cols


def _gemm_slots(m: int, n: int) -> int:
    """Per-thread scratch slots of one gemm: the build's max_threads, at most one per task."""
    chunks, groups = gemm_split(m, n)
    return min(build_max_threads(), chunks * groups)


def gemm_workspace_bytes(m: int, n: int, k: int) -> int:
    """Bytes of scratch ck_gemm / ck_dense / ck_matmul need (independent of CPU and flags): per slot, A's
    block and B's panel; with row groups, A's block per slot and all of B packed once (ck_pack_b_ahead's
    layout) after them."""
    if m <= 0 or n <= 0 or k <= 0:
        return 0
    kc = min(KC, k)
    a_block = 4 * min(MC, _round_up(m, M_QUANTUM)) * kc
    if gemm_split(m, n)[1] > 1:
        return _gemm_slots(m, n) * (ALIGN + a_block) + ALIGN + 4 * _round_up(n, N_QUANTUM) * k
    return _gemm_slots(m, n) * (ALIGN + a_block + 4 * kc * _gemm_chunk_cols(m, n))


dense_workspace_bytes = matmul_workspace_bytes = batch_matmul_workspace_bytes = gemm_workspace_bytes


def gemm_prepacked_workspace_bytes(m: int, n: int, k: int) -> int:
    """Bytes of scratch ck_dense_prepacked / ck_matmul_prepacked / ck_batch_matmul_prepacked need: A's
    slivers only, B is read where it lies."""
    if m <= 0 or n <= 0 or k <= 0:
        return 0
    return _gemm_slots(m, n) * (ALIGN + 4 * min(MC, _round_up(m, M_QUANTUM)) * min(KC, k))


def gemm_packed_b_floats(n: int, k: int) -> int:
    """Floats of ck_gemm_pack_b's layout of one B[k, n] (ck_gemm_packed_b_bytes / 4)."""
    return _round_up(n, N_QUANTUM) * k if n > 0 and k > 0 else 0


def pack_gemm_b(b: np.ndarray) -> np.ndarray:
    """ck_gemm_pack_b in numpy, so the codegen packs constant dense/matmul weights once, at codegen time:
    B [k, n] (any view: a dense weight [n, k] is passed as weight.T) -> per K block of KC, N_QUANTUM-column
    slivers stored k-major, zero columns past n. Every micro-kernel (8 to 32 columns wide) reads it."""
    k, n = b.shape
    n32 = _round_up(n, N_QUANTUM)
    padded = np.zeros((k, n32), b.dtype)
    padded[:, :n] = b
    out = [padded[pc:pc + KC].reshape(-1, n32 // N_QUANTUM, N_QUANTUM).transpose(1, 0, 2).reshape(-1)
           for pc in range(0, k, KC)]                  # [kc, n32] -> slivers [n32 / 32, kc, 32]
    return np.concatenate(out) if out else np.zeros(0, b.dtype)


def conv2d_output_hw(p: dict[str, int]) -> tuple[int, int]:
    span_h = p["height"] + p["pad_top"] + p["pad_bottom"] - p["dilation_h"] * (p["kernel_h"] - 1) - 1
    span_w = p["width"] + p["pad_left"] + p["pad_right"] - p["dilation_w"] * (p["kernel_w"] - 1) - 1
    return span_h // p["stride_h"] + 1, span_w // p["stride_w"] + 1


def conv2d_workspace_bytes(p: dict[str, int]) -> int:
    """Bytes of scratch ck_conv2d needs: with one input channel per group (direct kernels) 0, or for
    windows of at most 64 taps (no dilation, stride_w 1 or 2: the 3x3 row kernels and ck_depthwise.c)
    a zero-bordered copy of one input plane and as much again for the flat pass over narrow stride-1
    planes; otherwise the gemm's packing buffers (or the pixel-major ones), and for windows wider than
    one pixel a zero-bordered copy of one group's input planes after them."""
    per_group_in = p["channels"] // p["groups"]
    if per_group_in == 1:
        bordered = (p["dilation_h"], p["dilation_w"]) == (1, 1) and p["kernel_h"] * p["kernel_w"] <= 64 and \
            p["stride_w"] in (1, 2)
        padded = (p["height"] + p["pad_top"] + p["pad_bottom"]) * (p["width"] + p["pad_left"] + p["pad_right"])
        # one bordered plane and flat row per thread: tasks of _dw_task_groups groups (ck_dw_slots)
        slots = min(build_max_threads(), -(-p["batch"] * p["groups"] // _dw_task_groups(p)))
        return slots * (ALIGN + 2 * 4 * padded) if bordered else 0
    oh, ow = conv2d_output_hw(p)
    if _stem_takes(p, ow):  # ck_stem.c: the input copied once, each padded row as its even then its odd columns
        half = max(_round_up(ow, NR_MAX) + (p["kernel_w"] - 1) * p["dilation_w"] // 2,
                   (p["width"] + p["pad_left"] + p["pad_right"] + 1) // 2)
        return ALIGN + 4 * p["channels"] * (p["height"] + p["pad_top"] + p["pad_bottom"]) * 2 * half
    og, kdim, pixels = p["out_channels"] // p["groups"], per_group_in * p["kernel_h"] * p["kernel_w"], oh * ow
    gemm = gemm_workspace_bytes(og, pixels, kdim)
    by_offsets = p["kernel_h"] * p["kernel_w"] > 1 and p["stride_w"] in (1, 2) and ow % PM_MR == 0
    if _pixel_major_pays(og, pixels, by_offsets) or _pixel_major_reduces(p, og, kdim, pixels):
        pm_pixels = _round_up(pixels, PM_MR)
        slivers = 0 if by_offsets else pm_pixels * min(KC, kdim)  # (the tiles read the bordered copy in place)
        gemm = max(gemm, ALIGN + 4 * (slivers + pm_pixels * _round_up(og, M_QUANTUM)))
    if p["kernel_h"] * p["kernel_w"] > 1:  # + a zero-bordered copy of one group's input (the im2col's source)
        padded = (p["height"] + p["pad_top"] + p["pad_bottom"]) * (p["width"] + p["pad_left"] + p["pad_right"])
        gemm += ALIGN + 4 * per_group_in * padded
    return gemm


def _stem_takes(p: dict[str, int], ow: int) -> bool:
    """ck_stem_takes: one group of 2 to STEM_MAX_CHANNELS input channels, a window wider than one pixel of at
    most KC taps, stride_w 2, output rows of at least 16 pixels."""
    return p["groups"] == 1 and 2 <= p["channels"] <= STEM_MAX_CHANNELS and p["kernel_h"] * p["kernel_w"] > 1 and \
        p["channels"] * p["kernel_h"] * p["kernel_w"] <= KC and p["stride_w"] == 2 and ow >= 16


def _dw_task_groups(p: dict[str, int]) -> int:
    """ck_dw_task_groups: _DW_TASK_GROUPS groups per task, 2x or 4x that where their output planes would not
    end on a 64-byte line."""
    oh, ow = conv2d_output_hw(p)
    floats = p["out_channels"] // p["groups"] * oh * ow
    return _DW_TASK_GROUPS * (1 if floats % 4 == 0 else 2 if floats % 2 == 0 else 4)


def _pixel_major_pays(og: int, pixels: int, by_offsets: bool) -> bool:
    """ck_conv2d.c's choice of 7-pixel x 24-channel tiles for small output planes (by padded work, 10% in
    favour of the channel-major tiles); where the pixel-major ones read the bordered input in place, on planes
    up to PM_MAX_OFFSET_PIXELS unless they compute more channels (16 at a time at the end)."""
    tail = pixels % 32
    cm = pixels if tail == 0 else pixels - tail + (16 if tail <= 16 else 32)
    if by_offsets:
        return pixels <= PM_MAX_OFFSET_PIXELS and _round_up(pixels, PM_MR) * _round_up(og, 16) <= cm * _round_up(og, 8)
    return pixels <= PM_MAX_PIXELS and \
        100 * _round_up(pixels, PM_MR) * _round_up(og, M_QUANTUM) < 90 * cm * _round_up(og, 8)


def _pixel_major_reduces(p: dict[str, int], og: int, kdim: int, pixels: int) -> bool:
    """ck_pm_takes' other case: a 1x1 stride-1 unpadded convolution with K >= 2 x its output channels on a plane of
    whole 7-pixel slivers up to PM_REDUCE_PIXELS."""
    pointwise = (p["kernel_h"], p["kernel_w"], p["stride_h"], p["stride_w"]) == (1, 1, 1, 1) and \
        not any(p[side] for side in ("pad_top", "pad_left", "pad_bottom", "pad_right"))
    return pointwise and pixels % PM_MR == 0 and pixels <= PM_REDUCE_PIXELS and kdim >= 2 * og


def conv2d_packed_weight_bytes(p: dict[str, int]) -> int:
    """Bytes of ck_conv2d_pack_weight's layout; 0 when the geometry is not packed (depthwise)."""
    if p["channels"] == p["groups"]:
        return 0
    og, kdim = p["out_channels"] // p["groups"], p["channels"] // p["groups"] * p["kernel_h"] * p["kernel_w"]
    return 4 * p["groups"] * _round_up(og, M_QUANTUM) * kdim


def pack_conv2d_weight(p: dict[str, int], weight: np.ndarray) -> np.ndarray:
    """ck_conv2d_pack_weight in numpy, so the codegen packs constant weights once, at codegen time:
    per group and K block of KC, M_QUANTUM-row slivers stored k-major, zero rows past the end."""
    groups = p["groups"]
    og = p["out_channels"] // groups
    kdim = weight.size // p["out_channels"]
    m24 = _round_up(og, M_QUANTUM)
    out = []
    for g in range(groups):
        a = np.zeros((m24, kdim), weight.dtype)
        a[:og] = weight[g * og:(g + 1) * og].reshape(og, kdim)
        for pc in range(0, kdim, KC):
            block = a[:, pc:pc + KC]           # [m24, kc] -> slivers [m24 / 24, kc, 24]
            out.append(block.reshape(m24 // M_QUANTUM, M_QUANTUM, -1).transpose(0, 2, 1).reshape(-1))
    return np.concatenate(out) if out else np.zeros(0, weight.dtype)


def workspace_bytes(op: str, arg_shapes, attrs) -> int:
    """Scratch bytes one call of `op` needs (0 for ops that need none); `arg_shapes` are the
    call's input shapes, `attrs` its attribute mapping (Relay names, all filled in)."""
    if op == "nn.conv2d":
        return conv2d_workspace_bytes(conv2d_params(arg_shapes[0], arg_shapes[1], attrs["strides"], attrs["padding"],
                                                    attrs["dilation"], attrs["groups"]))
    if op == "nn.dense":
        data, weight = arg_shapes[0], arg_shapes[1]
        m = 1
        for dim in data[:-1]:
            m *= dim
        return gemm_workspace_bytes(m, weight[0], data[-1])
    if op == "nn.batch_matmul":
        _, m, k, n = matmul_dims(arg_shapes[0], arg_shapes[1], attrs["transpose_a"], attrs["transpose_b"])
        return gemm_workspace_bytes(m, n, k)
    if op == "nn.matmul":
        a, b = arg_shapes[0], arg_shapes[1]
        m, k = (a[1], a[0]) if attrs["transpose_a"] else (a[0], a[1])
        n = b[0] if attrs["transpose_b"] else b[1]
        return gemm_workspace_bytes(m, n, k)
    return 0


def c_declarations() -> str:
    """Every function's prototype, as in byoc_ck.h (for a readable listing / docs)."""
    return "\n".join(f.declaration() for f in FUNCTIONS.values())
