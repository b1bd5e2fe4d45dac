/* byoc hosted runtime (the last error is the core's, core.c): function lookup, dtype and DLTensor checks. */
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* madvise under -std=c99 */
#endif
#include "byoc/runtime.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

/* The core (the last error) is part of this translation unit, so everything that links runtime.c -- the
 * hosted builds, the fuzzers, the examplejson/dnnl loaders -- gets it from this one file; the freestanding
 * profile compiles core.c alone (runtime/sources.py). One copy of the code, two ways to compile it. */
#include "core.c"

static const void* g_constants;
static size_t g_constants_size;

void byoc_set_constants(const void* data, size_t size) {
  g_constants = data;
  g_constants_size = data != NULL ? size : 0;
}

void byoc_get_constants(const void** data, size_t* size) {
  *data = g_constants;
  *size = g_constants_size;
}

void byoc_advise_huge_pages(void* base, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  /* madvise takes whole pages: the ones inside the buffer (the kernel puts huge pages where they fit) */
  const long page = sysconf(_SC_PAGESIZE);
  const uintptr_t start = (uintptr_t)base, end = start + bytes;
  uintptr_t first, last;
  if (base == NULL || page <= 0 || bytes < ((size_t)2 << 20) || end < start) return;
  first = (start + (uintptr_t)page - 1u) & ~((uintptr_t)page - 1u);
  last = end & ~((uintptr_t)page - 1u);
  if (last > first) (void)madvise((void*)first, (size_t)(last - first), MADV_HUGEPAGE);
#else
  (void)base;
  (void)bytes;
#endif
}

const ByocNodeObserver* byoc_node_observer = NULL;

void byoc_set_node_observer(const ByocNodeObserver* observer) { byoc_node_observer = observer; }

const ByocFuncEntry* byoc_lookup_function(const ByocFuncEntry* table, int32_t n, const char* name) {
  int32_t i;
  if (name == NULL) {
    byoc_set_last_error("byoc_lookup_function: name is NULL");
    return NULL;
  }
  for (i = 0; table != NULL && i < n; ++i) {
    if (table[i].name != NULL && strcmp(table[i].name, name) == 0) return &table[i];
  }
  byoc_set_last_error("function '%.200s' is not in the model's function table (%d entries)", name, (int)n);
  return NULL;
}

int byoc_dtype_equal(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

size_t byoc_dtype_bytes(DLDataType t) { return ((size_t)t.bits * (size_t)t.lanes + 7u) / 8u; }

static const char* dtype_kind(uint8_t code) {
  switch (code) {
    case kDLInt: return "int";
    case kDLUInt: return "uint";
    case kDLFloat: return "float";
    case kDLBfloat: return "bfloat";
    default: return NULL;
  }
}

const char* byoc_dtype_str(DLDataType t, char* buf, size_t buf_len) {
  const char* kind = dtype_kind(t.code);
  if (buf == NULL || buf_len == 0) return "";
  if (t.code == kDLUInt && t.bits == 1 && t.lanes == 1) {
    snprintf(buf, buf_len, "bool");
  } else if (kind == NULL) {
    snprintf(buf, buf_len, "dtype(code=%u,bits=%u,lanes=%u)", (unsigned)t.code, (unsigned)t.bits,
             (unsigned)t.lanes);
  } else if (t.lanes == 1) {
    snprintf(buf, buf_len, "%s%u", kind, (unsigned)t.bits);
  } else {
    snprintf(buf, buf_len, "%s%ux%u", kind, (unsigned)t.bits, (unsigned)t.lanes);
  }
  return buf;
}

/* Reads a decimal in [1, max] from s[*i..len); 0 on success. */
static int parse_small_uint(const char* s, size_t len, size_t* i, unsigned max, unsigned* out) {
  unsigned v = 0;
  size_t start = *i;
  while (*i < len && s[*i] >= '0' && s[*i] <= '9') {
    v = v * 10u + (unsigned)(s[*i] - '0');
    if (v > max) return -1;
    ++*i;
  }
  if (*i == start || v == 0 || (s[start] == '0')) return -1;
  *out = v;
  return 0;
}

int32_t byoc_dtype_parse(const char* s, size_t len, DLDataType* out) {
  static const struct { const char* prefix; uint8_t code; } kinds[] = {
      {"bfloat", kDLBfloat}, {"float", kDLFloat}, {"uint", kDLUInt}, {"int", kDLInt}};
  size_t k, i;
  unsigned bits, lanes = 1;
  if (s == NULL || out == NULL) return -1;
  if (len == 4 && memcmp(s, "bool", 4) == 0) {
    *out = byoc_dtype(kDLUInt, 1, 1);
    return 0;
  }
  for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); ++k) {
    size_t plen = strlen(kinds[k].prefix);
    if (len > plen && memcmp(s, kinds[k].prefix, plen) == 0) {
      i = plen;
      if (parse_small_uint(s, len, &i, 255u, &bits) != 0) return -1;
      if (i < len) {
        if (s[i] != 'x') return -1;
        ++i;
        if (parse_small_uint(s, len, &i, 65535u, &lanes) != 0) return -1;
      }
      if (i != len) return -1;
      *out = byoc_dtype(kinds[k].code, (uint8_t)bits, (uint16_t)lanes);
      return 0;
    }
  }
  return -1;
}

