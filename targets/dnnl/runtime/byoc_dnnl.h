/* dnnl runtime module: a region's JSON graph (targets/dnnl/FORMAT.md) executed by oneDNN primitives.
 * ABI: docs/runtime-abi.md ("Target runtime modules"). C99 on oneDNN's C API (dnnl.h).
 *
 * create() parses and validates the JSON (no oneDNN call); bind_constants() binds each `const` node to
 * the model's data by name; get_function() builds the primitives once (weights reordered once into the
 * layouts oneDNN picks, intermediates in oneDNN's layouts, one user-managed scratchpad) and returns the
 * packed function, which allocates nothing. Errors go through byoc_set_last_error and name the node:
 * "dnnl region S: node 7 (nn.conv2d): ...". A module runs one call at a time. */
#ifndef BYOC_DNNL_H_
#define BYOC_DNNL_H_

#include <stddef.h>
#include <stdint.h>

#include "byoc/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const ByocModuleKind byoc_module_kind_dnnl;

int32_t byoc_dnnl_module_create(const char* json, size_t len, void** out_module);
int32_t byoc_dnnl_module_bind_constants(void* module, const ByocConstant* consts, int32_t num_consts);
int32_t byoc_dnnl_module_get_function(void* module, const char* symbol, ByocPackedFunc* out_fn, void** out_resource);
void byoc_dnnl_module_destroy(void* module);

/* Introspection (tests, the fuzz harness). */
int32_t byoc_dnnl_module_num_inputs(const void* module);
int32_t byoc_dnnl_module_num_outputs(const void* module);
/* Shape of input (is_output = 0) or output (1) `index` (float32); 0 on success. */
int32_t byoc_dnnl_module_tensor_shape(const void* module, int32_t is_output, int32_t index, int32_t* ndim,
                                      const int64_t** shape);
int32_t byoc_dnnl_module_num_constants(const void* module);
/* Name and byte size of const node `index` (in node order); NULL if out of range. */
const char* byoc_dnnl_module_constant(const void* module, int32_t index, uint64_t* nbytes);
/* Number of primitives (reorders included) one run executes; 0 before get_function. */
int32_t byoc_dnnl_module_num_steps(const void* module);

#ifdef __cplusplus
}
#endif
#endif /* BYOC_DNNL_H_ */
