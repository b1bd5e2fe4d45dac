/* byoc graph executor: interprets a TVM-layout graph.json plus a params blob (docs/runtime-abi.md). */
#ifndef BYOC_GRAPH_EXECUTOR_H_
#define BYOC_GRAPH_EXECUTOR_H_

#include "byoc/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ByocGraph ByocGraph;

/* Parses and validates json (json_len bytes, need not be NUL-terminated) and the params blob, resolves
 * every func_name in funcs, checks the storage plan (attrs.storage_id: ids in range, an input's or param's
 * id its own, no two entries live at once on one id) and allocates it. 0 on success; otherwise -1 with the last
 * error set and *out_graph == NULL. All allocation happens here. */
int32_t byoc_graph_create(const char* json, size_t json_len, const unsigned char* params, size_t params_len,
                          const ByocFuncEntry* funcs, int32_t n_funcs, ByocGraph** out_graph);
/* inputs: one contiguous data pointer per graph input (bound, not copied); outputs: one per head
 * (results are copied there). No allocation. */
int32_t byoc_graph_run(ByocGraph* graph, void* const* inputs, void* const* outputs);
void byoc_graph_destroy(ByocGraph* graph);

/* Introspection. Inputs are the "null" nodes without a params entry, in arg_nodes order. */
int32_t byoc_graph_num_inputs(const ByocGraph* graph);
int32_t byoc_graph_num_outputs(const ByocGraph* graph);
/* Bytes of intermediate storage allocated: per storage id of an intermediate, its largest entry rounded up
 * to 64 bytes (excludes params and bound inputs). */
uint64_t byoc_graph_workspace_bytes(const ByocGraph* graph);
/* Fills info (name/ndim/shape/dtype; pointers owned by graph) for input or output i; -1 if out of range. */
int32_t byoc_graph_input_info(const ByocGraph* graph, int32_t i, ByocTensorInfo* info);
int32_t byoc_graph_output_info(const ByocGraph* graph, int32_t i, ByocTensorInfo* info);
/* Compares the graph's inputs/outputs with a descriptor (counts, shapes, dtypes; input names);
 * generated init code calls it so a graph.json that disagrees with the descriptor fails at init. */
int32_t byoc_graph_check_signature(const ByocGraph* graph, const ByocModelDesc* desc);

/* Debug/test hook used by the runner's --graph/--params: while set, byoc_graph_create uses these
 * texts instead of the ones it is passed (either may be NULL to keep the passed one) and, when expect
 * is not NULL, fails unless the resulting graph matches that descriptor (byoc_graph_check_signature).
 * The caller keeps the buffers alive. byoc_graph_clear_override() undoes it. */
void byoc_graph_set_override(const char* json, size_t json_len, const unsigned char* params, size_t params_len,
                             const ByocModelDesc* expect);
void byoc_graph_clear_override(void);

#ifdef __cplusplus
}
#endif
#endif /* BYOC_GRAPH_EXECUTOR_H_ */
