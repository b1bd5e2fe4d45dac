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
from .graph_json import graph_json
from .model_c import ALIGNED_ALLOC, constants_once, default_instance
from .program import Program

RUN_FUNCTION = "byoc_model_run"


def graph_executor_source(prog: Program, params_blob: bytes, types: dict, interface: str,
                          region_workspace: dict[str, int], blob_index: dict[str, int],
                          pool: ConstantPool | None = None, pre_init: str = "") -> str:
    """types: symbol -> (input types, output types); region_workspace: C-region symbol -> workspace_bytes;
    blob_index: blob-region symbol -> index of its module in the instance. A large graph.json or params
    blob goes to `pool` (linked as raw bytes) when one is given."""
    out = []
    symbols = list(dict.fromkeys(s.symbol for s in prog.steps))
    plain = [s for s in symbols if s not in blob_index]
    if interface == "unpacked" and plain:
        adapters = dict(zip(plain, unique_identifiers([f"byoc_adapter_{s}" for s in plain], taken=set(symbols))))
        # Packed wrappers around the unpacked entry points: ctext.entry_points writes the packed form when
        # BYOC_UNPACKED_API is not defined, so the unpacked part of the file ends here.
        out.append("\n/* ---- packed adapters around unpacked functions, for the graph executor ---- */\n"
                   "#undef BYOC_UNPACKED_API\n")
        for s in plain:
            out.append(entry_points(adapters[s], s, *types[s], workspace=bool(region_workspace.get(s))))
    else:
        adapters = {s: s for s in plain}
    scratch = max([region_workspace.get(s, 0) for s in plain] + [0])

    embedded_json = graph_json(prog, compact=True).encode()
    out.append("\n/* ---- graph executor ---- */\n")
    out.append(c_bytes(pool, "byoc_graph_json", embedded_json, byte_array, "graph.json, compact"))
    out.append(c_bytes(pool, "byoc_params", params_blob, byte_array, "params blob (runtime-abi.md)"))
    if scratch:
        out.append(ALIGNED_ALLOC)
    # The function table is the instance's own: a C region's resource is the instance's workspace, a blob
    # region's function and resource come from the instance's module.
    fill = []
    for k, s in enumerate(symbols):
        if s in blob_index:
            fn, res = f"inst->blob_fn[{blob_index[s]}]", f"inst->blob_res[{blob_index[s]}]"
        else:
            fn, res = adapters[s], ("inst->scratch" if region_workspace.get(s) else "NULL")
        fill.append(f"  inst->funcs[{k}].name = {c_string(s)};\n  inst->funcs[{k}].fn = {fn};\n"
                    f"  inst->funcs[{k}].resource = {res};\n")
    modules_create = ("  if (byoc_modules_create(inst) != 0) {\n    byoc_instance_destroy(inst);\n"
                      "    return -1;\n  }\n") if blob_index else ""
    modules_destroy = "  byoc_modules_destroy(inst);\n" if blob_index else ""
    alloc = (f"  inst->scratch = byoc_aligned_alloc({scratch}, &inst->scratch_raw);\n"
             "  if (inst->scratch == NULL) {\n"
             "    byoc_set_last_error(\"model: out of memory for the regions' workspace\");\n"
             "    byoc_instance_destroy(inst);\n    return -1;\n  }\n"
             f"  inst->allocated += UINT64_C({scratch});\n") if scratch else ""
    table = "inst->funcs" if symbols else "NULL"
    out.append(
        "static const ByocModelDesc byoc_desc;\n"
        "static void byoc_instance_destroy(void* instance) {\n"
        "  ByocInstance* inst = (ByocInstance*)instance;\n"
        "  if (inst == NULL) return;\n"
        "  if (inst->graph != NULL) byoc_graph_destroy(inst->graph);\n"
        f"{modules_destroy}"
        "  free(inst->scratch_raw);\n  free(inst);\n}\n"
        "static int32_t byoc_instance_create(void** out_instance) {\n"
        + constants_once(pre_init) +
        "  ByocInstance* inst = (ByocInstance*)calloc(1, sizeof(ByocInstance));\n"
        "  *out_instance = NULL;\n"
        "  if (inst == NULL) {\n    byoc_set_last_error(\"model: out of memory for an instance\");\n"
        "    return -1;\n  }\n"
        f"{modules_create}{alloc}{''.join(fill)}"
        f"  if (byoc_graph_create((const char*)byoc_graph_json, (size_t){len(embedded_json)}, byoc_params,\n"
        f"                        (size_t){len(params_blob)}, {table}, {len(symbols)}, &inst->graph) != 0\n"
        "      || byoc_graph_check_signature(inst->graph, &byoc_desc) != 0) {\n"
        "    byoc_instance_destroy(inst);\n"
        "    return -1;\n"
        "  }\n"
        "  inst->allocated += byoc_graph_workspace_bytes(inst->graph);  /* the storage plan of graph.json */\n"
        "  inst->ready = 1;\n  *out_instance = inst;\n  return 0;\n}\n"
        "static int32_t byoc_instance_run(void* instance, void* const* inputs, void* const* outputs) {\n"
        "  ByocInstance* const inst = (ByocInstance*)instance;\n"
        "  if (inst == NULL || !inst->ready) {\n"
        "    byoc_set_last_error(\"byoc_instance_run: the instance was not created (or failed to)\");\n"
        "    return -1;\n  }\n"
        "  return byoc_graph_run(inst->graph, inputs, outputs);\n}\n")
    out.append(default_instance(RUN_FUNCTION, exported=False))
    return "".join(out)
