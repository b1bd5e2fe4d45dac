/* Reader of the params blob (docs/runtime-abi.md, "Params blob"). Internal to the byoc runtime. */
#ifndef BYOC_PARAMS_H_
#define BYOC_PARAMS_H_

#include "byoc/runtime.h"

#define BYOC_PARAMS_MAGIC "BYOCPRM1"
#define BYOC_PARAMS_MAX_NDIM 32
#define BYOC_PARAMS_MAX_NAME 4096

typedef struct {
  char* name;
  DLDataType dtype;
  int32_t ndim;
  int64_t shape[BYOC_PARAMS_MAX_NDIM];
  uint64_t nbytes;
  void* data; /* host byte order, malloc'ed */
} ByocParam;

typedef struct {
  ByocParam* items;
  uint32_t count;
} ByocParams;

/* Parses and copies every tensor (the graph executor rejects duplicate names); -1 with last error "params blob: ..." on any inconsistency. */
int32_t byoc_params_load(const unsigned char* blob, size_t len, ByocParams* out);
void byoc_params_free(ByocParams* params);

#endif /* BYOC_PARAMS_H_ */
