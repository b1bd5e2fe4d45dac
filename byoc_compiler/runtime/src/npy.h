/* .npy reading and writing (format versions 1.0, 2.0, 3.0; C order only), byte order handled both ways. */
#ifndef BYOC_NPY_H_
#define BYOC_NPY_H_

#include "byoc/runtime.h"

#define BYOC_NPY_MAX_NDIM 32
#define BYOC_NPY_MAX_HEADER 65536

typedef struct {
  DLDataType dtype;
  int big_endian; /* byte order of the file's data */
  int32_t ndim;
  int64_t shape[BYOC_NPY_MAX_NDIM];
  size_t header_bytes; /* offset of the data */
} ByocNpyHeader;

/* Parses the preamble + header dict in buf[0..len) (len may exceed the header). */
int32_t byoc_npy_parse_header(const unsigned char* buf, size_t len, ByocNpyHeader* out);
/* Reads path into data (nbytes), checking dtype and shape against expect and converting to host byte
 * order. what names the tensor in messages ("input 'x'"). 0 or -1 with last error set. */
int32_t byoc_npy_read(const char* path, const char* what, const ByocTensorInfo* expect, void* data, size_t nbytes);
/* Writes data (host byte order) as a v1.0 .npy with the host's byte order in descr. */
int32_t byoc_npy_write(const char* path, const ByocTensorInfo* info, const void* data, size_t nbytes);

#endif /* BYOC_NPY_H_ */
