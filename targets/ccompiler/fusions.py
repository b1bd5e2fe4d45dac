"""The float fusions as the codegen needs them, derived from the composite patterns the target declares
(targets/ccompiler/__init__.py: FUSED_CHAINS, one pattern per chain): which op chain a composite's body is,
which rule emits its one kernel call, the axis the fused bias is added along and the activation applied
in the kernel's epilogue."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import FUSED_CHAINS, target

# The producer of a chain -> the bias_add axis its fused kernel adds along, given the data's rank.
BIAS_AXIS: dict[str, Callable[[int], int]] = {"nn.conv2d": lambda nd: 1, "nn.dense": lambda nd: nd - 1}
# The last op of a chain -> what the kernel's epilogue computes (a kernels.ACTIVATIONS key). clip is only
# ever (0, 6): the pattern's check refuses other bounds.
EPILOGUE: dict[str, str | None] = {"nn.bias_add": None, "nn.relu": "nn.relu", "clip": "relu6"}


@dataclass(frozen=True)
class Fusion:
    ops: tuple[str, ...]        # the chain in the composite's body, producer first
    op: str                     # the rule that emits it (with bias and activation)
    bias_axis: Callable         # (data ndim) -> the bias_add axis the fused kernel adds along
    activation: str | None = None  # a kernels.ACTIVATIONS key: what the last op of the chain computes


def _fusion(chain: tuple[str, ...]) -> Fusion:
    return Fusion(chain, chain[0], BIAS_AXIS[chain[0]], EPILOGUE[chain[-1]])


FUSIONS: dict[str, Fusion] = {p.composite: _fusion(FUSED_CHAINS[p.name]) for p in target.patterns
                              if p.name in FUSED_CHAINS}
