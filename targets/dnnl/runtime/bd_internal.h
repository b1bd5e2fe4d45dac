/* Internal structures of the dnnl runtime module (not part of its ABI). */
#ifndef BYOC_DNNL_INTERNAL_H_
#define BYOC_DNNL_INTERNAL_H_

#include <dnnl.h>

#include "byoc_dnnl.h"

#define BD_MAX_NDIM 5
#define BD_MAX_INPUTS 64            /* concatenate's operands; every other op has at most 5 */
#define BD_MAX_NODES 100000
#define BD_MAX_NAME 256
#define BD_MAX_NUMEL ((int64_t)1 << 31) /* elements of one tensor */
#define BD_MAX_ARGS (BD_MAX_INPUTS + 2) /* arguments of one primitive execution (concat: srcs, dst, scratchpad) */

typedef enum { BD_INPUT, BD_CONST, BD_KERNEL } BdKind;

typedef enum {
  BD_CONV2D, BD_DENSE, BD_MATMUL, BD_RELU, BD_CLIP, BD_SIGMOID, BD_TANH, BD_LEAKY_RELU, BD_EXP, BD_SQRT,
  BD_ADD, BD_MULTIPLY, BD_BATCH_NORM, BD_MAX_POOL, BD_AVG_POOL, BD_GLOBAL_AVG_POOL, BD_CONCAT, BD_SOFTMAX,
  BD_LRN, BD_RESHAPE, BD_BATCH_FLATTEN, BD_CHANNEL_SHUFFLE, BD_NUM_OPS
} BdOp;

typedef struct {
  int64_t strides[2], padding[4], dilation[2], pool_size[2], groups, axis, size;
  int ceil_mode, count_include_pad, nhwc, bias, post_sum, post_relu, post_clip, transpose_a, transpose_b, center, scale;
  double a_min, a_max, alpha, beta, k, epsilon, clip_lo, clip_hi;
} BdAttrs;

typedef struct {
  BdKind kind;
  BdOp op;                  /* kernels */
  char name[BD_MAX_NAME];   /* input/const: its name; kernel: the op name */
  int32_t ndim;
  int64_t shape[DNNL_MAX_NDIMS]; /* dims past ndim are 1 up to BD_MAX_NDIM, then 0: a dnnl_dims_t */
  int64_t numel;
  int32_t num_inputs;
  int32_t inputs[BD_MAX_INPUTS];
  BdAttrs a;
  const void* data;         /* const: bound by name */
  /* built: the value in the layout its producer chose */
  dnnl_memory_desc_t md;
  dnnl_memory_t mem;
  int plain;                /* md is the row-major layout of `shape` */
} BdNode;

typedef struct BdStep BdStep;
/* A step the runtime runs itself: reads its memory objects' handles at run time (placed or aliased). */
typedef int32_t (*BdKernel)(const BdStep* step);

struct BdStep {
  dnnl_primitive_t prim; /* NULL: kernel runs the step */
  BdKernel kernel;
  void* params;          /* the kernel's, owned by the step */
  int32_t nargs;
  dnnl_exec_arg_t args[BD_MAX_ARGS];
};

/* An activation buffer of the arena (bd_plan.c): its bytes, its steps, where the plan put it. */
typedef struct {
  size_t bytes, offset;
  int32_t first, last; /* the first and last step naming one of its memory objects; -1: none does */
} BdBuffer;

/* A memory object created without storage, placed over an activation buffer once the plan is made. */
typedef struct {
  dnnl_memory_t mem;
  int32_t buffer;
  size_t at; /* bytes into the buffer where the memory object's data starts (a slice of a value) */
} BdPlaced;

/* A view of a region input (another shape or tag over the caller's bytes): its handle follows the input's. */
typedef struct {
  dnnl_memory_t view, input;
  size_t at; /* bytes into the input */
} BdAlias;

