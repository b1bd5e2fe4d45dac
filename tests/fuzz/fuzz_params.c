/* Fuzz target: the params blob reader (byoc_compiler/runtime/src/params.c). Any byte string must either
 * load (every tensor's bytes readable) or fail with a "params blob: " message; ASan/UBSan catch the rest. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "params.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ByocParams params;
  uint32_t i;
  memset(&params, 0, sizeof(params));
  if (byoc_params_load(data, size, &params) != 0) {
    if (strncmp(byoc_get_last_error(), "params blob: ", 13) != 0) abort(); /* every error is located */
    if (params.items != NULL || params.count != 0) abort();                /* nothing is half-loaded */
    return 0;
  }
  for (i = 0; i < params.count; ++i) {
    const ByocParam* p = &params.items[i];
    volatile unsigned char sink = 0;
    uint64_t k;
    if (p->name == NULL || (p->nbytes != 0 && p->data == NULL)) abort();
    /* the recorded size must match dtype x shape, and every byte must be addressable */
    if ((uint64_t)byoc_shape_numel(p->ndim, p->shape) * byoc_dtype_bytes(p->dtype) != p->nbytes) abort();
    for (k = 0; k < p->nbytes; ++k) sink ^= ((const unsigned char*)p->data)[k];
    (void)sink;
  }
  byoc_params_free(&params);
  return 0;
}

#include "byoc/fuzz_main.h"
