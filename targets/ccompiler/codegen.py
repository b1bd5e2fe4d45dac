"""The ccompiler codegen: one region (external function) -> one C file calling the kernel library.

    artifact = ccompiler_codegen(func, "tvmgen_default_ccompiler_main_0")

The file holds, in this order: the region's small constants as `static const` arrays, and an
`extern` declaration (shape, dtype and size in its comment) for each large one, whose bytes the
build links from byoc_constants.bin (backend.constants: weights never pass through the C parser); the
core `<symbol>_(const float* in0, ..., float* out0[, void* workspace])` that calls the kernels in topological order,
one commented call per op or composite; and the entry point `<symbol>` in both interfaces
(vendor.entry_points). Identifiers in the C text are our own (in0, c0, t0, out0); names
from the model appear only in comments, scrubbed (vendor.comment). Every literal, array and name is
written by the vendor API's C text writers (byoc_compiler.ctext), like the host's.

Three modules do the work, one idea each: lowering.py walks the region into steps over abstract buffers
(reshape is a view, a composite whose body is a fusable chain is one fused call, any other composite is
its body op by op); passes.py (and fuse_residual.py) rewrite and place them (results computed straight
into the outputs, constant weights packed once, residual adds fused into the conv before them, int8 tensors
kept channels-last between the convolutions that take them so (channels_last_layout.py), elementwise steps
in place over a dead input, one workspace planned by lifetime, buffers named);
render.py writes the text. The workspace is not the region's own: its size is the artifact's
workspace_bytes and the model instance that calls the region passes it, so the file keeps no mutable
static state and two instances run concurrently.
"""
from __future__ import annotations

from byoc_compiler.vendor import ByocError, CSourceArtifact, Function, is_identifier, is_large

from . import kernels
from .channels_last_layout import place_channels_last
from .fuse_qresidual import fuse_qresidual_adds
from .fuse_residual import fuse_residual_adds
from .lowering import Lowering, Step
from .passes import ALIGNMENT, assign_outputs, name_buffers, plan, prepack_weights, run_in_place
from .render import core_name, render

__all__ = ["ALIGNMENT", "ccompiler_codegen"]


def ccompiler_codegen(func: Function, symbol: str) -> CSourceArtifact:
    """One region -> CSourceArtifact with one file, `<symbol>.c`."""
    if not is_identifier(symbol):
        raise ByocError(f"region symbol {symbol!r} is not a C identifier; partition the model again")
    lowering = Lowering(func)
    results = lowering.run()
    in_types = lowering.input_types
    out_types = [v.type for v in results]
    assign_outputs(lowering, results)
    prepack_weights(lowering)
    fuse_residual_adds(lowering, Step)
    fuse_qresidual_adds(lowering, Step)
    place_channels_last(lowering)
    run_in_place(lowering)
    workspace, lower_bound = plan(lowering)
    name_buffers(lowering, symbol)
    code = render(symbol, core_name(symbol), lowering, workspace, in_types, out_types)
    linked = {b.cname: b.data for b in lowering.consts.values() if is_large(b.data)}
    return CSourceArtifact(symbol, {f"{symbol}.c": code}, include_dirs=(kernels.INCLUDE_DIR,), constants=linked,
                           workspace_bytes=workspace, workspace_lower_bound=lower_bound)

