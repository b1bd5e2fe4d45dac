/* Fuzz target: the .npy header reader (byoc_compiler/runtime/src/npy.c), the parser the runner applies to
 * every input file. A header either parses into a consistent description or fails with a message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ByocNpyHeader h;
  int32_t d;
  byoc_clear_last_error();
  if (byoc_npy_parse_header(data, size, &h) != 0) {
    if (byoc_get_last_error()[0] == '\0') abort(); /* a failure always says why */
    return 0;
  }
  if (h.header_bytes > size || h.ndim < 0 || h.ndim > BYOC_NPY_MAX_NDIM) abort();
  if (byoc_dtype_bytes(h.dtype) == 0) abort();
  for (d = 0; d < h.ndim; ++d) {
    if (h.shape[d] < 0) abort();
  }
  return 0;
}

#include "byoc/fuzz_main.h"
