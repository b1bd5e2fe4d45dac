/* byoc hosted runtime (on top of the core, byoc/core.h): values, packed calls, last error, module kinds, model descriptor.
 * C99, libc only. The contract is documented in docs/runtime-abi.md. */
#ifndef BYOC_RUNTIME_H_
#define BYOC_RUNTIME_H_

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#include "byoc/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- packed calling convention ------------------------------------------------------------ */
typedef union {
  int64_t v_int64;
  double v_float64;
  void* v_handle;
  const char* v_str;
} ByocValue;

/* type codes (same numbers as TVM's so argument arrays read the same in a debugger) */
enum { BYOC_ARG_INT = 0, BYOC_ARG_FLOAT = 2, BYOC_ARG_DLTENSOR = 7, BYOC_ARG_STR = 11 };

typedef int32_t (*ByocPackedFunc)(const ByocValue* args, const int32_t* type_codes, int32_t num_args,
                                  void* resource_handle);

/* ---- last error: byoc/core.h (byoc_set_last_error, byoc_get_last_error, byoc_clear_last_error) */

/* ---- large constants loaded at init (build option constants="params") ----------------------------
 * A model built so keeps its large constants out of the binary: before its init, hand it the bytes of
 * the build's constants.bin (the runner's --constants FILE does this). Init copies them (after checking
 * size and checksum); the caller may free them after init. NULL, 0 forgets them. */
void byoc_set_constants(const void* data, size_t size);
void byoc_get_constants(const void** data, size_t* size);

/* ---- large buffers -------------------------------------------------------------------------------
 * Asks the OS to back [base, base + bytes) with huge pages (Linux: madvise MADV_HUGEPAGE, which takes
 * effect where transparent huge pages are "always" or "madvise", the default of many distributions),
 * before the buffer is first written. A model's constants loaded at init and its instances' arenas are
 * read through on every run, on 4 KB pages some 30,000 of them for a ResNet-50, each a TLB entry to walk
 * to (docs/runtime-abi.md). Advice only: where the OS has no such thing, or refuses, nothing changes and
 * nothing is reported. */
void byoc_advise_huge_pages(void* base, size_t bytes);

/* ---- function tables (graph executor, module lookups) ---------------------------------------- */
typedef struct {
  const char* name;  /* func_name in graph.json */
  ByocPackedFunc fn;
  void* resource;    /* passed as resource_handle; NULL for plain kernels */
} ByocFuncEntry;

/* Linear search by name; NULL (and last error set) if absent. */
const ByocFuncEntry* byoc_lookup_function(const ByocFuncEntry* table, int32_t n, const char* name);

/* ---- target runtime modules (blob artifacts such as ExampleJSON) ----------------------------- */
/* A constant of a region, bound by name from the model's data instead of travelling in the blob. */
typedef struct {
  const char* name;  /* the name the blob refers to it by */
  const void* data;  /* in the toolchain CPU's byte order (a C array of its dtype) */
  uint64_t nbytes;
} ByocConstant;

typedef struct ByocModuleKind {
  const char* name; /* "examplejson" */
  int32_t (*create)(const char* blob, size_t len, void** out_module); /* parse + validate */
  int32_t (*get_function)(void* module, const char* symbol, ByocPackedFunc* out_fn, void** out_resource);
  void (*destroy)(void* module);
  /* NULL when the blob carries its constants. Otherwise called once after create and before get_function
   * with every constant of the region (data owned by the model and valid until destroy); 0 on success. */
  int32_t (*bind_constants)(void* module, const ByocConstant* consts, int32_t num_consts);
} ByocModuleKind;

/* ---- model descriptor (every built model exports byoc_model_desc) ---------------------------- */
typedef struct {
  const char* name;
  int32_t ndim;
  const int64_t* shape;
  DLDataType dtype;
} ByocTensorInfo;

