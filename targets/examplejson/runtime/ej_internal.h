/* ExampleJSON runtime internals shared by the parser, the op table and the kernels. */
#ifndef BYOC_EJ_INTERNAL_H_
#define BYOC_EJ_INTERNAL_H_

#include <stddef.h>
#include <stdint.h>

#include "examplejson.h"

#define EJ_MAX_NDIM 8         /* tensor rank limit of the format */
#define EJ_MAX_DIM 2147483647 /* each dim in [1, 2^31) */
#define EJ_MAX_OP_INPUTS 3
#define EJ_MAX_NAME 255       /* subgraph symbol length */
/* Total bytes of tensors one module may allocate; the fuzz harness builds with a smaller value. */
#ifndef EJ_MAX_BYTES
#define EJ_MAX_BYTES ((uint64_t)1 << 31)
#endif

typedef struct {
  int32_t ndim;
  int64_t shape[EJ_MAX_NDIM];
  DLDataType dtype;
  int64_t numel;
  float* data;        /* arena (op results, constants) or the caller's input while a call runs */
  int32_t id;         /* the id in the text */
  int32_t line;       /* where it is defined */
  uint8_t is_input;
  uint8_t is_const;
  size_t data_off;    /* const: base64 text offset; later arena offset */
  size_t data_len;
} EjTensor;

/* Attributes of every op in one normalized struct; each op reads the fields it declares. */
typedef struct {
  int64_t strides[2];
  int64_t padding[4];    /* top, left, bottom, right */
  int64_t dilation[2];
  int64_t pool_size[2];
  int64_t groups;
  int64_t axis;
  int64_t ceil_mode;
  int64_t count_include_pad;
  double a_min, a_max, alpha;
} EjAttrs;

struct EjOpDef;

typedef struct {
  const struct EjOpDef* op;
  int32_t out;                        /* tensor index */
  int32_t num_inputs;
  int32_t in[EJ_MAX_OP_INPUTS];       /* tensor indices */
  EjAttrs attrs;
  int32_t line, column;
} EjNode;

/* Shape rule: the output shape of `node` from its input tensors; the declared shape is given for ops
 * whose result shape is an argument (reshape). 0 on success, else -1 with `why` filled. */
typedef int32_t (*EjInferFn)(const EjNode* node, const EjTensor* const* ins, const EjTensor* declared,
                             int32_t* ndim, int64_t* shape, char* why, size_t why_len);
typedef void (*EjKernelFn)(const EjNode* node, const EjTensor* const* ins, EjTensor* out);
typedef double (*EjWorkFn)(const EjNode* node, const EjTensor* const* ins, const EjTensor* out);

enum {
  EJ_ATTR_STRIDES = 1u << 0,
  EJ_ATTR_PADDING = 1u << 1,
  EJ_ATTR_DILATION = 1u << 2,
  EJ_ATTR_POOL_SIZE = 1u << 3,
  EJ_ATTR_GROUPS = 1u << 4,
  EJ_ATTR_AXIS = 1u << 5,
  EJ_ATTR_CEIL_MODE = 1u << 6,
  EJ_ATTR_COUNT_INCLUDE_PAD = 1u << 7,
  EJ_ATTR_A_MIN = 1u << 8,
  EJ_ATTR_A_MAX = 1u << 9,
  EJ_ATTR_ALPHA = 1u << 10
};

typedef struct EjOpDef {
  const char* name;        /* Relay's name */
  int32_t num_inputs;
  uint32_t attrs;          /* EJ_ATTR_* it accepts */
  uint32_t required;       /* EJ_ATTR_* it needs */
  EjInferFn infer;
  EjKernelFn kernel;
  EjWorkFn work;
  int32_t code;            /* kernel selector shared by ops with one kernel (elementwise) */
} EjOpDef;

