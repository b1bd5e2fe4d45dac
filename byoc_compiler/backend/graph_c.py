"""Graph executor glue in C: the function table, graph.json and params embedded, init/run/deinit.

The C graph executor (runtime/src/graph_executor.c) does the work; the model only hands it the
embedded texts and a table from func_name to a packed function. With interface="unpacked" the
functions are unpacked, so the table points at packed adapters generated around them.
"""
from __future__ import annotations

from .c_abi import entry_points, unique_identifiers
from .constants import ConstantPool, c_bytes
from .graph_json import graph_json
from .model_c import byte_array, c_string
from .program import Program

RUN_FUNCTION = "byoc_model_run"


def graph_executor_source(prog: Program, params_blob: bytes, types: dict, trampolines: dict, interface: str,
                          has_modules: bool, pool: ConstantPool | None = None, pre_init: str = "") -> str:
    """types: symbol -> (input types, output types); trampolines: blob-region symbol -> packed C function.
    A large graph.json or params blob goes to `pool` (linked as raw bytes) when one is given."""
    out = []
    symbols = list(dict.fromkeys(s.symbol for s in prog.steps))
    plain = [s for s in symbols if s not in trampolines]
    if interface == "unpacked" and plain:
        adapters = dict(zip(plain, unique_identifiers([f"byoc_adapter_{s}" for s in plain], taken=set(symbols))))
        # Packed wrappers around the unpacked entry points: c_abi writes the packed form when
        # BYOC_UNPACKED_API is not defined, so the unpacked part of the file ends here.
        out.append("\n/* ---- packed adapters around unpacked functions, for the graph executor ---- */\n"
                   "#undef BYOC_UNPACKED_API\n")
        for s in plain:
            out.append(entry_points(adapters[s], s, *types[s]))
    else:
        adapters = {s: s for s in plain}
    table = [(s, trampolines.get(s) or adapters[s]) for s in symbols]

    embedded_json = graph_json(prog, compact=True).encode()
    out.append("\n/* ---- graph executor ---- */\n#include <byoc/graph_executor.h>\n")
    out.append(c_bytes(pool, "byoc_graph_json", embedded_json, byte_array, "graph.json, compact"))
    out.append(c_bytes(pool, "byoc_params", params_blob, byte_array, "params blob (runtime-abi.md)"))
    rows = ",\n".join(f"  {{{c_string(name)}, {fn}, NULL}}" for name, fn in table) or "  {NULL, NULL, NULL}"
    out.append(f"static const ByocFuncEntry byoc_funcs[{max(1, len(table))}] = {{\n{rows}\n}};\n"
               "static ByocGraph* byoc_graph;\n"
               "static const ByocModelDesc byoc_desc;\n")
    modules_init = "  if (byoc_modules_init() != 0) return -1;\n" if has_modules else ""
    modules_deinit = "  byoc_modules_deinit();\n" if has_modules else ""
    out.append(
        "static void byoc_model_deinit(void) {\n"
        "  if (byoc_graph != NULL) byoc_graph_destroy(byoc_graph);\n"
        f"  byoc_graph = NULL;\n{modules_deinit}}}\n"
        "static int32_t byoc_model_init(void) {\n"
        "  if (byoc_graph != NULL) return 0;\n"
        f"{pre_init}"
        f"{modules_init}"
        f"  if (byoc_graph_create((const char*)byoc_graph_json, (size_t){len(embedded_json)}, byoc_params,\n"
        f"                        (size_t){len(params_blob)}, byoc_funcs, {len(table)}, &byoc_graph) != 0\n"
        "      || byoc_graph_check_signature(byoc_graph, &byoc_desc) != 0) {\n"
        "    byoc_model_deinit();\n"
        "    return -1;\n"
        "  }\n"
        "  return 0;\n}\n"
        f"static int32_t {RUN_FUNCTION}(void* const* inputs, void* const* outputs) {{\n"
        "  if (byoc_graph == NULL) {\n"
        "    byoc_set_last_error(\"model %s: not initialized; call its init first\", byoc_desc.name);\n"
        "    return -1;\n  }\n"
        "  return byoc_graph_run(byoc_graph, inputs, outputs);\n}\n")
    return "".join(out)
