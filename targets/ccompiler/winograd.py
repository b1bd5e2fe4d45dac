"""Winograd F(m x m, 3 x 3) for ccompiler's stride-1 3x3 convolutions: which layers take it, and the numpy
mirrors of ck_winograd.c's sizes and of its weight layout (packed here, at codegen time).

The transform matrices are Lavin and Gray's (Fast Algorithms for Convolutional Neural Networks, 2016), points
0, 1, -1 (m = 2) and 0, 1, -1, 2, -2 and infinity (m = 4), written from the math: for each m x m output tile,
Y = A^T [(G g G^T) * (B^T d B)] A over the (m + 2) x (m + 2) input patch d; tests/test_ccompiler_kernels.py
checks them against an explicit correlation.
"""
from __future__ import annotations

import numpy as np

from byoc_compiler.vendor import build_max_threads

from .kernels import ALIGN, KC, M_QUANTUM, N_QUANTUM

G = {2: np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]]),
     4: np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6], [1 / 24, 1 / 12, 1 / 6],
                  [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]])}
BT = {2: np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], float),
      4: np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0],
                   [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], float)}
AT = {2: np.array([[1, 1, 1, 0], [0, 1, -1, -1]], float),
      4: np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]], float)}

BLOCK_TILES, SHARED_TILES = 32, 64                  # ck_winograd.c's CK_WG_BLOCK_TILES, CK_WG_SHARED_TILES
LANES, SLACK, POS_PAD = 16, 128, 32                 # CK_WG_LANES, CK_WG_SLACK, CK_WG_POS_PAD
PASS_ROWS = 72                                      # CK_WG_PASS_ROWS
MIN_PIXELS = 14 * 14                                # smaller output planes: the direct convolution (tile())


def _round_up(x: int, q: int) -> int:
    return (x + q - 1) // q * q


def takes(p: dict[str, int]) -> bool:
    """The geometry ck_conv2d_winograd computes: 3x3, stride 1, no dilation, one group."""
    return (p["kernel_h"], p["kernel_w"], p["stride_h"], p["stride_w"], p["dilation_h"], p["dilation_w"],
            p["groups"]) == (3, 3, 1, 1, 1, 1, 1)


def tile(p: dict[str, int]) -> int:
    """m of the F(m x m, 3 x 3) ccompiler computes this conv2d with, or 0 for the direct convolution.

    Measured per layer in the model (`python bench/ccompiler_layers.py --model resnet50`: every kernel call timed
    inside the runner, the weights coming from memory as in a real run; one thread, this Xeon, load 7-8), p10 of
    30 runs: F(2x2) 1.45-1.50 ms against the direct convolution's 1.6-1.7 on 64 channels at 56x56, 1.56-1.65
    against about 1.75 on 128 at 28x28. At 14x14 (256 channels, 49 tiles in 64 product columns, every tile at once,
    products by position) it lost in the tenth session (2.04-2.23 against 1.86-1.89); with the products on the
    tall tiles (session 11) it took 0.82-0.86 of the direct convolution's time there in the model (each run's 14x14
    layers against its Winograd layers at 28x28, two runs of each build, one thread, load 3), and alone, with the
    bordered copy made inside the transform's phase too, 0.81 at one thread and 0.89 at two (p10 of 60 and 200
    calls alternated in one process, weights cycled through 16 copies, load 2). 7x7 keeps the direct convolution:
    16 tiles read a 16 MB transformed weight (1.16x the direct convolution's time alone, the same way).

    F(4x4) was faster still at 56x56 (alone: 1.56x the direct convolution against F(2x2)'s 1.28x) but fails the
    check's error model on a layer alone: one conv + bias + relu against the float64 reference, margins (worst error
    / allowed, pass <= 1) 3.4-5.2 for F(4x4), 0.23-0.42 for F(2x2) and 0.38-0.73 for the direct convolution (64
    channels at 56x56 to 256 at 14x14, weights unit and 1/sqrt(fan-in)); whole ResNet-50 passes either way
    (0.056-0.066: the pooling averages errors out), a model ending in such a conv would not. So F(2x2) only; F(4x4)
    stays in the library for callers who accept it.

    Builds planned for one thread (the freestanding profile plans 1; a hosted build asking max_threads=1 too) keep
    the direct convolution: the transformed weight is 16/9 of the weight (constants in a board's flash), for a gain
    measured only on the hosted CPU's AVX-512 path. The scratch is no larger (planned for one thread: 1.2 MB
    against the direct convolution's 1.7 MB at 64 channels on 56x56, 1.1 against 4.1 MB at 128 on 28x28)."""
    if not takes(p) or build_max_threads() < 2:
        return 0
    oh = p["height"] + p["pad_top"] + p["pad_bottom"] - 2
    ow = p["width"] + p["pad_left"] + p["pad_right"] - 2
    return 2 if oh * ow >= MIN_PIXELS else 0