/* An attribute the text may carry: its keyword ("strides:"), value count range and where it lands. */
typedef struct {
  const char* name;        /* without the colon */
  uint32_t bit;
  int32_t min_count, max_count;
  int32_t is_float;
  size_t offset;           /* into EjAttrs */
} EjAttrSpec;

/* ---- op table (ej_ops.c) ---- */
const EjOpDef* ej_find_op(const char* name, size_t len);  /* Relay names and the guide's aliases */
const EjAttrSpec* ej_find_attr(const char* name, size_t len);
extern const EjAttrSpec ej_attr_specs[];
extern const int32_t ej_num_attr_specs;
void ej_default_attrs(EjAttrs* attrs);
/* Fills attribute defaults that depend on the count given (padding of 1 or 2 values, pairs of 1). */
void ej_normalize_attr(const EjAttrSpec* spec, EjAttrs* attrs, int32_t count);

/* ---- kernels (ej_kernels.c) ---- */
enum {
  EJ_K_ADD, EJ_K_SUB, EJ_K_MUL, EJ_K_DIV, EJ_K_MAX, EJ_K_MIN,
  EJ_K_NEG, EJ_K_ABS, EJ_K_EXP, EJ_K_LOG, EJ_K_SQRT, EJ_K_TANH, EJ_K_SIGMOID, EJ_K_RELU, EJ_K_CLIP,
  EJ_K_LEAKY_RELU
};
void ej_kernel_binary(const EjNode* node, const EjTensor* const* ins, EjTensor* out);
void ej_kernel_unary(const EjNode* node, const EjTensor* const* ins, EjTensor* out);
void ej_kernel_dense(const EjNode* node, const EjTensor* const* ins, EjTensor* out);
void ej_kernel_bias_add(const EjNode* node, const EjTensor* const* ins, EjTensor* out);
void ej_kernel_conv2d(const EjNode* node, const EjTensor* const* ins, EjTensor* out);
void ej_kernel_max_pool2d(const EjNode* node, const EjTensor* const* ins, EjTensor* out);
void ej_kernel_avg_pool2d(const EjNode* node, const EjTensor* const* ins, EjTensor* out);
void ej_kernel_global_avg_pool2d(const EjNode* node, const EjTensor* const* ins, EjTensor* out);
void ej_kernel_copy(const EjNode* node, const EjTensor* const* ins, EjTensor* out);
void ej_kernel_softmax(const EjNode* node, const EjTensor* const* ins, EjTensor* out);

/* Output size of a pooling window along one axis (floor or ceil mode; ceil drops a window that
 * would start in the trailing padding). Shared by the shape rule and the kernels. */
int64_t ej_pool_out_size(int64_t size, int64_t pad_before, int64_t pad_after, int64_t kernel, int64_t stride,
                         int64_t dilation, int64_t ceil_mode);

/* ---- module ---- */
typedef struct {
  char* name;
  int32_t num_inputs, num_outputs;
  int32_t* inputs;          /* tensor indices, declaration order */
  int32_t* outputs;         /* tensor indices */
  EjNode* nodes;
  int32_t num_nodes;
  EjTensor* tensors;        /* the module's tensor array (shared by subgraphs) */
  double work;
} EjSubgraph;

typedef struct {
  char* text;
  size_t text_len;
  EjSubgraph* subgraphs;
  int32_t num_subgraphs;
  EjTensor* tensors;
  int32_t num_tensors;
  EjNode* nodes;
  int32_t num_nodes;
  int32_t* id_lists;        /* inputs and outputs lists of every subgraph */
  char* names;              /* subgraph names, NUL-separated */
  void* arena_raw;          /* malloc'ed block; tensors point into it 64-byte aligned */
  uint64_t arena_bytes;
  double work;
} EjModule;

/* ej_parse.c: builds a complete module (tensors allocated, constants decoded) or fails with a
 * located message. */
int32_t ej_parse_module(const char* text, size_t len, EjModule** out);
void ej_free_module(EjModule* m);

#endif /* BYOC_EJ_INTERNAL_H_ */
