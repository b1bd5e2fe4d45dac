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

import contextlib
import contextvars
from dataclasses import dataclass, field
from typing import Callable, Hashable, Mapping

ALIGNMENT = 64   # bytes, a cache line; what the hosted C runtime aligns every block to (a board sets its own)


_BUDGET: contextvars.ContextVar[int | None] = contextvars.ContextVar("byoc_workspace_budget", default=None)


def workspace_budget() -> int | None:
    """Bytes of the largest workspace pool of the build under way, or None when its pools are unbounded
    (hosted toolchains): what a target's codegen may size kernel scratch by (a kernel that trades some
    speed for less scratch, as ccompiler's int8 conv does)."""
    return _BUDGET.get()


@contextlib.contextmanager
def budget(nbytes: int | None):
    """workspace_budget() is `nbytes` inside the block (build() sets it from the toolchain's board)."""
    token = _BUDGET.set(nbytes)
    try:
        yield
    finally:
        _BUDGET.reset(token)


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


class PoolFull(Exception):
    """A buffer fits in no workspace pool: `key` and its charged `nbytes`."""

    def __init__(self, key, nbytes: int):
        super().__init__(key, nbytes)
        self.key, self.nbytes = key, nbytes


# The orders the greedy core tries (each placement is kept only if it is the smallest): largest first
# (the classic), then by first step, then longest-lived first, then by bytes x steps. One order is rarely best
# for every graph: MobileNet v1 0.25 int8's ccompiler workspace is 1.12x its lower bound largest-first.
ORDERS = (
    lambda size, life: (-size, life[0], life[1]),
    lambda size, life: (life[0], -size, life[1]),
    lambda size, life: (life[0] - life[1], -size, life[0]),
    lambda size, life: (-size * (life[1] - life[0] + 1), life[0], -size),
)


def _place(sizes: Mapping[Hashable, int], lifetimes: Mapping[Hashable, tuple[int, int]], alignment: int,
           choose: Callable[[int, list], object], order_key=ORDERS[0]) -> dict:
    """The core: key -> position, where `choose(charged bytes, positions of overlapping placed keys)`
    picks a position, keys taken in `order_key(charged bytes, lifetime)` order. Deterministic for equal
    inputs (a stable sort of the keys as given)."""
    def charged(k) -> int:
        return align_up(max(sizes[k], 1), alignment)

    order = sorted(sizes, key=lambda k: order_key(charged(k), lifetimes[k]))
    placed: dict = {}
    overlaps = _Overlaps()
    for key in order:
        first, last = lifetimes[key]
        try:
            placed[key] = choose(charged(key), [placed[k] for k in overlaps.of(first, last)])
        except PoolFull as full:      # `choose` does not know the key: name it here
            raise PoolFull(key, full.nbytes) from None
        overlaps.add(key, first, last)
    return placed


def _best_gap(size: int, busy: list, start: int = 0) -> tuple[int, int]:
    """(start, end) of the smallest gap of at least `size` bytes between busy byte ranges, else the end."""
    best = None            # (gap size, offset)
    cursor = start
    for lo, hi in sorted(busy):
        if lo - cursor >= size and (best is None or lo - cursor < best[0]):
            best = (lo - cursor, cursor)
        cursor = max(cursor, hi)
    offset = best[1] if best is not None else cursor
    return offset, offset + size


def plan_offsets(sizes: Mapping[Hashable, int], lifetimes: Mapping[Hashable, tuple[int, int]],
                 alignment: int = ALIGNMENT) -> ArenaPlan:
    """Arena offsets for every key of `sizes` (bytes) given its lifetime."""
    best = None
    for order_key in ORDERS:
        ranges = _place(sizes, lifetimes, alignment, _best_gap, order_key)
        total = max((end for _, end in ranges.values()), default=0)
        if best is None or total < best.total_bytes:
            best = ArenaPlan({k: start for k, (start, _) in ranges.items()}, total, alignment)
    return best


@dataclass(frozen=True)
class PooledPlan:
    """Buffers placed in pools: key -> (pool index, offset); per pool its bytes (end of its last buffer)."""
    placed: dict
    pool_bytes: tuple
    alignment: int


def plan_in_pools(sizes: Mapping[Hashable, int], lifetimes: Mapping[Hashable, tuple[int, int]],
                  capacities: list, alignment: int = ALIGNMENT) -> PooledPlan:
    """The arena planner over several pools (TVM's USMP with workspace pools): each buffer, in _place's
    order, goes to the first pool (in the order given) with a gap that holds it below that pool's
    capacity (None: unbounded). Raises PoolFull for the first buffer no pool holds."""

    def first_fit(size: int, busy: list) -> tuple[int, int, int]:
        for i, cap in enumerate(capacities):
            start, end = _best_gap(size, [(lo, hi) for p, lo, hi in busy if p == i])
            if cap is None or end <= cap:
                return i, start, end
        raise PoolFull(None, size)

    best, full = None, None
    for order_key in ORDERS:        # the smallest total of the orders that fit (the first refusal otherwise)
        try:
            placed = _place(sizes, lifetimes, alignment, first_fit, order_key)
        except PoolFull as exc:
            full = full or exc
            continue
        ends = tuple(max([end for p, _, end in placed.values() if p == i] + [0]) for i in range(len(capacities)))
        if best is None or sum(ends) < sum(best.pool_bytes):
            best = PooledPlan({k: (p, start) for k, (p, start, _) in placed.items()}, ends, alignment)
    if best is None:
        raise full
    return best


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
    last = max(lifetimes[k][1] for k in sizes)
    return max(sum(align_up(sizes[k], alignment) for k in sizes if lifetimes[k][0] <= t <= lifetimes[k][1])
               for t in range(last + 1))


