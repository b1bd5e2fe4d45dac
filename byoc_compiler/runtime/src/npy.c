/* Strict .npy reader/writer for the standalone runner. */
#include "npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endian.h"

static const unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

typedef struct {
  const char* s;
  size_t len, pos;
} Lex;

static void skip_spaces(Lex* x) {
  while (x->pos < x->len && (x->s[x->pos] == ' ' || x->s[x->pos] == '\t')) ++x->pos;
}

static int lex_char(Lex* x, char c) {
  skip_spaces(x);
  if (x->pos < x->len && x->s[x->pos] == c) {
    ++x->pos;
    return 1;
  }
  return 0;
}

/* Python string literal in ' or " without escapes; returns start/len */
static int lex_string(Lex* x, const char** out, size_t* out_len) {
  char q;
  size_t start;
  skip_spaces(x);
  if (x->pos >= x->len || (x->s[x->pos] != '\'' && x->s[x->pos] != '"')) return -1;
  q = x->s[x->pos++];
  start = x->pos;
  while (x->pos < x->len && x->s[x->pos] != q) {
    if (x->s[x->pos] == '\\' || x->s[x->pos] == '\n') return -1;
    ++x->pos;
  }
  if (x->pos >= x->len) return -1;
  *out = x->s + start;
  *out_len = x->pos - start;
  ++x->pos;
  return 0;
}

static int lex_word(Lex* x, const char* w) {
  size_t n = strlen(w);
  skip_spaces(x);
  if (x->len - x->pos >= n && memcmp(x->s + x->pos, w, n) == 0) {
    x->pos += n;
    return 1;
  }
  return 0;
}

static int parse_descr(const char* s, size_t n, ByocNpyHeader* h) {
  char order, kind;
  unsigned size = 0;
  size_t i;
  if (n < 3 || n > 4) return -1;
  order = s[0];
  kind = s[1];
  for (i = 2; i < n; ++i) {
    if (s[i] < '0' || s[i] > '9') return -1;
    size = size * 10u + (unsigned)(s[i] - '0');
  }
  if (!(size == 1 || size == 2 || size == 4 || size == 8)) return -1;
  if (order == '|') {
    if (size != 1) return -1;
  } else if (order == '<' || order == '>') {
    if (size == 1) order = '|';
  } else if (order == '=') {
    order = byoc_host_is_big_endian() ? '>' : '<';
  } else {
    return -1;
  }
  h->big_endian = order == '>';
  switch (kind) {
    case 'f':
      if (size == 1) return -1;
      h->dtype = byoc_dtype(kDLFloat, (uint8_t)(size * 8), 1);
      return 0;
    case 'i': h->dtype = byoc_dtype(kDLInt, (uint8_t)(size * 8), 1); return 0;
    case 'u': h->dtype = byoc_dtype(kDLUInt, (uint8_t)(size * 8), 1); return 0;
    case 'b':
      if (size != 1) return -1;
      h->dtype = byoc_dtype(kDLUInt, 1, 1);
      return 0;
    default: return -1;
  }
}

static int parse_shape(Lex* x, ByocNpyHeader* h) {
  if (!lex_char(x, '(')) return -1;
  h->ndim = 0;
  for (;;) {
    int64_t v = 0;
    size_t start;
    skip_spaces(x);
    if (lex_char(x, ')')) return 0;
    if (h->ndim >= BYOC_NPY_MAX_NDIM) return -1;
    start = x->pos;
    while (x->pos < x->len && x->s[x->pos] >= '0' && x->s[x->pos] <= '9') {
      if (v > (INT64_MAX - 9) / 10) return -1;
      v = v * 10 + (x->s[x->pos] - '0');
      ++x->pos;
    }
    if (x->pos == start) return -1;
    skip_spaces(x);
    if (x->pos < x->len && x->s[x->pos] == 'L') ++x->pos; /* Python 2 longs */
    h->shape[h->ndim++] = v;
    if (lex_char(x, ',')) continue;
    if (lex_char(x, ')')) return h->ndim == 1 ? -1 : 0; /* "(3)" is not a tuple */
    return -1;
  }
}

