"""A build's memory in the pools of its board (TVM's unified static memory planner with workspace pools is
the reference point): what goes where, whether it fits, and the report.

A board (config.toml [boards.<name>], a toolchain's `board`) declares pools in order, each with a size and
the kinds of buffer it may hold:
- workspace: intermediates and each C region's workspace, placed by memory_plan.aot_arena (the one
  planner) in the first workspace pool that has room for them while they are live;
- io: the caller's input and output buffers, counted against the first io pool (the firmware allocates
  them there; they are live for the whole run, beside the workspace);
- constants: weights and every other constant array, large ones linked as bytes and small ones written
  as C literals alike, in one read-only section (the board's constants_section) that a linker script
  puts in flash; counted against the first constants pool.
A hosted toolchain has no board: one implicit unbounded pool holds everything (config.HOSTED_POOLS).

A model that does not fit fails at build time with the pool, its size and what the model needed. The
report (metadata.json "pools", BuildResult.memory_report()) gives per pool the bytes used beside the
lower bound: for the workspace, the peak of simultaneously live buffers (a region's workspace counted
as its own lower bound when its target reports one); io and constants cannot share bytes, so theirs is
their size.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..config import HOSTED_POOLS, BoardConfig
from ..errors import ByocError
from .memory_plan import ALIGNMENT, AotPlan, PoolFull, aot_arena


@dataclass(frozen=True)
class BoardMemory:
    """What the planner reads of a toolchain's board."""
    board: str | None              # None: a hosted toolchain
    pools: tuple                   # config.PoolConfig, in the board's order
    alignment: int
    constants_section: str | None  # None: the compiler's .rodata for C literals (hosted)

    @classmethod
    def of(cls, board: BoardConfig | None) -> "BoardMemory":
        if board is None:
            return cls(None, HOSTED_POOLS, ALIGNMENT, None)
        return cls(board.name, board.pools, board.alignment, board.constants_section)

    def first(self, kind: str):
        return next((p for p in self.pools if kind in p.kinds), None)

    def workspace_pools(self) -> list:
        return [p for p in self.pools if "workspace" in p.kinds]

    def workspace_budget(self) -> int | None:
        """The largest workspace pool's size; None when one is unbounded (memory_plan.workspace_budget)."""
        sizes = [p.size for p in self.workspace_pools()]
        return None if not sizes or None in sizes else max(sizes)

    def where(self) -> str:
        return f"board {self.board!r}" if self.board else "the hosted toolchain"


@dataclass(frozen=True)
class PoolUse:
    """One pool's line of the report."""
    name: str
    size: int | None
    kinds: tuple
    workspace_bytes: int = 0
    workspace_lower_bound: int = 0
    io_bytes: int = 0
    constants_bytes: int = 0

    @property
    def used_bytes(self) -> int:
        return self.workspace_bytes + self.io_bytes + self.constants_bytes

    @property
    def lower_bound(self) -> int:
        return self.workspace_lower_bound + self.io_bytes + self.constants_bytes

    def row(self) -> dict:
        return {"name": self.name, "size": self.size, "kinds": list(self.kinds), "used_bytes": self.used_bytes,
                "lower_bound_bytes": self.lower_bound, "workspace_bytes": self.workspace_bytes,
                "workspace_lower_bound_bytes": self.workspace_lower_bound, "io_bytes": self.io_bytes,
                "constants_bytes": self.constants_bytes}


def _capacities(memory: BoardMemory, io_bytes: int) -> list:
    """Room for the workspace in each workspace pool: its size, less the caller's io when it holds them."""
    io_pool = memory.first("io")
    return [None if p.size is None else max(0, p.size - (io_bytes if p is io_pool else 0))
            for p in memory.workspace_pools()]


def _describe(key, prog) -> str:
    if isinstance(key, tuple):
        return f"the workspace of region {prog.steps[key[1]].symbol} at step {key[1]}"
    return f"intermediate {prog.tensors[key].name} of step {prog.lifetimes()[key][0]}"


