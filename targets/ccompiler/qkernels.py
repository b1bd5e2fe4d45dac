"""The kernel library's int8/uint8 functions (kernels/ck_qnn.h), described for the codegen.

Mirrors of the C's size formulas and weight layout (ck_qconv.c, ck_qgemm.c), so the codegen packs
constant weights once, at codegen time, and plans scratch in the region's static workspace; the
bias folding that lets the kernels sum raw uint8 activations (the zero point and the int8 -> uint8
offset are compensated through the weights' sums); the C struct initializers.
tests/test_ccompiler_qnn.py checks every mirror against the C.
"""
from __future__ import annotations

import numpy as np

from byoc_compiler.vendor import build_cpu_features, build_max_threads

from . import pair_order

QMR, QNR, QALIGN, QKB = 8, 32, 64, 64   # CK_QMR, CK_QNR, CK_QALIGN, CK_QKB
Q_DTYPES = ("int8", "uint8")
TYPE_RANGE = {"int8": (-128, 127), "uint8": (0, 255)}


def _round_up(x: int, q: int) -> int:
    return (x + q - 1) // q * q


# ck_qparams.rounding per qnn.requantize rounding the kernels take
ROUNDINGS = {"float32": 0, "tflite": 1}


def qparams(in_dtype: str, out_dtype: str, in_zp: int, out_zp: int, out_min: int | None = None,
            out_max: int | None = None, rounding: str = "float32") -> dict[str, int]:
    lo, hi = TYPE_RANGE[out_dtype]
    return dict(input_signed=int(in_dtype == "int8"), output_signed=int(out_dtype == "int8"),
                input_zero_point=int(in_zp), output_zero_point=int(out_zp),
                out_min=lo if out_min is None else max(lo, int(out_min)),
                out_max=hi if out_max is None else min(hi, int(out_max)), rounding=ROUNDINGS[rounding])


QPARAM_FIELDS = ("input_signed", "output_signed", "input_zero_point", "output_zero_point", "out_min", "out_max",
                 "rounding")


def requantize_constants(rq_attrs, units: int, ratios, tflite_multipliers) -> np.ndarray:
    """The kernels' `scale` argument: float32 ratios per output channel, or (rounding "tflite") TFLite's int32
    (multiplier, exponent) pairs, computed by the reference's own function (`tflite_multipliers`)."""
    if rq_attrs["rounding"] == "tflite":
        ms, es = tflite_multipliers(rq_attrs)
        pairs = np.stack([np.broadcast_to(np.asarray(ms, np.int64), (units,)),
                          np.broadcast_to(np.asarray(es, np.int64), (units,))], axis=1)
        return np.ascontiguousarray(pairs.astype(np.int32).reshape(-1))
    return np.ascontiguousarray(np.broadcast_to(np.asarray(ratios(rq_attrs), np.float32), (units,)))


def _init(fields, values) -> str:
    return "{" + ", ".join(f".{f} = {int(values[f])}" for f in fields) + "}"


def qconv2d_initializer(conv_fields, conv: dict[str, int], q: dict[str, int], im2col_columns: int = 0,
                        winograd: bool = False, pairs: bool = False, channel_order: str | None = None,
                        channels_last: int = 0) -> str:
    """`channel_order`: the C name of the input channels' order (a static const int32_t array), or None;
    `channels_last`: ck_qconv2d_params.channels_last (0, or 1 with its layout bits)."""
    return (f"{{.conv = {_init(conv_fields, conv)}, .q = {_init(QPARAM_FIELDS, q)}, "
            f".im2col_columns = {int(im2col_columns)}{', .winograd = 1' if winograd else ''}"
            f"{', .pairs = 1' if pairs else ''}"
            f"{f', .channel_order = {channel_order}' if channel_order else ''}"
            f"{f', .channels_last = {int(channels_last)}' if channels_last else ''}}}")


# ---- the channels-last direct convolution (ck_qdirect.c) --------------------------------------------------------