def _plan(p: dict[str, int], m: int) -> dict[str, int]:
    """ck_wg_plan_of's sizes."""
    oh = p["height"] + p["pad_top"] + p["pad_bottom"] - 2
    ow = p["width"] + p["pad_left"] + p["pad_right"] - 2
    ntx, nty = -(-ow // m), -(-oh // m)
    nt, a2, m24 = ntx * nty, (m + 2) ** 2, _round_up(p["out_channels"], M_QUANTUM)
    shared = nt <= SHARED_TILES
    cols = _round_up(nt if shared else BLOCK_TILES, N_QUANTUM)
    return dict(a2=a2, v_pos=cols // N_QUANTUM * p["channels"] * (N_QUANTUM + LANES) + POS_PAD,
                mm=a2 * (m24 if shared else min(m24, PASS_ROWS)) * cols + SLACK,
                bordered=p["channels"] * ((nty * m + 2) * (ntx * m + 2) + (SLACK if shared else 0)) + SLACK,
                shared=shared,
                slots=0 if shared else min(build_max_threads(), -(-nt // BLOCK_TILES)))


def workspace_bytes(p: dict[str, int], m: int) -> int:
    """ck_conv2d_winograd_workspace_bytes: the zero-bordered input, then with few tiles (shared) the transformed
    input and the products of every tile, else per slot a block's transformed input and products."""
    w = _plan(p, m)
    shared = 2 * ALIGN + 4 * (w["a2"] * w["v_pos"] + w["mm"]) if w["shared"] else 0
    return ALIGN + 4 * w["bordered"] + shared + w["slots"] * (ALIGN + 4 * (w["a2"] * w["v_pos"] + w["mm"]))


def weight_bytes(p: dict[str, int], m: int) -> int:
    return 4 * (m + 2) ** 2 * _round_up(p["out_channels"], M_QUANTUM) * p["channels"]


def pack_weight(p: dict[str, int], m: int, weight: np.ndarray) -> np.ndarray:
    """ck_conv2d_winograd's weight: U = G g G^T per output and input channel (in float64, rounded once to
    float32), then per position of the (m + 2)^2 the [out_channels, channels] matrix in 24-row slivers per K block
    of KC (ck_pack_a_ahead's layout, zero rows past out_channels)."""
    out_channels, channels = weight.shape[:2]
    g = G[m]
    u = np.einsum("ik,ockl,jl->ijoc", g, weight.astype(np.float64), g).astype(np.float32)
    alpha, m24 = m + 2, _round_up(out_channels, M_QUANTUM)
    parts = []
    for i in range(alpha):
        for j in range(alpha):
            a = np.zeros((m24, channels), np.float32)
            a[:out_channels] = u[i, j]
            for pc in range(0, channels, KC):
                block = a[:, pc:pc + KC]       # [m24, kc] -> slivers [m24 / 24, kc, 24]
                parts.append(block.reshape(m24 // M_QUANTUM, M_QUANTUM, -1).transpose(0, 2, 1).reshape(-1))
    return np.concatenate(parts)