int32_t byoc_npy_parse_header(const unsigned char* buf, size_t len, ByocNpyHeader* h) {
  size_t hlen, pre;
  Lex x;
  int have_descr = 0, have_order = 0, have_shape = 0;
  memset(h, 0, sizeof(*h));
  if (len < 10 || memcmp(buf, kMagic, 6) != 0) {
    byoc_set_last_error("not a .npy file (bad magic)");
    return -1;
  }
  if (buf[6] == 1) {
    pre = 10;
    hlen = byoc_read_le16(buf + 8);
  } else if (buf[6] == 2 || buf[6] == 3) {
    pre = 12;
    if (len < 12) {
      byoc_set_last_error(".npy header truncated");
      return -1;
    }
    hlen = byoc_read_le32(buf + 8);
  } else {
    byoc_set_last_error("unsupported .npy format version %u.%u (1.0, 2.0 and 3.0 are read)", (unsigned)buf[6],
                        (unsigned)buf[7]);
    return -1;
  }
  if (hlen > BYOC_NPY_MAX_HEADER || len - pre < hlen) {
    byoc_set_last_error(".npy header truncated or too long (%lu bytes)", (unsigned long)hlen);
    return -1;
  }
  x.s = (const char*)buf + pre;
  x.len = hlen;
  x.pos = 0;
  if (!lex_char(&x, '{')) goto bad;
  for (;;) {
    const char* key;
    size_t klen;
    if (lex_char(&x, '}')) break;
    if (lex_string(&x, &key, &klen) != 0 || !lex_char(&x, ':')) goto bad;
    if (klen == 5 && memcmp(key, "descr", 5) == 0 && !have_descr) {
      const char* d;
      size_t dn;
      if (lex_string(&x, &d, &dn) != 0) goto bad;
      if (parse_descr(d, dn, h) != 0) {
        byoc_set_last_error("unsupported .npy dtype '%.*s' (float16/32/64, int8..64, uint8..64, bool are read)",
                            (int)(dn > 16 ? 16 : dn), d);
        return -1;
      }
      have_descr = 1;
    } else if (klen == 13 && memcmp(key, "fortran_order", 13) == 0 && !have_order) {
      if (lex_word(&x, "True")) {
        byoc_set_last_error(".npy file is in Fortran order; save it C-contiguous (np.ascontiguousarray)");
        return -1;
      }
      if (!lex_word(&x, "False")) goto bad;
      have_order = 1;
    } else if (klen == 5 && memcmp(key, "shape", 5) == 0 && !have_shape) {
      if (parse_shape(&x, h) != 0) goto bad;
      have_shape = 1;
    } else {
      goto bad;
    }
    if (lex_char(&x, '}')) break;
    if (!lex_char(&x, ',')) goto bad;
  }
  if (!have_descr || !have_order || !have_shape) goto bad;
  while (x.pos < x.len && (x.s[x.pos] == ' ' || x.s[x.pos] == '\n' || x.s[x.pos] == '\0')) ++x.pos;
  if (x.pos != x.len) goto bad;
  h->header_bytes = pre + hlen;
  return 0;
bad:
  byoc_set_last_error("malformed .npy header (expected {'descr': ..., 'fortran_order': False, 'shape': (...)})");
  return -1;
}