typedef struct {
  char symbol[BD_MAX_NAME];
  int32_t num_nodes;
  BdNode* nodes;
  int32_t num_inputs, num_outputs;
  int32_t* input_nodes;     /* node id of each region input, in order */
  int32_t* heads;           /* node id of each output */
  int32_t num_consts, num_bound;
  char* text;               /* the JSON, kept for messages */
  size_t text_len;
  /* built by get_function */
  int built;
  dnnl_engine_t engine;
  dnnl_stream_t stream;
  BdStep* steps;
  int32_t num_steps, cap_steps;
  dnnl_memory_t* owned;     /* every memory object to destroy */
  int32_t num_owned, cap_owned;
  dnnl_memory_t* out_mems;  /* user memory of each output (handle set per call) */
  BdAlias* aliases;
  int32_t num_aliases, cap_aliases;
  /* activations (bd_plan.c): buffers, the memory objects over them, the one arena holding them */
  BdBuffer* buffers;
  int32_t num_buffers, cap_buffers;
  BdPlaced* placed;
  int32_t num_placed, cap_placed;
  int32_t scratch_buffer;   /* the buffer every primitive's scratchpad is over (they run one at a time); -1: none */
  void* arena;
  size_t arena_bytes;
  int32_t* last_use;        /* while building: the last kernel reading each node */
} BdModule;

int32_t bd_parse(const char* text, size_t len, BdModule* m);
int32_t bd_build(BdModule* m);
void bd_free(BdModule* m);
const char* bd_op_name(BdOp op);
/* bd_build.c */
int32_t bd_new_memory(BdModule* m, const dnnl_memory_desc_t* md, void* handle, dnnl_memory_t* out, int32_t node);
/* a step run by `kernel` over args (params: malloc'd, freed with the module, and on failure here) */
int32_t bd_kernel_step(BdModule* m, BdKernel kernel, void* params, int32_t nargs, const dnnl_exec_arg_t* args,
                       int32_t node);
/* a step setting mem's bytes (its layout's padding included) to zero */
int32_t bd_zero_step(BdModule* m, int32_t node, dnnl_memory_t mem);
/* bd_pool.c: pooling over a channel-blocked value (a batch of channel blocks of `block` lanes), run by the
 * runtime. bd_pool_shape: whether it takes pd (its src and dst in one blocked layout), and its geometry. */
typedef struct {
  int64_t images, blocks, block, ih, iw, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
  int max, include_pad;
} BdPoolShape;
int bd_pool_shape(dnnl_primitive_desc_t pd, int max, int include_pad, const dnnl_dims_t strides,
                  const dnnl_dims_t kernel, const dnnl_dims_t dil, const dnnl_dims_t pl, BdPoolShape* out);
int32_t bd_pool_step(BdModule* m, int32_t id, const BdPoolShape* shape, dnnl_memory_t src, dnnl_memory_t dst);
/* The pooling itself, on this thread: src and dst in shape's blocked layout (also what tests call). */
void bd_pool_compute(const BdPoolShape* shape, const float* src, float* dst);
/* bd_plan.c: memory objects without storage until bd_plan gives every buffer its place in the arena */
int32_t bd_activation(BdModule* m, const dnnl_memory_desc_t* md, dnnl_memory_t* out, int32_t node);
int32_t bd_view(BdModule* m, dnnl_memory_t base, const dnnl_memory_desc_t* md, dnnl_memory_t* out, int32_t node);
/* bd_view of the bytes `at` past base's start (oneDNN's primitives read a memory desc's offset0 from their own
 * desc, not the memory object's, so a slice is a view at another address) */
int32_t bd_view_at(BdModule* m, dnnl_memory_t base, size_t at, const dnnl_memory_desc_t* md, dnnl_memory_t* out,
                   int32_t node);
int32_t bd_scratchpad(BdModule* m, const dnnl_memory_desc_t* md, dnnl_memory_t* out, int32_t node);
int32_t bd_buffer_of(const BdModule* m, dnnl_memory_t mem);
int32_t bd_plan(BdModule* m);
int32_t bd_fail(const BdModule* m, int32_t node, const char* fmt, ...) BYOC_PRINTF_LIKE(3, 4);

#endif /* BYOC_DNNL_INTERNAL_H_ */