int64_t byoc_shape_numel(int32_t ndim, const int64_t* shape) {
  int64_t n = 1;
  int32_t i;
  if (ndim < 0 || (ndim > 0 && shape == NULL)) return -1;
  for (i = 0; i < ndim; ++i) {
    if (shape[i] < 0) return -1;
    if (shape[i] != 0 && n > INT64_MAX / shape[i]) return -1;
    n *= shape[i];
  }
  return n;
}

int64_t byoc_dltensor_numel(const DLTensor* t) {
  if (t == NULL) return -1;
  return byoc_shape_numel(t->ndim, t->shape);
}

const char* byoc_shape_str(int32_t ndim, const int64_t* shape, char* buf, size_t buf_len) {
  size_t used = 0;
  int32_t i;
  int n;
  if (buf == NULL || buf_len == 0) return "";
  buf[0] = '\0';
  if (ndim < 0 || ndim > 64 || (ndim > 0 && shape == NULL)) {
    snprintf(buf, buf_len, "<ndim %d>", (int)ndim);
    return buf;
  }
  /* Python tuple spelling, so messages match numpy's: (), (3,), (2, 3) */
  for (i = 0; i <= ndim && used < buf_len; ++i) {
    if (i == ndim) {
      n = snprintf(buf + used, buf_len - used, "%s)", ndim == 0 ? "(" : (ndim == 1 ? "," : ""));
    } else {
      n = snprintf(buf + used, buf_len - used, "%s%lld", i == 0 ? "(" : ", ", (long long)shape[i]);
    }
    if (n < 0) break;
    used += (size_t)n;
  }
  return buf;
}

int32_t byoc_check_dltensor(const DLTensor* t, const char* what, int32_t ndim, const int64_t* shape,
                            DLDataType dtype) {
  char want_s[160], got_s[160], want_t[40], got_t[40];
  int32_t i;
  int64_t stride = 1;
  if (what == NULL) what = "tensor";
  if (t == NULL) {
    byoc_set_last_error("%s: DLTensor pointer is NULL", what);
    return -1;
  }
  if (t->data == NULL) {
    byoc_set_last_error("%s: data pointer is NULL", what);
    return -1;
  }
  if (!byoc_dtype_equal(t->dtype, dtype)) {
    byoc_set_last_error("%s: expected dtype %s, got %s", what, byoc_dtype_str(dtype, want_t, sizeof(want_t)),
                        byoc_dtype_str(t->dtype, got_t, sizeof(got_t)));
    return -1;
  }
  if (t->ndim != ndim || (ndim > 0 && t->shape == NULL) ||
      (ndim > 0 && memcmp(t->shape, shape, (size_t)ndim * sizeof(int64_t)) != 0)) {
    byoc_set_last_error("%s: expected shape %s, got %s", what, byoc_shape_str(ndim, shape, want_s, sizeof(want_s)),
                        byoc_shape_str(t->ndim, t->shape, got_s, sizeof(got_s)));
    return -1;
  }
  if (t->strides != NULL) {
    for (i = ndim - 1; i >= 0; --i) {
      if (shape[i] != 1 && t->strides[i] != stride) {
        byoc_set_last_error("%s: only compact row-major tensors are supported (strides given)", what);
        return -1;
      }
      stride *= shape[i];
    }
  }
  return 0;
}

int32_t byoc_check_packed_args(const char* func, const int32_t* type_codes, int32_t num_args, int32_t expected) {
  int32_t i;
  if (func == NULL) func = "function";
  if (num_args != expected) {
    byoc_set_last_error("%s: expected %d arguments, got %d", func, (int)expected, (int)num_args);
    return -1;
  }
  for (i = 0; i < num_args; ++i) {
    if (type_codes == NULL || type_codes[i] != BYOC_ARG_DLTENSOR) {
      byoc_set_last_error("%s: argument %d must be a DLTensor (type code %d), got type code %d", func, (int)i,
                          (int)BYOC_ARG_DLTENSOR, type_codes == NULL ? -1 : (int)type_codes[i]);
      return -1;
    }
  }
  return 0;
}
