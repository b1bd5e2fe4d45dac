"""Graph executor glue in C: graph.json and params embedded, instances, init/run/deinit.

The C graph executor (runtime/src/graph_executor.c) does the work; each instance hands it the
embedded texts and its own table from func_name to a packed function and resource (a C region's
workspace, a blob region's module), so the graph's storage and every workspace belong to the
instance. With interface="unpacked" the C regions are unpacked, so the table points at packed
adapters generated around them.
"""
from __future__ import annotations

from ..ctext import byte_array, c_string, entry_points, unique_identifiers
from .constants import ConstantPool, c_bytes
from .model_c import (ALIGNED_ALLOC, RUN_GUARD, aligned_block, default_instance, instance_functions, modules_create,
                      modules_destroy)
from .program import Program

RUN_FUNCTION = "byoc_model_run"


def graph_executor_source(prog: Program, embedded_json: bytes, params_blob: bytes, types: dict, interface: str,
                          region_workspace: dict[str, int], blob_index: dict[str, int],
                          pool: ConstantPool | None = None, pre_init: str = "") -> str:
    """embedded_json: the compact graph.json (built once, by the build); types: symbol -> (input types,
    output types); region_workspace: C-region symbol -> workspace_bytes; blob_index: blob-region symbol ->
    index of its module in the instance. A large graph.json or params blob goes to `pool` (linked as raw
    bytes) when one is given."""
    symbols = list(dict.fromkeys(s.symbol for s in prog.steps))
    plain = [s for s in symbols if s not in blob_index]
    adapter_text, adapters = _adapters(plain, symbols, types, interface, region_workspace)
    scratch = max([region_workspace.get(s, 0) for s in plain] + [0])
    create = (modules_create(bool(blob_index))
              + aligned_block("scratch", scratch, "the regions' workspace")
              + _function_table(symbols, adapters, region_workspace, blob_index)
              + _graph_create(len(embedded_json), len(params_blob), len(symbols)))
    destroy_first = "  if (inst->graph != NULL) byoc_graph_destroy(inst->graph);\n" + modules_destroy(bool(blob_index))
    return (adapter_text
            + "\n/* ---- graph executor ---- */\n"
            + c_bytes(pool, "byoc_graph_json", embedded_json, byte_array, "graph.json, compact")
            + c_bytes(pool, "byoc_params", params_blob, byte_array, "params blob (runtime-abi.md)")
            + (ALIGNED_ALLOC if scratch else "")
            + "static const ByocModelDesc byoc_desc;\n"
            + instance_functions("scratch_raw", destroy_first, create, pre_init)
            + "static int32_t byoc_instance_run(void* instance, void* const* inputs, void* const* outputs) {\n"
            + RUN_GUARD
            + "  return byoc_graph_run(inst->graph, inputs, outputs);\n}\n"
            + default_instance(RUN_FUNCTION, exported=False))


def _adapters(plain: list[str], symbols: list[str], types: dict, interface: str,
              region_workspace: dict[str, int]) -> tuple[str, dict[str, str]]:
    """(C text, symbol -> the packed function the graph executor calls). With interface="unpacked" the
    C regions and kernels are unpacked, so packed adapters are generated around them: ctext.entry_points
    writes the packed form when BYOC_UNPACKED_API is not defined, so the unpacked part of the file ends here."""
    if interface != "unpacked" or not plain:
        return "", {s: s for s in plain}
    adapters = dict(zip(plain, unique_identifiers([f"byoc_adapter_{s}" for s in plain], taken=set(symbols))))
    text = ("\n/* ---- packed adapters around unpacked functions, for the graph executor ---- */\n"
            "#undef BYOC_UNPACKED_API\n")
    text += "".join(entry_points(adapters[s], s, *types[s], workspace=bool(region_workspace.get(s))) for s in plain)
    return text, adapters


def _function_table(symbols: list[str], adapters: dict[str, str], region_workspace: dict[str, int],
                    blob_index: dict[str, int]) -> str:
    """The create step filling the instance's own func_name -> function table: a C region's resource is the
    instance's workspace, a blob region's function and resource come from the instance's module."""
    fill = []
    for k, s in enumerate(symbols):
        if s in blob_index:
            fn, res = f"inst->blob_fn[{blob_index[s]}]", f"inst->blob_res[{blob_index[s]}]"
        else:
            fn, res = adapters[s], ("inst->scratch" if region_workspace.get(s) else "NULL")
        fill.append(f"  inst->funcs[{k}].name = {c_string(s)};\n  inst->funcs[{k}].fn = {fn};\n"
                    f"  inst->funcs[{k}].resource = {res};\n")
    return "".join(fill)


def _graph_create(json_bytes: int, params_bytes: int, n_funcs: int) -> str:
    table = "inst->funcs" if n_funcs else "NULL"
    return (f"  if (byoc_graph_create((const char*)byoc_graph_json, (size_t){json_bytes}, byoc_params,\n"
            f"                        (size_t){params_bytes}, {table}, {n_funcs}, &inst->graph) != 0\n"
            "      || byoc_graph_check_signature(inst->graph, &byoc_desc) != 0) {\n"
            "    byoc_instance_destroy(inst);\n"
            "    return -1;\n"
            "  }\n"
            "  inst->allocated += byoc_graph_workspace_bytes(inst->graph);  /* the storage plan of graph.json */\n")
