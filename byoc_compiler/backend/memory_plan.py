"""Static memory planning from lifetimes: the one planner of every executor and of targets' workspaces.

A lifetime is an inclusive interval of step indices [first, last]: the step that writes the tensor up
to the last step that reads it (model outputs: to the end). Two tensors may share bytes only when their
intervals are disjoint; at a step that reads A and writes B both are live (kernels are not in-place).

ALIGNMENT is stated here once: every planned buffer starts on a multiple of it and is charged
`align_up(size, ALIGNMENT)` bytes. The C side uses the same number: the graph executor lays storage ids
out in 64-byte blocks (runtime/src/graph_executor.c, STORAGE_ALIGN), generated code allocates arenas and
workspaces 64-byte aligned (model_c.ALIGNED_ALLOC). So the workspace a build reports is what an
instance allocates (tests/test_memory_plan.py asks the C side).

One greedy core, `_place`: tensors in one fixed order (largest first, then by lifetime), each put where
it fits best among what the already placed tensors whose lifetimes overlap it leave free. Two views of
"where":
- `plan_offsets`: a byte offset in one arena (AOT's arena, a C-source region's workspace); the
  best-fitting gap between busy byte ranges, else the end;
- `plan_storage_ids`: a storage slot (graph.json's storage_id, TVM's graph executor layout: each slot is
  as large as its largest tensor, slots are laid out one after another); the smallest free slot that
  fits, else a new one. `storage_bytes` is what the graph executor allocates for those slots.
It is a heuristic; `peak_live_bytes` is the lower bound it is judged against (bench/memory_plan.py).
`aot_arena` and `graph_storage` apply it to a lowered Program; `instance_bytes` is the workspace one
instance allocates (intermediates, then the C regions' shared workspace).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Hashable, Mapping

ALIGNMENT = 64   # bytes, a cache line; what the C runtime aligns every block to


def align_up(n: int, alignment: int = ALIGNMENT) -> int:
    return (n + alignment - 1) // alignment * alignment


@dataclass(frozen=True)
class ArenaPlan:
    offsets: dict            # key -> byte offset in the arena
    total_bytes: int         # arena size (a multiple of the alignment)
    alignment: int


class _Overlaps:
    """Which placed tensors a lifetime overlaps: placed tensors listed per step (bounded by what is live)."""

    def __init__(self):
        self.at_step: dict[int, list] = {}

    def of(self, first: int, last: int) -> list:
        found: dict = {}
        for step in range(first, last + 1):
            found.update(dict.fromkeys(self.at_step.get(step, ())))
        return list(found)

    def add(self, key, first: int, last: int) -> None:
        for step in range(first, last + 1):
            self.at_step.setdefault(step, []).append(key)


def _place(sizes: Mapping[Hashable, int], lifetimes: Mapping[Hashable, tuple[int, int]], alignment: int,
           choose: Callable[[int, list], object]) -> dict:
    """The core: key -> position, where `choose(charged bytes, positions of overlapping placed keys)`
    picks a position. Deterministic for equal inputs (a stable sort of the keys as given)."""
    def charged(k) -> int:
        return align_up(max(sizes[k], 1), alignment)

    order = sorted(sizes, key=lambda k: (-charged(k), lifetimes[k][0], lifetimes[k][1]))
    placed: dict = {}
    overlaps = _Overlaps()
    for key in order:
        first, last = lifetimes[key]
        placed[key] = choose(charged(key), [placed[k] for k in overlaps.of(first, last)])
        overlaps.add(key, first, last)
    return placed


def plan_offsets(sizes: Mapping[Hashable, int], lifetimes: Mapping[Hashable, tuple[int, int]],
                 alignment: int = ALIGNMENT) -> ArenaPlan:
    """Arena offsets for every key of `sizes` (bytes) given its lifetime."""
    def best_gap(size: int, busy: list) -> tuple[int, int]:
        best = None            # (gap size, offset)
        cursor = 0
        for start, end in sorted(busy):
            if start - cursor >= size and (best is None or start - cursor < best[0]):
                best = (start - cursor, cursor)
            cursor = max(cursor, end)
        offset = best[1] if best is not None else cursor
        return offset, offset + size

    ranges = _place(sizes, lifetimes, alignment, best_gap)
    total = max((end for _, end in ranges.values()), default=0)
    return ArenaPlan({k: start for k, (start, _) in ranges.items()}, total, alignment)


def plan_storage_ids(order: list, sizes: Mapping[Hashable, int],
                     lifetimes: Mapping[Hashable, tuple[int, int]],
                     alignment: int = ALIGNMENT) -> tuple[dict, list[int]]:
    """Slot per key of `order`; returns key -> slot and every slot's bytes (its largest tensor's).

    Slots are numbered by their first tensor in `order`, so the ids read in step order."""
    charged: list[int] = []          # per slot, the bytes placement compares (aligned)

    def best_slot(size: int, busy: list) -> int:
        taken = set(busy)
        free = [s for s in range(len(charged)) if s not in taken]
        fits = [s for s in free if charged[s] >= size]
        if fits:
            return min(fits, key=lambda s: (charged[s], s))
        if free:                     # none fits (only with unaligned ties): grow the largest free slot
            slot = max(free, key=lambda s: (charged[s], -s))
            charged[slot] = size
            return slot
        charged.append(size)
        return len(charged) - 1

    raw = _place({k: sizes[k] for k in order}, lifetimes, alignment, best_slot)
    renumber: dict[int, int] = {}
    for key in order:
        renumber.setdefault(raw[key], len(renumber))
    slot_of = {key: renumber[raw[key]] for key in order}
    slot_bytes = [0] * len(renumber)
    for key in order:
        slot_bytes[slot_of[key]] = max(slot_bytes[slot_of[key]], sizes[key])
    return slot_of, slot_bytes


def storage_bytes(slot_bytes: list[int], alignment: int = ALIGNMENT) -> int:
    """What the graph executor allocates for these slots: each one in its own aligned block."""
    return sum(align_up(b, alignment) for b in slot_bytes)


def peak_live_bytes(sizes: Mapping[Hashable, int], lifetimes: Mapping[Hashable, tuple[int, int]],
                    alignment: int = 1) -> int:
    """Max over steps of the bytes of tensors live at that step: no arena can be smaller."""
    if not sizes:
        return 0
    last = max(end for _, end in lifetimes.values())
    return max(sum(align_up(sizes[k], alignment) for k in sizes if lifetimes[k][0] <= t <= lifetimes[k][1])
               for t in range(last + 1))


# ---- a lowered Program (backend/program.py) ---------------------------------------------------------
@dataclass
class AotPlan:
    arena: ArenaPlan
    direct_output: dict          # temp tensor id -> output index it is written to


@dataclass(frozen=True)
class StoragePlan:
    storage_id: dict             # tensor id -> storage id (inputs and constants own one each, first)
    slot_bytes: list             # bytes of every storage id
    first_temp: int              # storage ids from here on hold intermediates (what the executor allocates)

    @property
    def temp_bytes(self) -> int:
        return storage_bytes(self.slot_bytes[self.first_temp:])


def aot_arena(prog) -> AotPlan:
    """AOT: intermediates in one arena; a temp that is a model output is written to the caller's buffer."""
    direct: dict[int, int] = {}
    for k, t in enumerate(prog.outputs):
        if prog.tensors[t].kind == "temp" and t not in direct:
            direct[t] = k
    life = prog.lifetimes()
    temps = [t for step in prog.steps for t in step.outputs if t not in direct]
    arena = plan_offsets({t: prog.tensors[t].nbytes for t in temps}, {t: life[t] for t in temps})
    return AotPlan(arena, direct)


def graph_storage(prog) -> StoragePlan:
    """graph.json's storage ids: inputs and constants one each, intermediates share by lifetime."""
    sid: dict[int, int] = {}
    sizes: list[int] = []
    for t in prog.inputs + prog.consts:
        sid[t] = len(sizes)
        sizes.append(prog.tensors[t].nbytes)
    life = prog.lifetimes()
    temps = [t for step in prog.steps for t in step.outputs]
    slot_of, slot_bytes = plan_storage_ids(temps, {t: prog.tensors[t].nbytes for t in temps}, life)
    first_temp = len(sizes)
    for t, slot in slot_of.items():
        sid[t] = first_temp + slot
    return StoragePlan(sid, sizes + slot_bytes, first_temp)


def instance_bytes(intermediate_bytes: int, region_scratch: int) -> int:
    """Workspace of one instance: the intermediates, then (aligned) the largest C region's workspace."""
    return align_up(intermediate_bytes) + region_scratch if region_scratch else intermediate_bytes