def plan_aot(prog, memory: BoardMemory, region_workspace: dict, region_lower: dict, io_bytes: int) -> AotPlan:
    """aot_arena in the board's workspace pools, or one message naming the pool, its size and the need."""
    if not memory.workspace_pools():
        if any(region_workspace.values()) or any(s.outputs for s in prog.steps):
            raise ByocError(f"build: {memory.where()} declares no pool of kind 'workspace'; add \"workspace\" to "
                            "the kinds of one of its [[boards.*.pools]]")
    try:
        return aot_arena(prog, region_workspace, region_lower, _capacities(memory, io_bytes), memory.alignment)
    except PoolFull as full:
        need = aot_arena(prog, region_workspace, region_lower, [None], memory.alignment)
        pools = ", ".join(f"{p.name!r} ({p.size} bytes" + (f", {io_bytes} of them the caller's inputs and outputs"
                                                              if p is memory.first("io") and io_bytes else "") + ")"
                          for p in memory.workspace_pools())
        raise ByocError(f"build: the model does not fit the workspace pool(s) of {memory.where()}: {pools}; its "
                        f"workspace needs {need.arena.total_bytes} bytes (lower bound, the peak of simultaneously "
                        f"live buffers: {need.lower_bound}), and {_describe(full.key, prog)} ({full.nbytes} bytes) "
                        "fits in none; give the board a larger pool or build a smaller model") from None


def check_workspace(memory: BoardMemory, nbytes: int, io_bytes: int) -> None:
    """The graph executor's one block (storage and regions' workspace) against the first workspace pool."""
    caps = _capacities(memory, io_bytes)
    if caps and caps[0] is not None and nbytes > caps[0]:
        pool = memory.workspace_pools()[0]
        raise ByocError(f"build: the model does not fit workspace pool {pool.name!r} of {memory.where()} "
                        f"({pool.size} bytes): the graph executor's workspace needs {nbytes} bytes")


def report(memory: BoardMemory, plan: AotPlan | None, workspace_bytes: int, lower_bound: int, io_bytes: int,
           constants_bytes: int) -> list[PoolUse]:
    """Per pool what it holds; refuses constants or io that do not fit their pool."""
    ws_pools = memory.workspace_pools()
    rows = []
    for pool in memory.pools:
        k = next((i for i, p in enumerate(ws_pools) if p is pool), None)
        if plan is not None and k is not None:
            ws, lb = plan.pool_bytes[k], plan.pool_lower_bound[k]
        else:
            ws, lb = (workspace_bytes, lower_bound) if k == 0 else (0, 0)
        rows.append(PoolUse(pool.name, pool.size, pool.kinds, ws, lb,
                            io_bytes if pool is memory.first("io") else 0,
                            constants_bytes if pool is memory.first("constants") else 0))
    for kind, need in (("constants", constants_bytes), ("io", io_bytes)):
        pool = memory.first(kind)
        if pool is None and need:
            raise ByocError(f"build: {memory.where()} declares no pool of kind {kind!r}, and the model has "
                            f"{need} bytes of {kind}; add {kind!r} to the kinds of one of its pools")
    for row in rows:
        if row.size is not None and row.used_bytes > row.size:
            raise ByocError(f"build: the model does not fit pool {row.name!r} of {memory.where()} ({row.size} "
                            f"bytes): it needs {row.used_bytes} (constants {row.constants_bytes}, the caller's "
                            f"inputs and outputs {row.io_bytes}, workspace {row.workspace_bytes})")
    return rows


def report_text(rows: list[dict]) -> str:
    """The per-pool table (metadata.json "pools" rows): bytes used beside the lower bound and the size."""
    lines = [f"{'pool':<12} {'size':>10} {'used':>10} {'lower bound':>12}  workspace / io / constants"]
    for r in rows:
        size = "unbounded" if r["size"] is None else str(r["size"])
        lines.append(f"{r['name']:<12} {size:>10} {r['used_bytes']:>10} {r['lower_bound_bytes']:>12}  "
                     f"{r['workspace_bytes']} / {r['io_bytes']} / {r['constants_bytes']}")
    return "\n".join(lines)