CL_OC, CL_PX, CL_BAND_MAX = 64, 6, 96   # CK_QDL_OC, CK_QDL_PX, CK_QDL_BAND_MAX
# Input channels from which the codegen asks for it: not a stem's 3 (padded to 4, each of 49 taps one k-step of 3
# real bytes; the GEMM core's stem runs at twice onnxruntime's speed). Measured per layer on ResNet-50 (one thread,
# the Xeon above, `python bench/ccompiler_layers.py --model int8:resnet50`) before the layout pass: with NCHW on both
# sides the 3x3 layers went from the GEMM core's 0.45-0.55 ms to 0.36-0.40, but 1x1 layers of 64-512 channels lost
# 5-35% (the transpositions into and out of channels-last order cost per output what a shallow sum does not pay
# back); kept channels-last between convolutions (channels_last_layout.py) those transpositions are gone.
CL_MIN_CHANNELS = 16
# A convolution this deep (input channels x taps) or more keeps the path even with NCHW on both sides (the 3x3 layers
# above); a shallower one whose output stays NCHW goes back to the GEMM core (channels_last_layout.py)
CL_MIN_DEPTH = 576
# The CPU flags it is asked for on: AVX512-VNNI (vpdpbusd on 64-byte vectors), not where AMX's tiles run the GEMM
CL_FLAGS, CL_NOT_FLAGS = frozenset(("avx512_vnni",)), frozenset(("amx_int8",))


def channels_last_takes(p: dict[str, int], rounding: int, im2col_columns: int, winograd: bool, pairs: bool) -> bool:
    """ck_qdirect_takes: one group (not a one-channel depthwise), byoc's float32 rounding, hosted, no other form."""
    return p["groups"] == 1 and not (p["channels"] == p["out_channels"] == 1) and rounding == 0 and \
        im2col_columns <= 0 and not winograd and not pairs


def channels_last(p: dict[str, int], rounding: int, im2col_columns: int, winograd: bool, pairs: bool) -> bool:
    """Whether the codegen asks ck_qconv2d for the channels-last direct convolution (ck_qconv2d_params.channels_last).

    Where the CPU the build is for (vendor.build_cpu_features) has AVX512-VNNI and no AMX: 6 output pixels x 64
    output channels a tile, read straight from a channels-last copy of the input, ran ResNet-50's layers at
    330-370 G multiply-adds/s of one thread against the GEMM core's 8 x 32 tile on packed panels at 200-260 (a Xeon,
    family 6 model 207; docs/quantization.md). Convolutions of at least CL_MIN_CHANNELS input channels; the layout pass
    then keeps their tensors channels-last between them. The bytes out are the same either way
    (tests/test_ccompiler_qnn.py)."""
    features = build_cpu_features()
    return channels_last_takes(p, rounding, im2col_columns, winograd, pairs) and p["channels"] >= CL_MIN_CHANNELS and \
        CL_FLAGS <= features and not CL_NOT_FLAGS & features


def whole_plane_depthwise(p: dict[str, int], rounding: int) -> bool:
    """ck_qdw_whole_plane on a depthwise convolution: one output per plane (a global average pool), which reads a
    channels-last input as well (ck_qconv2d_params.channels_last 2)."""
    return is_depthwise(p) and rounding == 0 and (p["kernel_h"], p["kernel_w"]) == (p["height"], p["width"]) and \
        not any(p[k] for k in ("pad_top", "pad_left", "pad_bottom", "pad_right")) and \
        (p["dilation_h"], p["dilation_w"]) == (1, 1)


