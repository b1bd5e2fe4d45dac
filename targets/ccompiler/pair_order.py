"""An order of a 1x1 convolution's input channels in which fewer weight pairs need a correction.

vpmaddubsw sums the products of k and k + 1 (k even) in int16; a pair-safe weight (qkernels.pack_weight_pairs)
gives up what a same-sign pair has past +-128 in magnitude and keeps it in a correction table, whose entries cost
time. Which channels share a pair is free to choose where the kernel reads the input channels in any order
(ck_qconv2d_params.channel_order): this pairs channel i with a j such that few rows have both weights of one sign
summing past 128. Greedy: the channel with the most such conflicts first, with its cheapest free partner. On int8
ResNet-50's 1x1 weights the share of row k-steps with an entry falls from 2.1-6.6% to 0.0-1.2% where the layer
narrows (more input channels than rows: partners to spare) and from 3.2-13.1% to 2.0-9.2% where it widens
(`python bench/int8_pairs.py`).
"""
from __future__ import annotations

import numpy as np

# a weight of at least this magnitude can pass 128 with a partner of the same sign (at most 127 each)
_CAN_PASS = 65


def _conflicts(weight: np.ndarray) -> np.ndarray:
    """[K][K] int32: for channels i, j, the rows where (w[r, i], w[r, j]) are of one sign and sum past 128 in
    magnitude, a row counted once more where both pass _CAN_PASS (a ranking for the greedy, not a count)."""
    w = weight.astype(np.int16)
    k = w.shape[1]
    counts = np.zeros((k, k), np.int32)
    for magnitude in (np.where(w > 0, w, 0).astype(np.uint8), np.where(w < 0, -w, 0).astype(np.uint8)):
        by_channel = np.ascontiguousarray(magnitude.T)
        for i in range(k):
            rows = np.nonzero(by_channel[i] >= _CAN_PASS)[0]
            if len(rows):   # partners j with magnitude >= 129 - w[r, i] on those rows
                least = (129 - by_channel[i, rows].astype(np.int16)).astype(np.uint8)
                counts[i] += (magnitude[rows] >= least[:, None]).sum(axis=0, dtype=np.int32)
    return counts + counts.T


def _greedy_pairs(conflicts: np.ndarray) -> list[int]:
    """Channels in pair order: the most conflicted free channel, then its least conflicted free partner (the
    lowest index on a tie); an odd count leaves the most conflicted channel alone, last (paired with padding)."""
    k = conflicts.shape[0]
    by_conflicts = np.argsort(-conflicts.sum(axis=1, dtype=np.int64), kind="stable")
    free = np.ones(k, bool)
    alone = []
    if k % 2:
        alone = [int(by_conflicts[0])]
        free[alone[0]] = False
    never = np.iinfo(np.int64).max
    order: list[int] = []
    for i in by_conflicts:
        if not free[i]:
            continue
        free[i] = False
        j = int(np.argmin(np.where(free, conflicts[i].astype(np.int64), never)))
        free[j] = False
        order += [int(i), j]
    return order + alone


def channel_order(weight: np.ndarray) -> np.ndarray:
    """A permutation of the input channels of a [out][in] int8 weight (int32), pairs of channels adjacent."""
    w = np.asarray(weight).reshape(weight.shape[0], -1)
    return np.asarray(_greedy_pairs(_conflicts(w)), np.int32)