# ---- a lowered Program (backend/program.py) ---------------------------------------------------------
@dataclass
class AotPlan:
    """AOT's workspace: intermediates and each C region's workspace (key ("scratch", step index), live
    during its step only), placed by lifetime in the workspace pools. `arena.offsets` are byte offsets in
    the instance's one block, where the pools lie one after another (pool_base)."""
    arena: ArenaPlan
    direct_output: dict          # temp tensor id -> output index it is written to
    pool_of: dict = field(default_factory=dict)      # key -> index of its pool (in the capacities given)
    pool_bytes: tuple = ()       # per pool, the bytes planned in it
    pool_base: tuple = ()        # per pool, its offset in the instance's block
    lower_bound: int = 0         # peak of simultaneously live buffers (regions' own lower bounds counted)
    pool_lower_bound: tuple = ()   # the same over each pool's buffers


def aot_buffers(prog, region_workspace: Mapping[str, int] | None = None,
                region_lower: Mapping[str, int] | None = None):
    """(direct outputs, sizes, lower-bound sizes, lifetimes) of what AOT's workspace holds: intermediates
    that are not written straight to an output, and a region's workspace at each step that calls it."""
    direct: dict[int, int] = {}
    for k, t in enumerate(prog.outputs):
        if prog.tensors[t].kind == "temp" and t not in direct:
            direct[t] = k
    life = prog.lifetimes()
    temps = [t for step in prog.steps for t in step.outputs if t not in direct]
    sizes = {t: prog.tensors[t].nbytes for t in temps}
    lifetimes = {t: life[t] for t in temps}
    lower = dict(sizes)
    for i, step in enumerate(prog.steps):
        nbytes = (region_workspace or {}).get(step.symbol, 0)
        if nbytes:
            sizes[("scratch", i)] = nbytes
            lower[("scratch", i)] = min(nbytes, (region_lower or {}).get(step.symbol, nbytes))
            lifetimes[("scratch", i)] = (i, i)
    return direct, sizes, lower, lifetimes


def aot_arena(prog, region_workspace: Mapping[str, int] | None = None, region_lower: Mapping[str, int] | None = None,
              capacities: list | None = None, alignment: int = ALIGNMENT) -> AotPlan:
    """AOT: intermediates and the regions' workspaces in the workspace pools (`capacities`, bytes or None
    for unbounded, in the board's order; default one unbounded pool); a temp that is a model output is
    written to the caller's buffer. Raises PoolFull when a buffer fits no pool."""
    direct, sizes, lower, lifetimes = aot_buffers(prog, region_workspace, region_lower)
    capacities = list(capacities) if capacities is not None else [None]
    pooled = plan_in_pools(sizes, lifetimes, capacities, alignment)
    bases, cursor = [], 0
    for nbytes in pooled.pool_bytes:
        bases.append(cursor)
        cursor += align_up(nbytes, alignment)
    offsets = {k: bases[p] + off for k, (p, off) in pooled.placed.items()}
    pool_of = {k: p for k, (p, _) in pooled.placed.items()}
    pool_lb = tuple(peak_live_bytes({k: lower[k] for k in lower if pool_of[k] == i}, lifetimes)
                    for i in range(len(capacities)))
    return AotPlan(ArenaPlan(offsets, pooled.pool_bytes[-1] + bases[-1] if sizes else 0, alignment), direct,
                   pool_of, pooled.pool_bytes, tuple(bases), peak_live_bytes(lower, lifetimes), pool_lb)


@dataclass(frozen=True)
class StoragePlan:
    storage_id: dict             # tensor id -> storage id (inputs and constants own one each, first)
    slot_bytes: list             # bytes of every storage id
    first_temp: int              # storage ids from here on hold intermediates (what the executor allocates)

    @property
    def temp_bytes(self) -> int:
        return storage_bytes(self.slot_bytes[self.first_temp:])


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


def instance_bytes(intermediate_bytes: int, region_scratch: int, alignment: int = ALIGNMENT) -> int:
    """Workspace of one instance: the intermediates, then (aligned) the largest C region's workspace."""
    return align_up(intermediate_bytes, alignment) + region_scratch if region_scratch else intermediate_bytes
