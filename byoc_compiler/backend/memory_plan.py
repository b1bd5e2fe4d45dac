"""Static memory planning for intermediates, from their lifetimes.

A lifetime is an inclusive interval of step indices [first, last]: the step that
writes the tensor up to the last step that reads it. Two tensors may share bytes
only when their intervals are disjoint; at a step that reads A and writes B both
are live (kernels are not in-place).

`plan_offsets` packs tensors into one arena (AOT): greedy by size, largest first,
each placed in the best-fitting gap left by already placed tensors whose lifetimes
overlap it. It is a heuristic; `peak_live_bytes` is the lower bound it is judged against.

`plan_storage_ids` groups tensors into reusable storage slots (graph.json's storage_id).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Mapping


def align_up(n: int, alignment: int) -> int:
    return (n + alignment - 1) // alignment * alignment


@dataclass(frozen=True)
class ArenaPlan:
    offsets: dict            # key -> byte offset in the arena
    total_bytes: int         # arena size (a multiple of the alignment)
    alignment: int


def plan_offsets(sizes: Mapping[Hashable, int], lifetimes: Mapping[Hashable, tuple[int, int]],
                 alignment: int = 16) -> ArenaPlan:
    """Arena offsets for every key of `sizes` (bytes) given its lifetime; deterministic for equal inputs."""
    order = sorted(sizes, key=lambda k: (-align_up(sizes[k], alignment), lifetimes[k][0], lifetimes[k][1]))
    placed: list[tuple[int, int]] = []          # (offset, end) per placed tensor
    at_step: dict[int, list[int]] = {}          # step -> placed tensors alive then (bounded by what is live)
    offsets: dict = {}
    total = 0
    for key in order:
        size = align_up(max(sizes[key], 1), alignment)
        first, last = lifetimes[key]
        overlapping: set[int] = set()
        for step in range(first, last + 1):
            overlapping.update(at_step.get(step, ()))
        busy = sorted(placed[i] for i in overlapping)
        best = None            # (gap size, offset)
        cursor = 0
        for start, end in busy:
            if start - cursor >= size and (best is None or start - cursor < best[0]):
                best = (start - cursor, cursor)
            cursor = max(cursor, end)
        offset = best[1] if best is not None else cursor
        offsets[key] = offset
        for step in range(first, last + 1):
            at_step.setdefault(step, []).append(len(placed))
        placed.append((offset, offset + size))
        total = max(total, offset + size)
    return ArenaPlan(offsets, total, alignment)


def peak_live_bytes(sizes: Mapping[Hashable, int], lifetimes: Mapping[Hashable, tuple[int, int]],
                    alignment: int = 1) -> int:
    """Max over steps of the bytes of tensors live at that step: no arena can be smaller."""
    if not sizes:
        return 0
    last = max(end for _, end in lifetimes.values())
    return max(sum(align_up(sizes[k], alignment) for k in sizes if lifetimes[k][0] <= t <= lifetimes[k][1])
               for t in range(last + 1))


def plan_storage_ids(order: list, sizes: Mapping[Hashable, int],
                     lifetimes: Mapping[Hashable, tuple[int, int]]) -> tuple[dict, list[int]]:
    """Slot per key (keys in `order`, sorted by lifetime start): a slot is reused once its tensor died.

    Picks the free slot whose size is closest to the request (growing the largest one if none is
    big enough). Returns key -> slot and the byte size of every slot.
    """
    slot_of: dict = {}
    slot_bytes: list[int] = []
    slot_free_after: list[int] = []      # last step that still reads the slot
    for key in sorted(order, key=lambda k: lifetimes[k][0]):
        start, end = lifetimes[key]
        size = sizes[key]
        free = [s for s in range(len(slot_bytes)) if slot_free_after[s] < start]
        fits = [s for s in free if slot_bytes[s] >= size]
        if fits:
            slot = min(fits, key=lambda s: (slot_bytes[s], s))
        elif free:
            slot = max(free, key=lambda s: (slot_bytes[s], -s))
            slot_bytes[slot] = size
        else:
            slot = len(slot_bytes)
            slot_bytes.append(size)
            slot_free_after.append(end)
        slot_free_after[slot] = end
        slot_of[key] = slot
    return slot_of, slot_bytes