int32_t byoc_npy_read(const char* path, const char* what, const ByocTensorInfo* expect, void* data, size_t nbytes) {
  unsigned char* head = NULL;
  size_t got;
  ByocNpyHeader h;
  FILE* f = fopen(path, "rb");
  char a[40], b[40], sa[200], sb[200];
  int32_t rc = -1;
  if (f == NULL) {
    byoc_set_last_error("%s: cannot open '%s'", what, path);
    return -1;
  }
  head = (unsigned char*)malloc(12 + BYOC_NPY_MAX_HEADER);
  if (head == NULL) {
    byoc_set_last_error("%s: out of memory", what);
    goto done;
  }
  got = fread(head, 1, 12 + BYOC_NPY_MAX_HEADER, f);
  if (byoc_npy_parse_header(head, got, &h) != 0) {
    char why[BYOC_LAST_ERROR_SIZE];
    memcpy(why, byoc_get_last_error(), sizeof(why));
    why[sizeof(why) - 1] = '\0';
    byoc_set_last_error("%s: '%s': %s", what, path, why);
    goto done;
  }
  if (!byoc_dtype_equal(h.dtype, expect->dtype)) {
    byoc_set_last_error("%s: '%s' has dtype %s, expected %s", what, path, byoc_dtype_str(h.dtype, a, sizeof(a)),
                        byoc_dtype_str(expect->dtype, b, sizeof(b)));
    goto done;
  }
  if (h.ndim != expect->ndim ||
      (h.ndim > 0 && memcmp(h.shape, expect->shape, (size_t)h.ndim * sizeof(int64_t)) != 0)) {
    byoc_set_last_error("%s: '%s' has shape %s, expected %s", what, path,
                        byoc_shape_str(h.ndim, h.shape, sa, sizeof(sa)),
                        byoc_shape_str(expect->ndim, expect->shape, sb, sizeof(sb)));
    goto done;
  }
  if (fseek(f, (long)h.header_bytes, SEEK_SET) != 0) {
    byoc_set_last_error("%s: '%s': cannot seek to the data", what, path);
    goto done;
  }
  got = nbytes ? fread(data, 1, nbytes, f) : 0;
  if (got != nbytes) {
    byoc_set_last_error("%s: '%s' is truncated (%lu of %lu data bytes)", what, path, (unsigned long)got,
                        (unsigned long)nbytes);
    goto done;
  }
  if (fgetc(f) != EOF) {
    byoc_set_last_error("%s: '%s' has trailing bytes after its %lu data bytes", what, path, (unsigned long)nbytes);
    goto done;
  }
  if (h.big_endian != byoc_host_is_big_endian()) {
    size_t elem = byoc_dtype_bytes(h.dtype);
    byoc_swap_elements(data, elem ? nbytes / elem : 0, elem);
  }
  rc = 0;
done:
  free(head);
  fclose(f);
  return rc;
}

static char descr_kind(uint8_t code) {
  switch (code) {
    case kDLFloat: return 'f';
    case kDLInt: return 'i';
    case kDLUInt: return 'u';
    default: return '\0';
  }
}

int32_t byoc_npy_write(const char* path, const ByocTensorInfo* info, const void* data, size_t nbytes) {
  char header[BYOC_NPY_MAX_HEADER / 64 * 64];
  char descr[8], shape[BYOC_NPY_MAX_NDIM * 24 + 4];
  unsigned char pre[10];
  int n;
  size_t hlen, total;
  FILE* f;
  size_t elem = byoc_dtype_bytes(info->dtype);
  if (info->dtype.code == kDLUInt && info->dtype.bits == 1) {
    snprintf(descr, sizeof(descr), "|b1");
  } else if (descr_kind(info->dtype.code) == '\0' || info->dtype.lanes != 1 || info->dtype.bits % 8 != 0) {
    char t[40];
    byoc_set_last_error("cannot write dtype %s to .npy", byoc_dtype_str(info->dtype, t, sizeof(t)));
    return -1;
  } else {
    snprintf(descr, sizeof(descr), "%c%c%u", elem == 1 ? '|' : (byoc_host_is_big_endian() ? '>' : '<'),
             descr_kind(info->dtype.code), (unsigned)elem);
  }
  byoc_shape_str(info->ndim, info->shape, shape, sizeof(shape));
  n = snprintf(header, sizeof(header), "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
  if (n < 0 || (size_t)n + 64 >= sizeof(header)) {
    byoc_set_last_error("'%s': .npy header too long", path);
    return -1;
  }
  /* pad with spaces so the data starts on a 64-byte boundary; the header ends in '\n' */
  hlen = (size_t)n;
  total = (10 + hlen + 1 + 63) / 64 * 64;
  while (10 + hlen + 1 < total) header[hlen++] = ' ';
  header[hlen++] = '\n';
  memcpy(pre, kMagic, 6);
  pre[6] = 1;
  pre[7] = 0;
  pre[8] = (unsigned char)(hlen & 0xFF);
  pre[9] = (unsigned char)(hlen >> 8);
  f = fopen(path, "wb");
  if (f == NULL) {
    byoc_set_last_error("cannot create '%s'", path);
    return -1;
  }
  if (fwrite(pre, 1, 10, f) != 10 || fwrite(header, 1, hlen, f) != hlen ||
      (nbytes && fwrite(data, 1, nbytes, f) != nbytes)) {
    fclose(f);
    byoc_set_last_error("cannot write '%s'", path);
    return -1;
  }
  if (fclose(f) != 0) {
    byoc_set_last_error("cannot write '%s'", path);
    return -1;
  }
  return 0;
}
