/* Bounds-checked params blob reader; converts little-endian data to the host's byte order. */
#include "params.h"

#include <stdlib.h>
#include <string.h>

#include "endian.h"

typedef struct {
  const unsigned char* p;
  size_t len, pos;
} Cursor;

static int need(Cursor* c, size_t n, const char* what, uint32_t index) {
  if (c->len - c->pos < n) {
    byoc_set_last_error("params blob: truncated while reading %s of tensor %u (offset %lu, need %lu bytes, %lu left)",
                        what, (unsigned)index, (unsigned long)c->pos, (unsigned long)n,
                        (unsigned long)(c->len - c->pos));
    return -1;
  }
  return 0;
}

void byoc_params_free(ByocParams* params) {
  uint32_t i;
  if (params == NULL) return;
  for (i = 0; i < params->count; ++i) {
    free(params->items[i].name);
    free(params->items[i].data);
  }
  free(params->items);
  params->items = NULL;
  params->count = 0;
}

static int32_t read_one(Cursor* c, uint32_t index, ByocParam* t) {
  uint32_t name_len, k;
  uint64_t nbytes;
  int64_t numel;
  size_t elem;
  char tname[40];
  if (need(c, 4, "the name length", index) != 0) return -1;
  name_len = byoc_read_le32(c->p + c->pos);
  c->pos += 4;
  if (name_len == 0 || name_len > BYOC_PARAMS_MAX_NAME) {
    byoc_set_last_error("params blob: tensor %u has name length %u (must be 1..%d)", (unsigned)index,
                        (unsigned)name_len, BYOC_PARAMS_MAX_NAME);
    return -1;
  }
  if (need(c, name_len, "the name", index) != 0) return -1;
  if (memchr(c->p + c->pos, '\0', name_len) != NULL) {
    byoc_set_last_error("params blob: name of tensor %u contains a NUL byte", (unsigned)index);
    return -1;
  }
  t->name = (char*)malloc((size_t)name_len + 1);
  if (t->name == NULL) {
    byoc_set_last_error("params blob: out of memory");
    return -1;
  }
  memcpy(t->name, c->p + c->pos, name_len);
  t->name[name_len] = '\0';
  c->pos += name_len;
  if (need(c, 8, "the dtype and ndim", index) != 0) return -1;
  t->dtype = byoc_dtype(c->p[c->pos], c->p[c->pos + 1], byoc_read_le16(c->p + c->pos + 2));
  t->ndim = (int32_t)byoc_read_le32(c->p + c->pos + 4);
  if (byoc_read_le32(c->p + c->pos + 4) > BYOC_PARAMS_MAX_NDIM) {
    byoc_set_last_error("params blob: tensor '%s' has ndim %u (at most %d)", t->name,
                        (unsigned)byoc_read_le32(c->p + c->pos + 4), BYOC_PARAMS_MAX_NDIM);
    return -1;
  }
  c->pos += 8;
  if (t->dtype.code > kDLBfloat || t->dtype.lanes == 0 ||
      !(t->dtype.bits == 8 || t->dtype.bits == 16 || t->dtype.bits == 32 || t->dtype.bits == 64 ||
        (t->dtype.bits == 1 && t->dtype.code == kDLUInt && t->dtype.lanes == 1))) {
    byoc_set_last_error("params blob: tensor '%s' has unsupported dtype %s", t->name,
                        byoc_dtype_str(t->dtype, tname, sizeof(tname)));
    return -1;
  }
  if (need(c, (size_t)t->ndim * 8u, "the shape", index) != 0) return -1;
  for (k = 0; k < (uint32_t)t->ndim; ++k) {
    t->shape[k] = (int64_t)byoc_read_le64(c->p + c->pos);
    c->pos += 8;
  }
  numel = byoc_shape_numel(t->ndim, t->shape);
  if (numel < 0) {
    byoc_set_last_error("params blob: tensor '%s' has a negative or overflowing shape", t->name);
    return -1;
  }
  if (need(c, 8, "the byte count", index) != 0) return -1;
  nbytes = byoc_read_le64(c->p + c->pos);
  c->pos += 8;
  elem = t->dtype.bits == 1 ? 1u : byoc_dtype_bytes(t->dtype);
  if ((uint64_t)numel > UINT64_MAX / elem || nbytes != (uint64_t)numel * elem) {
    byoc_set_last_error("params blob: tensor '%s' says %llu data bytes but its shape and dtype need %llu",
                        t->name, (unsigned long long)nbytes,
                        (unsigned long long)((uint64_t)numel * (uint64_t)elem));
    return -1;
  }
  if (nbytes > (uint64_t)(c->len - c->pos)) {
    byoc_set_last_error("params blob: truncated in the data of tensor '%s' (%llu bytes, %lu left)", t->name,
                        (unsigned long long)nbytes, (unsigned long)(c->len - c->pos));
    return -1;
  }
  t->nbytes = nbytes;
  t->data = malloc(nbytes ? (size_t)nbytes : 1u);
  if (t->data == NULL) {
    byoc_set_last_error("params blob: out of memory for tensor '%s'", t->name);
    return -1;
  }
  if (nbytes) memcpy(t->data, c->p + c->pos, (size_t)nbytes);
  c->pos += (size_t)nbytes;
  if (byoc_host_is_big_endian()) {
    byoc_swap_elements(t->data, (size_t)numel * t->dtype.lanes, t->dtype.bits == 1 ? 1u : t->dtype.bits / 8u);
  }
  return 0;
}

int32_t byoc_params_load(const unsigned char* blob, size_t len, ByocParams* out) {
  Cursor c;
  uint32_t count, i;
  memset(out, 0, sizeof(*out));
  if (blob == NULL && len != 0) {
    byoc_set_last_error("params blob: NULL data with length %lu", (unsigned long)len);
    return -1;
  }
  c.p = blob;
  c.len = len;
  c.pos = 0;
  if (len < 12 || memcmp(blob, BYOC_PARAMS_MAGIC, 8) != 0) {
    byoc_set_last_error("params blob: bad magic (expected \"%s\" followed by a u32 count, %lu bytes given)",
                        BYOC_PARAMS_MAGIC, (unsigned long)len);
    return -1;
  }
  count = byoc_read_le32(blob + 8);
  c.pos = 12;
  /* each tensor takes at least 4 + 1 + 8 + 8 bytes: reject counts the blob cannot hold before allocating */
  if ((uint64_t)count * 21u > (uint64_t)(len - 12)) {
    byoc_set_last_error("params blob: says %u tensors but has only %lu bytes after the header", (unsigned)count,
                        (unsigned long)(len - 12));
    return -1;
  }
  out->items = (ByocParam*)calloc(count ? count : 1u, sizeof(ByocParam));
  if (out->items == NULL) {
    byoc_set_last_error("params blob: out of memory");
    return -1;
  }
  for (i = 0; i < count; ++i) {
    out->count = i + 1; /* so byoc_params_free releases a partially read tensor */
    if (read_one(&c, i, &out->items[i]) != 0) {
      byoc_params_free(out);
      return -1;
    }
  }
  if (c.pos != c.len) {
    byoc_set_last_error("params blob: %lu unexpected trailing bytes after %u tensors",
                        (unsigned long)(c.len - c.pos), (unsigned)count);
    byoc_params_free(out);
    return -1;
  }
  return 0;
}