typedef struct {
  const char* name;      /* mod_name, e.g. "default" */
  const char* executor;  /* "graph" | "aot" */
  const char* interface; /* "packed" | "unpacked" */
  int32_t num_inputs;
  const ByocTensorInfo* inputs;
  int32_t num_outputs;
  const ByocTensorInfo* outputs;
  uint64_t workspace_bytes; /* AOT arena / graph executor storage */
  int32_t (*init)(void);    /* idempotent */
  int32_t (*run)(void* const* inputs, void* const* outputs); /* contiguous data pointers */
  void (*deinit)(void);
  /* Instances (docs/runtime-abi.md, "Instances and threads"): everything a run writes -- the arena or
   * graph storage, every region's workspace, target modules -- belongs to one instance. create allocates
   * it (the only allocation), run_instance runs it (no allocation), destroy frees it. Different instances
   * run concurrently from different threads; one instance runs one call at a time. init/run/deinit above
   * drive one default instance. */
  int32_t (*create)(void** out_instance);
  int32_t (*run_instance)(void* instance, void* const* inputs, void* const* outputs);
  void (*destroy)(void* instance);
  /* Bytes of working memory `instance` (NULL: the default instance) allocated when it was created, counted
   * where it is allocated: the AOT arena, or the graph executor's storage plus the regions' workspace. For
   * every model byoc builds this equals workspace_bytes (tests/test_memory_plan.py); 0 for no instance.
   * NULL in hand-written descriptors that predate it. */
  uint64_t (*allocated_bytes)(void* instance);
} ByocModelDesc;

const ByocModelDesc* byoc_model_desc(void);

/* ---- node observer: debug dumps and per-node profiles (docs/debugging.md) -------------------
 * Both executors report every step they run: the graph executor each "tvm_op" node (step = its index
 * among the op nodes, i.e. the order of graph.json), AOT through generated calls around each step.
 * enter comes right before the step's function is called, exit right after it returned 0, with the
 * step's outputs (valid only during the call: storage is reused by later steps). With no observer set
 * a step costs one pointer test. The observer is process-global (one per loaded runtime), for a
 * debugging session: set it between runs, never while another thread runs a model. */
typedef struct {
  void (*enter)(void* ctx, int32_t step, const char* name);
  void (*exit)(void* ctx, int32_t step, const char* name, int32_t num_outputs, const DLTensor* outputs);
  void* ctx;
} ByocNodeObserver;

/* NULL removes the observer; the struct must outlive its use. */
void byoc_set_node_observer(const ByocNodeObserver* observer);
extern const ByocNodeObserver* byoc_node_observer;

/* ---- DLTensor / dtype helpers ---------------------------------------------------------------- */
static inline DLDataType byoc_dtype(uint8_t code, uint8_t bits, uint16_t lanes) {
  DLDataType t;
  t.code = code;
  t.bits = bits;
  t.lanes = lanes;
  return t;
}
#define BYOC_DTYPE_FLOAT32 byoc_dtype(kDLFloat, 32, 1)
#define BYOC_DTYPE_INT32 byoc_dtype(kDLInt, 32, 1)
#define BYOC_DTYPE_INT64 byoc_dtype(kDLInt, 64, 1)

int byoc_dtype_equal(DLDataType a, DLDataType b);
/* Bytes per element (bits * lanes rounded up to bytes); 0 for bits == 0 or lanes == 0. */
size_t byoc_dtype_bytes(DLDataType t);
/* "float32", "int32", "uint8", "float32x4", "bool", or "dtype(code=9,bits=8,lanes=1)"; buf >= 32 bytes
 * is always enough. Returns buf. */
const char* byoc_dtype_str(DLDataType t, char* buf, size_t buf_len);
/* Parses the strings byoc_dtype_str writes for codes int/uint/float/bfloat/bool; 0 on success. */
int32_t byoc_dtype_parse(const char* s, size_t len, DLDataType* out);
/* "(2, 3)", "(3,)", "()" (truncated to buf_len). Returns buf. */
const char* byoc_shape_str(int32_t ndim, const int64_t* shape, char* buf, size_t buf_len);
/* Product of the shape (1 for ndim == 0); -1 on negative dim or int64 overflow. */
int64_t byoc_shape_numel(int32_t ndim, const int64_t* shape);
int64_t byoc_dltensor_numel(const DLTensor* t);
/* Checks t is non-NULL, has data, ndim/shape/dtype as expected and is compact row-major
 * (strides NULL or matching). what names it in the message ("fused_add argument 1").
 * 0 on success, -1 with last error set. */
int32_t byoc_check_dltensor(const DLTensor* t, const char* what, int32_t ndim, const int64_t* shape,
                            DLDataType dtype);
/* Checks num_args == expected and every type code is BYOC_ARG_DLTENSOR; func names the callee. */
int32_t byoc_check_packed_args(const char* func, const int32_t* type_codes, int32_t num_args,
                               int32_t expected);

#ifdef __cplusplus
}
#endif
#endif /* BYOC_RUNTIME_H_ */
