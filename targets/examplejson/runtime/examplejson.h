/* ExampleJSON runtime module: the graph format of TVM's BYOC guide, executed in C99.
 * Format: targets/examplejson/FORMAT.md. ABI: docs/runtime-abi.md ("Target runtime modules").
 *
 * A module is created from the text once (parse + validate + allocate every tensor); each
 * subgraph is then a packed function (inputs then outputs as DLTensors). All errors go through
 * byoc_set_last_error; parse errors read "examplejson: line L, column C: ...".
 * A module is not reentrant: one call of one of its subgraphs at a time. */
#ifndef BYOC_EXAMPLEJSON_H_
#define BYOC_EXAMPLEJSON_H_

#include <stddef.h>
#include <stdint.h>

#include "byoc/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the build's generated code uses: create / get_function / destroy. */
extern const ByocModuleKind byoc_module_kind_examplejson;

/* The guide's LoadFromBinary: the text is the whole serialized form. 0 on success. */
int32_t examplejson_module_create(const char* text, size_t len, void** out_module);
/* Reads the file at path and creates a module from it; errors name the path. */
int32_t examplejson_module_load_file(const char* path, void** out_module);
/* The guide's GetFunction: the packed function of subgraph `symbol` and its resource handle. */
int32_t examplejson_module_get_function(void* module, const char* symbol, ByocPackedFunc* out_fn,
                                        void** out_resource);
void examplejson_module_destroy(void* module);

/* The guide's GetSource / SaveToBinary: the text the module was created from (len bytes). */
const char* examplejson_module_get_source(const void* module, size_t* len);

/* Introspection (drivers, tests, the fuzz harness). */
typedef struct {
  int32_t ndim;
  const int64_t* shape;
  DLDataType dtype;
} ExampleJsonTensorInfo;

int32_t examplejson_module_num_subgraphs(const void* module);
const char* examplejson_module_subgraph_name(const void* module, int32_t index); /* NULL if out of range */
/* Number of inputs / outputs of subgraph `symbol`; -1 with last error if absent. */
int32_t examplejson_module_num_inputs(const void* module, const char* symbol);
int32_t examplejson_module_num_outputs(const void* module, const char* symbol);
/* Shape and dtype of input (is_output = 0) or output (is_output = 1) `index`; 0 on success. */
int32_t examplejson_module_tensor_info(const void* module, const char* symbol, int32_t is_output, int32_t index,
                                       ExampleJsonTensorInfo* out);
/* Bytes of tensor memory the module allocated at create (op results and constants). */
uint64_t examplejson_module_arena_bytes(const void* module);
/* Rough multiply-add count of one run of every subgraph (bounds the work of a fuzz run). */
double examplejson_module_work(const void* module);

#ifdef __cplusplus
}
#endif
#endif /* BYOC_EXAMPLEJSON_H_ */