def channels_last_pack_weight(weight: np.ndarray) -> np.ndarray:
    """ck_qconv2d_pack_weight with .channels_last = 1 in numpy: [out / 64][tap][in / 4][64][4] int8, zeros past
    the output and input channels."""
    o, c, kh, kw = weight.shape
    blocks, c4 = -(-o // CL_OC), _round_up(c, 4)
    w = np.zeros((blocks * CL_OC, c4, kh * kw), np.int8)
    w[:o, :c] = weight.reshape(o, c, kh * kw)
    w = w.reshape(blocks, CL_OC, c4 // 4, 4, kh * kw).transpose(0, 4, 2, 1, 3)
    return np.ascontiguousarray(w).reshape(-1)


def channels_last_unpack_weight(packed: np.ndarray, p: dict[str, int]) -> np.ndarray:
    """The OIHW int8 weight channels_last_pack_weight packed (for a step the codegen moves back to the GEMM core)."""
    o, c, kh, kw = p["out_channels"], p["channels"], p["kernel_h"], p["kernel_w"]
    blocks, c4 = -(-o // CL_OC), _round_up(c, 4)
    w = packed.reshape(blocks, kh * kw, c4 // 4, CL_OC, 4).transpose(0, 3, 2, 4, 1)
    w = w.reshape(blocks * CL_OC, c4, kh * kw)
    return np.ascontiguousarray(w[:o, :c].reshape(o, c, kh, kw))


def _cl_band(n: int) -> int:
    """ck_qdl_band: pixels per task, the image in as few bands of at most CL_BAND_MAX as can be, evened out."""
    bands = -(-n // CL_BAND_MAX)
    return _round_up(-(-n // bands), CL_PX)


def channels_last_workspace_bytes(p: dict[str, int]) -> int:
    """ck_qdirect_workspace_bytes: the bordered channels-last copy (+ 64 bytes) and per thread a band's int32 sums."""
    oh, ow = _output_hw(p)
    ph, pw = p["height"] + p["pad_top"] + p["pad_bottom"], p["width"] + p["pad_left"] + p["pad_right"]
    copy = _round_up(ph * pw * _round_up(p["channels"], 4) + 64, QALIGN)
    band = _cl_band(oh * ow)
    tasks = -(-oh * ow // band) * -(-p["out_channels"] // CL_OC)
    return QALIGN + copy + min(build_max_threads(), tasks) * _round_up(CL_BAND_MAX, CL_PX) * CL_OC * 4


# ---- Winograd F(2x2, 3x3) (ck_qwinograd.c) -------------------------------------------------------------------

WG_MAX_CHANNELS = 1024     # CK_QWG_MAX_CHANNELS: input channels whose 4x sums stay in int32
WG_POSITIONS, WG_TILES_QUANTUM, WG_ROWS, WG_SLACK = 16, 8, 4, 34   # CK_QWG_SLACK: 2 * 16 lanes + 2
WG_LANES = 16              # CK_QWG_LANES: the output transform reads a group of lanes past the products
# Smaller output planes keep the direct convolution (fewer than 16 tiles: the products' 16-tile groups mostly
# padding). At 7x7 Winograd still wins although each call reads an 8 MB transformed weight (the int8 one is 2.4 MB):
# ResNet-50's 512-channel 3x3 layers took 2.27-2.34 ms against the direct convolution's 2.69-2.91
# (`python bench/ccompiler_layers.py --model int8:resnet50`, one thread, Zen 3, p10 of 20 runs)
WG_MIN_PIXELS = 7 * 7
# Where the pair-safe direct convolution is there (AVX2 without an int8 dot product: `pairs`), 7x7 keeps it instead:
# ResNet-50's 512-channel 3x3 layers on real weights, three alternations, p10: one thread 1.74-1.83 ms against
# Winograd's 1.69-2.05, two threads 0.89-1.06 against 0.93-0.94; it reads the 2.4 MB int8 weight, not the 8 MB
# transformed one (a model's constants 17 MB smaller)
WG_MIN_PIXELS_BESIDE_PAIRS = 8 * 8
# G' = 2G of F(2x2, 3x3) (points 0, 1, -1): integer, so U = G' g G'^T = 4 G g G^T is exact in int16
WG_G2 = np.array([[2, 0, 0], [1, 1, 1], [1, -1, 1], [0, 0, 2]], np.int64)
# x86 flags of an int8 dot product (/proc/cpuinfo): the GEMM core's direct kernels run on them, faster than
# Winograd's int16 products (vpdpbusd takes 4 uint8 x int8 products a lane per instruction, vpmaddwd 2)
INT8_DOT_FLAGS = frozenset(("avx512_vnni", "avx_vnni", "amx_int8"))


def winograd_takes(p: dict[str, int]) -> bool:
    """ck_qwinograd_takes: stride-1 3x3, no dilation, one group, at most WG_MAX_CHANNELS input channels."""
    return (p["kernel_h"], p["kernel_w"], p["stride_h"], p["stride_w"], p["dilation_h"], p["dilation_w"],
            p["groups"]) == (3, 3, 1, 1, 1, 1, 1) and not (p["channels"] == p["out_channels"] == 1) and \
        p["channels"] <= WG_MAX_CHANNELS


def winograd(p: dict[str, int], im2col_columns: int, weight: np.ndarray) -> bool:
    """Whether the codegen asks ck_qconv2d for Winograd F(2x2, 3x3) (ck_qconv2d_params.winograd).

    Where the CPU lacks an int8 dot product it multiplies 2.25x less: 16 int16 products per 2x2 outputs and
    channel where the direct convolution takes 36 uint8 x int8 ones, each pair in one vpmaddwd either way. Only
    hosted builds planned for threads (the transformed weight is 3.6x the int8 one's bytes and the scratch holds
    the transformed input and products: not for a board's flash and RAM), output planes of at least
    WG_MIN_PIXELS (WG_MIN_PIXELS_BESIDE_PAIRS where the weight takes the pair-safe direct convolution), and only
    when the CPU the build is for has no int8 dot product (x86 AVX512-VNNI, AVX-VNNI,
    AMX; vendor.build_cpu_features: the toolchain's cpu_features, else the building machine's): where it has one,
    the runtime's direct kernels (vpdpbusd, AMX tiles) outrun int16 products. The bytes out are the same either
    way (tests/test_ccompiler_qnn.py)."""
    oh, ow = _output_hw(p)
    if not (im2col_columns <= 0 and build_max_threads() >= 2 and winograd_takes(p) and oh * ow >= WG_MIN_PIXELS and
            not INT8_DOT_FLAGS & build_cpu_features()):
        return False
    return oh * ow >= WG_MIN_PIXELS_BESIDE_PAIRS or not pairs(p, im2col_columns, False, weight)


def winograd_pack_weight(weight: np.ndarray) -> np.ndarray:
    """ck_qconv2d_pack_weight with .winograd = 1 in numpy: U = G' g G'^T per (out, in) as int16
    [position][out rounded up to 4][in rounded up to 2]: a channel pair is one 4-byte lane of vpmaddwd."""
    o, c = weight.shape[:2]
    u = np.einsum("ia,ocab,jb->ijoc", WG_G2, weight.astype(np.int64), WG_G2)     # [4][4][o][c]
    out = np.zeros((WG_POSITIONS, _round_up(o, WG_ROWS), _round_up(c, 2)), np.int16)
    out[:, :o, :c] = u.reshape(WG_POSITIONS, o, c)
    return out.reshape(-1)


def winograd_workspace_bytes(p: dict[str, int]) -> int:
    """ck_qwinograd_workspace_bytes: the bordered input (2 * tiles + 2 square), the transformed input
    [position][channel pair][tiles rounded up to 8] (int16 pairs) and the products [position][out rounded up
    to 4][tiles] (int32), and a group of lanes of slack after each of the first and the last."""
    oh, ow = _output_hw(p)
    th, tw = (oh + 1) // 2, (ow + 1) // 2
    tp = _round_up(th * tw, WG_TILES_QUANTUM)
    border = _round_up(p["channels"] * (2 * th + 2) * (2 * tw + 2) + WG_SLACK, QALIGN)
    words = WG_POSITIONS * ((p["channels"] + 1) // 2 + _round_up(p["out_channels"], WG_ROWS)) * tp + WG_LANES
    return QALIGN + border + 4 * words


# Output pixels per im2col chunk of ck_qconv2d (params.im2col_columns). Hosted toolchains ask 0 (no bound):
# windows wider than one pixel then pack the GEMM's panels straight from a zero-point-bordered copy of the
# input, no im2col rows (ResNet-8's 3x3 convs at 16-64 channels 1.2-2.3x faster than the 512-column im2col,
# `python bench/qconv_chunks.py`; the copy is smaller than the im2col for every window wider than its
# stride). A board with bounded workspace pools gets QNR, the least scratch, the im2col written straight
# into the GEMM's one B panel (ResNet-8's 3x3 16-channel conv at 32x32: 4.6 KB instead of 180 KB).
IM2COL_COLUMNS_HOSTED = 0


def im2col_columns(workspace_budget: int | None) -> int:
    """The chunk the codegen asks for, given the build's workspace budget (vendor.workspace_budget)."""
    return IM2COL_COLUMNS_HOSTED if workspace_budget is None else QNR


def qdense_initializer(batch: int, units: int, depth: int, q: dict[str, int], direct_rows: int = 0) -> str:
    return (f"{{.batch = {int(batch)}, .units = {int(units)}, .depth = {int(depth)}, .q = {_init(QPARAM_FIELDS, q)}, "
            f".direct_rows = {int(direct_rows)}}}")


def dense_direct_rows(workspace_budget: int | None) -> int:
    """ck_qdense_params.direct_rows the codegen asks: a batch of one on hosted toolchains (a classifier: the GEMM
    core would compute a panel's 8 columns for its one, as one task; larger batches take the GEMM core, VNNI where
    there is one), up to QMR rows when the board's pools are bounded (no 32-column panel of scratch)."""
    return 1 if workspace_budget is None else QMR


def is_depthwise(p: dict[str, int]) -> bool:
    return p["groups"] == p["channels"] == p["out_channels"]


def _is_pointwise(p: dict[str, int]) -> bool:
    return (p["kernel_h"], p["kernel_w"], p["stride_h"], p["stride_w"]) == (1, 1, 1, 1) and \
        not any(p[k] for k in ("pad_top", "pad_left", "pad_bottom", "pad_right"))


def _depth(p: dict[str, int]) -> int:
    return p["channels"] // p["groups"] * p["kernel_h"] * p["kernel_w"]


def _output_hw(p: dict[str, int]) -> tuple[int, int]:
    span_h = p["height"] + p["pad_top"] + p["pad_bottom"] - p["dilation_h"] * (p["kernel_h"] - 1) - 1
    span_w = p["width"] + p["pad_left"] + p["pad_right"] - p["dilation_w"] * (p["kernel_w"] - 1) - 1
    return span_h // p["stride_h"] + 1, span_w // p["stride_w"] + 1


def qconv2d_workspace_bytes(p: dict[str, int], im2col_columns: int = 0, winograd: bool = False,
                            channels_last: bool = False) -> int:
    """ck_qconv2d_workspace_bytes: depthwise, per thread a zero-point-bordered plane, one int32 output row and
    the flat pass's output;
    im2col_columns 0 and a window wider than one pixel, a packed B panel per thread and a zero-point-bordered
    copy of a group's input (the panels are packed from it); otherwise a packed B panel per thread and
    (unless 1x1 stride 1 unpadded) the im2col rows of a group, for the whole output image or
    (im2col_columns > 0) a chunk of that many pixels rounded up to QNR."""
    if winograd:
        return winograd_workspace_bytes(p)
    if channels_last and not is_depthwise(p):   # a depthwise one's channels_last (2) only says how it reads
        return channels_last_workspace_bytes(p)
    oh, ow = _output_hw(p)
    chunk = oh * ow if im2col_columns <= 0 else min(_round_up(im2col_columns, QNR), oh * ow)
    if is_depthwise(p):   # per thread: the bordered plane (+ 64 bytes of vector reads), an int32 row, the flat pass
        pw = p["width"] + p["pad_left"] + p["pad_right"]
        plane = (p["height"] + p["pad_top"] + p["pad_bottom"]) * pw
        slot = _round_up(plane + 64, QALIGN) + _round_up(4 * ow, QALIGN) + _round_up(oh * pw + 16, QALIGN)
        return QALIGN + min(p["batch"] * p["channels"], build_max_threads()) * slot
    k = _depth(p)
    if im2col_columns <= 0 and p["kernel_h"] * p["kernel_w"] > 1:   # panels packed from a bordered input copy
        plane = (p["height"] + p["pad_top"] + p["pad_bottom"]) * (p["width"] + p["pad_left"] + p["pad_right"])
        copy = _round_up(p["channels"] // p["groups"] * plane + 4 * QNR, QALIGN)
        return QALIGN + _qgemm_slots(oh * ow) * _panel_stride(k) + copy
    if chunk == QNR and not _is_pointwise(p):      # the im2col is written straight into the one B panel
        return QALIGN + _panel_bytes(k)
    slots = _qgemm_slots(oh * ow if _is_pointwise(p) else chunk)
    return QALIGN + slots * _panel_stride(k) + (0 if _is_pointwise(p) else k * chunk)


QN_WIDE = 2048   # CK_QN_WIDE: column chunks of 4 panels from this many columns on
QN_HALF = 512    # CK_QN_HALF: of 2 panels from this many, of one panel below


def _qgemm_slots(n: int) -> int:
    """ck_qgemm_slots: one packed panel per thread, at most one per column chunk."""
    panels = 4 if n >= QN_WIDE else 2 if n >= QN_HALF else 1
    return max(1, min(build_max_threads(), -(-n // (panels * QNR))))


def _panel_stride(k: int) -> int:
    """ck_qgemm_panel_stride: the GEMM core's panels hold k rounded up to the AMX kernel's k-block."""
    return _round_up(k, QKB) * QNR


def _panel_bytes(k: int) -> int:
    """ck_qgemm_panel_bytes: the bounded-scratch conv's one panel (no AMX there), k rounded up to 4."""
    return _round_up(_round_up(k, 4) * QNR, QALIGN)


def qdense_workspace_bytes(depth: int, batch: int, direct_rows: int = 0) -> int:
    if batch <= direct_rows:
        return 0
    return QALIGN + _qgemm_slots(batch) * _panel_stride(depth)


def pack_weight(groups: int, weight: np.ndarray) -> np.ndarray:
    """ck_qconv2d_pack_weight / ck_qdense_pack_weight in numpy: per group, the [og, K] int8 matrix
    row-major, rows padded to a multiple of 4 and to QMR rows with zeros; then QKB bytes of zeros (the AMX
    kernel's last k-block reads up to that far past a row)."""
    o = weight.shape[0]
    og, k = o // groups, weight.size // o
    m8, k4 = _round_up(og, QMR), _round_up(k, 4)
    w = np.zeros((groups, m8, k4), np.int8)
    w[:, :og, :k] = weight.reshape(groups, og, k)
    return np.concatenate([w.reshape(-1), np.zeros(QKB, np.int8)])


# Most correction entries a pair-safe weight may have, per row and k-step, for the codegen to ask for one: the
# vpmaddubsw tile runs about 30% faster than the widening one, and each entry costs its row about a k-step of the
# tile's work. Pair-safe time / plain time, one thread, Zen 3 (`python bench/int8_pairs.py --model resnet50` and
# `--model mobilenetv2`, the corrections summed in registers row by row): 1.4-4.7% of entries 0.74-0.90, 5.3-9.9%
# 0.80-0.97, 10.5-13.1% 0.82-0.97, 13.4% 1.00, 20.1-24.1% 1.01-1.11 (a 16-deep 1x1 at 29.9%: 0.85, the widening
# kernel's per-tile cost).
PAIRS_MAX_ENTRIES = 0.135


def pairs_plan(p: dict[str, int], im2col_columns: int, winograd_asked: bool,
               weight: np.ndarray) -> tuple[bool, np.ndarray | None]:
    """(whether the codegen asks ck_qconv2d for a pair-safe weight (ck_qconv2d_params.pairs), the input channels'
    order it asks for with it (ck_qconv2d_params.channel_order), or None).

    Pair-safe where the CPU the build is for (vendor.build_cpu_features) has AVX2 and no int8 dot product: the GEMM
    then sums two uint8 x int8 products in int16 with vpmaddubsw (three instructions per 32 products against the
    exact widening kernel's four and its panel split), the products a pair-safe weight leaves out added back from its
    correction table. Not where the CPU has an int8 dot product (vpdpbusd, AMX: the table would only cost), not with
    Winograd, not for depthwise convolutions, hosted builds (im2col_columns <= 0) only, and only for a weight whose
    table has at most PAIRS_MAX_ENTRIES entries per row and k-step. A 1x1 convolution of one group reads its input
    channels in the order of pair_order.channel_order where that leaves fewer entries."""
    features = build_cpu_features()
    if im2col_columns > 0 or winograd_asked or is_depthwise(p) or "avx2" not in features or \
            INT8_DOT_FLAGS & features:
        return False, None
    share, order = pair_entry_share(p["groups"], weight), None
    if p["kernel_h"] == p["kernel_w"] == 1 and p["groups"] == 1 and weight.shape[1] > 2:
        ordered = pair_order.channel_order(weight)
        ordered_share = pair_entry_share(1, weight[:, ordered])
        if ordered_share < share:
            share, order = ordered_share, ordered
    if share > PAIRS_MAX_ENTRIES:
        return False, None
    return True, order


def pairs(p: dict[str, int], im2col_columns: int, winograd_asked: bool, weight: np.ndarray) -> bool:
    """Whether the codegen asks ck_qconv2d for a pair-safe weight (pairs_plan)."""
    return pairs_plan(p, im2col_columns, winograd_asked, weight)[0]


def _excess(w0: np.ndarray, w1: np.ndarray) -> np.ndarray:
    """What pairs (w0, w1) must give up to be safe (ck_qsafe_pair): same-sign pairs' sum past +-128, else 0 (int16)."""
    w0, w1 = w0.astype(np.int16), w1.astype(np.int16)
    total = w0 + w1
    return np.where((w0 > 0) & (w1 > 0) & (total > 128), total - 128,
                    np.where((w0 < 0) & (w1 < 0) & (total < -128), total + 128, 0)).astype(np.int16)


def pair_entry_share(groups: int, weight: np.ndarray) -> float:
    """The share of pack_weight_pairs's row k-steps (padded rows and k included) that carry a correction entry,
    without packing: what `pairs` decides on."""
    o = weight.shape[0]
    k = weight.size // o
    k4, rows = _round_up(k, 4), groups * _round_up(o // groups, QMR)
    w = np.zeros((o, k4), np.int8)
    w[:, :k] = weight.reshape(o, k)
    steps = _excess(w[:, 0::2], w[:, 1::2]).reshape(o, k4 // 4, 2).any(axis=-1)
    return float(steps.sum()) / (rows * (k4 // 4))


def _safe_pairs(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(pair-safe weight, what it took out) of an int8 [..., 2] array of pairs (ck_qsafe_pair): a same-sign pair
    summing past +-128 loses the excess from its larger magnitude, the first on a tie."""
    w0, w1 = w[..., 0], w[..., 1]
    excess = _excess(w0, w1)
    second = np.where(excess > 0, w1 > w0, w1 < w0)
    taken = np.stack([np.where(second, 0, excess), np.where(second, excess, 0)], axis=-1).astype(np.int16)
    return (w.astype(np.int16) - taken).astype(np.int8), taken.astype(np.int8)


def pack_weight_pairs(groups: int, weight: np.ndarray, channel_order: np.ndarray | None = None) -> np.ndarray:
    """ck_qconv2d_pack_weight with .pairs = 1 (and .channel_order) in numpy: pack_weight's rows (their input
    channels in channel_order) made pair-safe, then the correction table (ck_qnn.h): little-endian int32
    row_start[rows + 1], then per entry k-step << 3 | row % 8 and the 4 bytes taken."""
    if channel_order is not None:
        weight = weight[:, channel_order]
    plain = pack_weight(groups, weight)
    body = plain[:-QKB].reshape(-1, 2)
    safe, taken = _safe_pairs(body)
    rows = groups * _round_up(weight.shape[0] // groups, QMR)
    taken = taken.reshape(rows, -1, 4)
    row, step = np.nonzero(taken.any(axis=-1))           # row-major: by row, then k-step
    row_start = np.searchsorted(row, np.arange(rows + 1)).astype("<i4")
    entries = np.zeros(len(row), np.dtype([("where", "<i4"), ("taken", "i1", 4)]))
    entries["where"], entries["taken"] = step << 3 | row % QMR, taken[row, step]
    return np.concatenate([safe.reshape(-1), plain[-QKB:], row_start.view(np.int8), entries.view(np.int8)])


def pairs_packed_weight_bytes(p: dict[str, int]) -> int:
    """ck_qconv2d_packed_weight_bytes with .pairs = 1: the most pack_weight_pairs can take (an entry per row and
    k-step)."""
    rows = p["groups"] * _round_up(p["out_channels"] // p["groups"], QMR)
    k4 = _round_up(_depth(p), 4)
    return rows * k4 + QKB + 4 * (rows + 1) + 8 * rows * (k4 // 4)


def fold_bias(weight: np.ndarray, bias: np.ndarray | None, input_zero_point: int, requant_zero_points) -> np.ndarray:
    """bias[o] - x_zp * sum_k w[o, k] - requantize input zero point[o], wrapped to int32 as the
    reference's int32 sums wrap: the kernels then add it to sums over raw (uint8-offset) inputs."""
    o = weight.shape[0]
    sums = weight.reshape(o, -1).astype(np.int64).sum(axis=1)
    total = -int(input_zero_point) * sums - np.broadcast_to(np.asarray(requant_zero_points, np.int64), (o,))
    if bias is not None:
        total = total + np.broadcast_to(bias.reshape(-1).astype(np.int64), (o,))
    return total.astype(np.int64).astype(np.int32)


def qfunctions(fn) -> dict:
    """The int8 functions' descriptions, made with kernels._fn (kernels.FUNCTIONS includes them)."""
    return {f.name: f for f in (
        fn("ck_qconv2d_packed_weight_bytes", "const ck_qconv2d_params *p", "size of a packed int8 conv weight",
           "size_t"),
        fn("ck_qconv2d_pack_weight", "const ck_qconv2d_params *p, const int8_t *weight, int8_t *packed",
           "int8 conv weight -> rows padded to 4 k and 8 rows (pack_weight mirrors it)"),
        fn("ck_qconv2d_workspace_bytes", "const ck_qconv2d_params *p", "scratch of ck_qconv2d", "size_t"),
        fn("ck_qconv2d", "const ck_qconv2d_params *p, const void *data, const int8_t *weight, const int32_t *bias, "
           "const float *scale, void *out, void *workspace", "qnn.conv2d + bias + qnn.requantize"),
        fn("ck_qdense_packed_weight_bytes", "const ck_qdense_params *p", "size of a packed int8 dense weight",
           "size_t"),
        fn("ck_qdense_pack_weight", "const ck_qdense_params *p, const int8_t *weight, int8_t *packed",
           "int8 dense weight -> rows padded to 4 k and 8 rows"),
        fn("ck_qdense_workspace_bytes", "const ck_qdense_params *p", "scratch of ck_qdense", "size_t"),
        fn("ck_qdense", "const ck_qdense_params *p, const void *data, const int8_t *packed_weight, "
           "const int32_t *bias, const float *scale, void *out, void *workspace", "qnn.dense + bias + qnn.requantize"),
        fn("ck_qadd", "const ck_qadd_params *p, int64_t n, const void *lhs, const void *rhs, void *out",
           "qnn.add of same-shape tensors"),
        fn("ck_qconv2d_add", "const ck_qconv2d_params *p, const ck_qadd_params *add, int32_t conv_is_rhs, "
           "const void *data, const int8_t *weight, const int32_t *bias, const float *scale, const void *residual, "
           "void *out, void *workspace", "ck_qconv2d + a residual qnn.add, added by each GEMM task"),
        fn("ck_qdq_add", "const ck_qdq_add_params *p, int64_t n, const void *lhs, const void *rhs, void *out",
           "qnn.dequantize x2 + add (+ relu) + qnn.quantize in one int8 pass"),
        fn("ck_quantize", "int64_t outer, int64_t channels, int64_t inner, const float *in, const float *scale, "
           "const int32_t *zero_point, int32_t out_signed, void *out", "qnn.quantize"),
        fn("ck_dequantize", "int64_t outer, int64_t channels, int64_t inner, const void *in, int32_t in_signed, "
           "const float *scale, const int32_t *zero_point, float *out", "qnn.dequantize"),
        fn("ck_qclamp", "int64_t n, int32_t is_signed, const void *in, void *out, int32_t lo, int32_t hi",
           "relu / clip on int8 or uint8 (and byte copies)"),
        fn("ck_qmax_pool2d", "const ck_pool2d_params *p, int32_t is_signed, const void *data, void *out",
           "nn.max_pool2d on int8 or uint8"),
        fn("ck_qgemm_kernel_name", "void", "name of the int8 GEMM kernel in use", "const char *"),
        fn("ck_qgemm_use_kernel", "const char *name", "force an int8 GEMM kernel (tests, benchmarks)"),
    )}
