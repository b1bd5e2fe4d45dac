/* ExampleJSON parser: text -> validated module with every tensor allocated (FORMAT.md has the grammar).
 *
 * Two passes over the text. The first checks every byte (printable ASCII, tabs, LF, CR before LF) and
 * counts what the second will create, so each array is allocated once at its final size. The second
 * tokenizes line by line and builds subgraphs, checking ids (defined once, before use) and shapes (each
 * op's shape rule). Errors stop at the first problem with "examplejson: line L, column C: ...". */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ej_internal.h"

typedef struct {
  size_t start, len; /* into the text */
} Tok;

typedef struct {
  const char* text;
  size_t len;
  int32_t line;         /* 1-based, current line */
  size_t line_start;
  Tok* toks;            /* tokens of the current line */
  int32_t ntok;
  EjModule* m;
  /* (subgraph, id) -> tensor index, open addressing */
  uint64_t* id_keys;
  int32_t* id_vals;
  size_t id_cap;
  /* subgraph name -> index */
  int32_t* name_slots;
  size_t name_cap;
  size_t names_used;
  int32_t list_used;
  EjSubgraph* cur;      /* subgraph being filled, NULL before the first header */
  int32_t cur_index;
  int32_t cur_closed;   /* an output line ended it */
  size_t cur_header_at;
  int32_t cur_header_line;
  uint64_t arena_bytes; /* running total of tensor bytes */
} Parser;

#define ALIGN 64u

static int32_t fail_at(Parser* p, int32_t line, size_t at, const char* fmt, ...) BYOC_PRINTF_LIKE(4, 5);

static int32_t fail_at(Parser* p, int32_t line, size_t at, const char* fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  if (vsnprintf(msg, sizeof(msg), fmt, ap) < 0) msg[0] = '\0';
  va_end(ap);
  (void)p;
  byoc_set_last_error("examplejson: line %d, column %lu: %s", (int)line, (unsigned long)at + 1u, msg);
  return -1;
}

/* Error at token k of the current line (k == ntok: just past the last token). */
static int32_t fail_tok(Parser* p, int32_t k, const char* fmt, ...) BYOC_PRINTF_LIKE(3, 4);

static int32_t fail_tok(Parser* p, int32_t k, const char* fmt, ...) {
  char msg[640];
  size_t col;
  va_list ap;
  va_start(ap, fmt);
  if (vsnprintf(msg, sizeof(msg), fmt, ap) < 0) msg[0] = '\0';
  va_end(ap);
  if (k < p->ntok) {
    col = p->toks[k].start - p->line_start;
  } else if (p->ntok > 0) {
    col = p->toks[p->ntok - 1].start + p->toks[p->ntok - 1].len - p->line_start + 1;
  } else {
    col = 0;
  }
  return fail_at(p, p->line, col, "%s", msg);
}

/* ---- tokens ------------------------------------------------------------------------------------ */
static const char* tok_ptr(const Parser* p, int32_t k) { return p->text + p->toks[k].start; }

static int tok_is(const Parser* p, int32_t k, const char* word) {
  size_t n = strlen(word);
  return k < p->ntok && p->toks[k].len == n && memcmp(tok_ptr(p, k), word, n) == 0;
}

static int tok_is_keyword(const Parser* p, int32_t k) {
  return k < p->ntok && p->toks[k].len > 1 && tok_ptr(p, k)[p->toks[k].len - 1] == ':';
}

/* Shows at most 40 characters of a token (tokens are printable ASCII by the first pass). */
#define TOKFMT "'%.*s%s'"
#define TOKARG(p, k) (int)((p)->toks[k].len > 40 ? 40 : (p)->toks[k].len), tok_ptr(p, k), \
                     ((p)->toks[k].len > 40 ? "..." : "")

/* Strict decimal integer in [lo, hi]. */
static int32_t parse_int(Parser* p, int32_t k, int64_t lo, int64_t hi, const char* what, int64_t* out) {
  const char* s;
  size_t n, i = 0;
  int neg = 0;
  int64_t v = 0;
  if (k >= p->ntok) return fail_tok(p, k, "expected %s, found the end of the line", what);
  s = tok_ptr(p, k);
  n = p->toks[k].len;
  if (s[0] == '-') {
    neg = 1;
    i = 1;
  }
  if (i == n) return fail_tok(p, k, "expected %s (an integer), found " TOKFMT, what, TOKARG(p, k));
  for (; i < n; ++i) {
    if (s[i] < '0' || s[i] > '9') {
      return fail_tok(p, k, "expected %s (an integer), found " TOKFMT, what, TOKARG(p, k));
    }
    v = v * 10 + (s[i] - '0');
    if (v > ((int64_t)1 << 40)) break; /* far beyond any bound below; stop before overflow */
  }
  if (neg) v = -v;
  if (i < n || v < lo || v > hi) {
    return fail_tok(p, k, "%s " TOKFMT " out of range [%lld, %lld]", what, TOKARG(p, k), (long long)lo,
                    (long long)hi);
  }
  *out = v;
  return 0;
}

static int32_t parse_float(Parser* p, int32_t k, const char* what, double* out) {
  char buf[64];
  char* end = NULL;
  size_t n;
  if (k >= p->ntok) return fail_tok(p, k, "expected %s, found the end of the line", what);
  n = p->toks[k].len;
  if (n >= sizeof(buf)) return fail_tok(p, k, "%s " TOKFMT " is too long for a number", what, TOKARG(p, k));
  memcpy(buf, tok_ptr(p, k), n);
  buf[n] = '\0';
  *out = strtod(buf, &end);
  if (end != buf + n || *out != *out) {
    return fail_tok(p, k, "expected %s (a number), found " TOKFMT, what, TOKARG(p, k));
  }
  return 0;
}

/* ---- id table ------------------------------------------------------------------------------------ */
static size_t id_hash(uint64_t key, size_t cap) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdULL;
  key ^= key >> 33;
  return (size_t)key & (cap - 1);
}

static uint64_t id_key(int32_t subgraph, int64_t id) { return ((uint64_t)(uint32_t)subgraph << 32) | (uint64_t)id; }

static int32_t id_lookup(const Parser* p, int64_t id) {
  uint64_t key = id_key(p->cur_index, id) + 1u; /* 0 marks an empty slot */
  size_t i = id_hash(key, p->id_cap);
  while (p->id_keys[i] != 0) {
    if (p->id_keys[i] == key) return p->id_vals[i];
    i = (i + 1) & (p->id_cap - 1);
  }
  return -1;
}

static void id_insert(Parser* p, int64_t id, int32_t tensor) {
  uint64_t key = id_key(p->cur_index, id) + 1u;
  size_t i = id_hash(key, p->id_cap);
  while (p->id_keys[i] != 0) i = (i + 1) & (p->id_cap - 1);
  p->id_keys[i] = key;
  p->id_vals[i] = tensor;
}

/* A new tensor with id from token k; checks the id is new in this subgraph. */
static int32_t new_tensor(Parser* p, int32_t k, EjTensor** out) {
  int64_t id;
  int32_t prev;
  EjTensor* t;
  if (parse_int(p, k, 0, EJ_MAX_DIM, "an id", &id) != 0) return -1;
  prev = id_lookup(p, id);
  if (prev >= 0) {
    return fail_tok(p, k, "id %lld is already defined (line %d); ids are unique within a subgraph", (long long)id,
                    (int)p->m->tensors[prev].line);
  }
  t = &p->m->tensors[p->m->num_tensors];
  memset(t, 0, sizeof(*t));
  t->id = (int32_t)id;
  t->line = p->line;
  t->dtype = BYOC_DTYPE_FLOAT32;
  id_insert(p, id, p->m->num_tensors);
  p->m->num_tensors++;
  *out = t;
  return 0;
}

/* The tensor index of the id in token k, which must be defined earlier in this subgraph. */
static int32_t use_id(Parser* p, int32_t k, int32_t* tensor) {
  int64_t id;
  if (parse_int(p, k, 0, EJ_MAX_DIM, "an id", &id) != 0) return -1;
  *tensor = id_lookup(p, id);
  if (*tensor < 0) {
    return fail_tok(p, k, "id %lld is not defined in subgraph '%s' (ids must be defined before use)",
                    (long long)id, p->cur->name);
  }
  return 0;
}

/* ---- shapes, dtypes, data ------------------------------------------------------------------------ */
/* Dims from token *k up to the next keyword or the end of the line. */
static int32_t parse_dims(Parser* p, int32_t* k, EjTensor* t) {
  int64_t numel = 1, dim;
  const int64_t limit = (int64_t)(EJ_MAX_BYTES / sizeof(float));
  int32_t first = *k;
  t->ndim = 0;
  while (*k < p->ntok && !tok_is_keyword(p, *k)) {
    if (t->ndim == EJ_MAX_NDIM) return fail_tok(p, *k, "more than %d dims", EJ_MAX_NDIM);
    if (parse_int(p, *k, 1, EJ_MAX_DIM, "a dim", &dim) != 0) return -1;
    t->shape[t->ndim++] = dim;
    if (numel > limit / dim) {
      return fail_tok(p, first, "tensor too large: over %llu bytes", (unsigned long long)EJ_MAX_BYTES);
    }
    numel *= dim;
    ++*k;
  }
  t->numel = numel;
  return 0;
}

static int32_t parse_dtype(Parser* p, int32_t k, EjTensor* t) {
  if (k >= p->ntok || tok_is_keyword(p, k)) return fail_tok(p, k, "expected a dtype after 'dtype:'");
  if (!tok_is(p, k, "float32")) {
    return fail_tok(p, k, "dtype " TOKFMT " is not supported; this runtime computes float32", TOKARG(p, k));
  }
  t->dtype = BYOC_DTYPE_FLOAT32;
  return 0;
}

/* Counts the tensor's bytes against the module limit (64-byte aligned, as the arena places them). */
static int32_t reserve_bytes(Parser* p, int32_t k, const EjTensor* t) {
  uint64_t bytes = ((uint64_t)t->numel * sizeof(float) + ALIGN - 1u) / ALIGN * ALIGN;
  if (p->arena_bytes + bytes > EJ_MAX_BYTES) {
    return fail_tok(p, k, "the module's tensors would need more than %llu bytes",
                    (unsigned long long)EJ_MAX_BYTES);
  }
  p->arena_bytes += bytes;
  return 0;
}

static int b64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

/* Checks token k is base64 (RFC 4648, padded) of exactly numel float32 values. */
static int32_t check_base64(Parser* p, int32_t k, EjTensor* t) {
  const char* s;
  size_t n, i, pads = 0, bytes;
  if (k >= p->ntok) return fail_tok(p, k, "expected base64 data after 'data:'");
  s = tok_ptr(p, k);
  n = p->toks[k].len;
  if (n % 4 != 0) return fail_tok(p, k, "base64 data length %lu is not a multiple of 4", (unsigned long)n);
  while (pads < 2 && pads < n && s[n - 1 - pads] == '=') ++pads;
  for (i = 0; i < n - pads; ++i) {
    if (b64_value(s[i]) < 0) {
      return fail_at(p, p->line, p->toks[k].start + i - p->line_start, "invalid base64 character '%c'", s[i]);
    }
  }
  bytes = n / 4 * 3 - pads;
  if ((uint64_t)bytes != (uint64_t)t->numel * sizeof(float)) {
    return fail_tok(p, k, "data holds %lu bytes but shape needs %llu (float32, little-endian)",
                    (unsigned long)bytes, (unsigned long long)t->numel * sizeof(float));
  }
  t->data_off = p->toks[k].start;
  t->data_len = n;
  return 0;
}

static void decode_base64(const char* s, size_t n, unsigned char* out) {
  size_t i, o = 0;
  for (i = 0; i + 4 <= n; i += 4) {
    int v0 = b64_value(s[i]), v1 = b64_value(s[i + 1]), v2 = b64_value(s[i + 2]), v3 = b64_value(s[i + 3]);
    out[o++] = (unsigned char)((v0 << 2) | (v1 >> 4));
    if (v2 < 0) break;
    out[o++] = (unsigned char)(((v1 & 15) << 4) | (v2 >> 2));
    if (v3 < 0) break;
    out[o++] = (unsigned char)(((v2 & 3) << 6) | v3);
  }
}

static int host_is_little_endian(void) {
  const uint16_t one = 1;
  return *(const unsigned char*)&one == 1;
}

/* ---- lines --------------------------------------------------------------------------------------- */
/* `<kind> <id> <dims...> [dtype: <dtype>]`, the start of input and const lines; *k ends after it. */
static int32_t tensor_head(Parser* p, const char* usage, int32_t* k, EjTensor** t) {
  if (p->ntok < 2) return fail_tok(p, 1, "'%s' needs an id: %s", tok_is(p, 0, "input") ? "input" : "const", usage);
  if (new_tensor(p, 1, t) != 0) return -1;
  *k = 2;
  if (parse_dims(p, k, *t) != 0) return -1;
  if (tok_is(p, *k, "dtype:")) {
    if (parse_dtype(p, *k + 1, *t) != 0) return -1;
    *k += 2;
  }
  return 0;
}

static int32_t line_input(Parser* p) {
  EjTensor* t;
  int32_t k;
  if (tensor_head(p, "input <id> <dims...>", &k, &t) != 0) return -1;
  t->is_input = 1;
  if (k < p->ntok) return fail_tok(p, k, "unexpected " TOKFMT " in an input line", TOKARG(p, k));
  p->m->id_lists[p->list_used++] = p->m->num_tensors - 1;
  p->cur->num_inputs++;
  return 0;
}

static int32_t line_const(Parser* p) {
  EjTensor* t;
  int32_t k;
  if (tensor_head(p, "const <id> <dims...> data: <base64>", &k, &t) != 0) return -1;
  t->is_const = 1;
  if (!tok_is(p, k, "data:")) return fail_tok(p, k, "expected 'data:' and the constant's base64 bytes");
  if (check_base64(p, k + 1, t) != 0) return -1;
  if (k + 2 < p->ntok) return fail_tok(p, k + 2, "unexpected " TOKFMT " after the data", TOKARG(p, k + 2));
  return reserve_bytes(p, 1, t);
}

static int32_t line_output(Parser* p) {
  int32_t k, tensor;
  int32_t* list = p->m->id_lists + p->list_used;
  if (p->ntok < 2) return fail_tok(p, 1, "'output' needs at least one id");
  for (k = 1; k < p->ntok; ++k) {
    if (use_id(p, k, &tensor) != 0) return -1;
    list[k - 1] = tensor;
  }
  p->cur->num_outputs = p->ntok - 1;
  p->list_used += p->ntok - 1;
  p->cur_closed = 1;
  return 0;
}

static int32_t parse_attr(Parser* p, int32_t* k, EjNode* node, uint32_t* seen) {
  const EjAttrSpec* spec = ej_find_attr(tok_ptr(p, *k), p->toks[*k].len - 1);
  int32_t at = *k, count = 0;
  char* base = (char*)&node->attrs;
  if (spec == NULL || !(node->op->attrs & spec->bit)) {
    char allowed[200] = "";
    int32_t i;
    for (i = 0; i < ej_num_attr_specs; ++i) {
      if (node->op->attrs & ej_attr_specs[i].bit) {
        strncat(allowed, allowed[0] ? ", " : "", sizeof(allowed) - strlen(allowed) - 1);
        strncat(allowed, ej_attr_specs[i].name, sizeof(allowed) - strlen(allowed) - 1);
      }
    }
    return fail_tok(p, at, "%s takes no attribute " TOKFMT " (it takes: %s)", node->op->name, TOKARG(p, at),
                    allowed[0] ? allowed : "none");
  }
  if (*seen & spec->bit) return fail_tok(p, at, "attribute '%s' given twice", spec->name);
  *seen |= spec->bit;
  ++*k;
  while (*k < p->ntok && !tok_is_keyword(p, *k)) {
    if (count == spec->max_count) {
      return fail_tok(p, *k, "'%s' takes at most %d values", spec->name, (int)spec->max_count);
    }
    if (spec->is_float) {
      if (parse_float(p, *k, spec->name, (double*)(void*)(base + spec->offset) + count) != 0) return -1;
    } else {
      int64_t lo = 1, hi = EJ_MAX_DIM, v;
      if (spec->bit == EJ_ATTR_PADDING) lo = 0;
      if (spec->bit == EJ_ATTR_CEIL_MODE || spec->bit == EJ_ATTR_COUNT_INCLUDE_PAD) lo = 0, hi = 1;
      if (spec->bit == EJ_ATTR_AXIS) lo = -EJ_MAX_NDIM, hi = EJ_MAX_NDIM;
      if (parse_int(p, *k, lo, hi, spec->name, &v) != 0) return -1;
      ((int64_t*)(void*)(base + spec->offset))[count] = v;
    }
    ++count;
    ++*k;
  }
  if (count < spec->min_count) return fail_tok(p, *k, "'%s' needs a value", spec->name);
  if (spec->max_count > 1 && count != spec->max_count && !(spec->max_count == 4 && count <= 2) && count != 1) {
    return fail_tok(p, at, "'%s' takes 1 or %d values, got %d", spec->name, (int)spec->max_count, (int)count);
  }
  ej_normalize_attr(spec, &node->attrs, count);
  return 0;
}

static void shape_text(int32_t ndim, const int64_t* shape, char* buf, size_t len) {
  byoc_shape_str(ndim, shape, buf, len);
}

static int32_t line_op(Parser* p, const EjOpDef* op) {
  EjModule* m = p->m;
  EjNode* node = &m->nodes[m->num_nodes];
  EjTensor* out;
  const EjTensor* ins[EJ_MAX_OP_INPUTS];
  int32_t k, shape_at, i, got_ndim = 0;
  int64_t got[EJ_MAX_NDIM];
  uint32_t seen = 0;
  char why[400] = "";
  memset(node, 0, sizeof(*node));
  node->op = op;
  node->line = p->line;
  node->column = (int32_t)(p->toks[0].start - p->line_start + 1);
  ej_default_attrs(&node->attrs);
  node->attrs.axis = strcmp(op->name, "nn.softmax") == 0 ? -1 : 1;
  if (p->ntok < 2) return fail_tok(p, 1, "'%s' needs an id: <op> <id> inputs: <ids> shape: <dims>", op->name);
  if (new_tensor(p, 1, &out) != 0) return -1;
  node->out = m->num_tensors - 1;
  if (!tok_is(p, 2, "inputs:")) return fail_tok(p, 2, "expected 'inputs:' after the id");
  for (k = 3; k < p->ntok && !tok_is_keyword(p, k); ++k) {
    if (node->num_inputs == op->num_inputs) {
      return fail_tok(p, k, "%s takes %d input%s", op->name, (int)op->num_inputs, op->num_inputs == 1 ? "" : "s");
    }
    if (use_id(p, k, &node->in[node->num_inputs]) != 0) return -1;
    if (node->in[node->num_inputs] == node->out) return fail_tok(p, k, "an op cannot read its own result");
    node->num_inputs++;
  }
  if (node->num_inputs != op->num_inputs) {
    return fail_tok(p, k, "%s takes %d input%s, got %d", op->name, (int)op->num_inputs,
                    op->num_inputs == 1 ? "" : "s", (int)node->num_inputs);
  }
  if (!tok_is(p, k, "shape:")) return fail_tok(p, k, "expected 'shape:' after the inputs");
  shape_at = k++;
  if (parse_dims(p, &k, out) != 0) return -1;
  while (k < p->ntok) {
    if (tok_is(p, k, "dtype:")) {
      if (seen & 0x80000000u) return fail_tok(p, k, "'dtype:' given twice");
      seen |= 0x80000000u;
      if (parse_dtype(p, k + 1, out) != 0) return -1;
      k += 2;
    } else if (tok_is_keyword(p, k)) {
      if (parse_attr(p, &k, node, &seen) != 0) return -1;
    } else {
      return fail_tok(p, k, "unexpected " TOKFMT "; attributes are written 'name: values'", TOKARG(p, k));
    }
  }
  if ((seen & op->required) != op->required) {
    for (i = 0; i < ej_num_attr_specs; ++i) {
      if ((op->required & ej_attr_specs[i].bit) && !(seen & ej_attr_specs[i].bit)) {
        return fail_tok(p, 0, "%s needs attribute '%s:'", op->name, ej_attr_specs[i].name);
      }
    }
  }
  for (i = 0; i < node->num_inputs; ++i) ins[i] = &m->tensors[node->in[i]];
  if (op->infer(node, ins, out, &got_ndim, got, why, sizeof(why)) != 0) return fail_tok(p, 0, "%s", why);
  if (got_ndim != out->ndim || memcmp(got, out->shape, sizeof(int64_t) * (size_t)got_ndim) != 0) {
    char want_s[160], got_s[160];
    shape_text(out->ndim, out->shape, want_s, sizeof(want_s));
    shape_text(got_ndim, got, got_s, sizeof(got_s));
    return fail_tok(p, shape_at, "shape %s declared, but %s of these inputs gives %s", want_s, op->name, got_s);
  }
  if (reserve_bytes(p, 1, out) != 0) return -1;
  m->num_nodes++;
  p->cur->num_nodes++;
  p->cur->work += op->work(node, ins, out);
  return 0;
}

/* ---- subgraphs ------------------------------------------------------------------------------------- */
static size_t name_hash(const char* s, size_t n, size_t cap) {
  uint64_t h = 1469598103934665603ULL;
  size_t i;
  for (i = 0; i < n; ++i) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
  return (size_t)h & (cap - 1);
}

static int32_t end_subgraph(Parser* p) {
  EjSubgraph* s = p->cur;
  if (s == NULL) return 0;
  if (s->num_outputs == 0) {
    if (s->num_nodes == 0) {
      return fail_at(p, p->cur_header_line, p->cur_header_at - 0,
                     "subgraph '%s' has no op and no 'output' line: it computes nothing", s->name);
    }
    s->outputs = p->m->id_lists + p->list_used;
    s->outputs[0] = s->nodes[s->num_nodes - 1].out; /* the guide's rule: the last node is the result */
    s->num_outputs = 1;
    p->list_used++;
  } else {
    s->outputs = p->m->id_lists + (p->list_used - s->num_outputs);
  }
  p->m->work += s->work;
  return 0;
}

static int32_t line_header(Parser* p) {
  EjModule* m = p->m;
  const char* s = tok_ptr(p, 0);
  size_t n = p->toks[0].len, i, slot;
  EjSubgraph* sg;
  for (i = 0; i < n; ++i) {
    char c = s[i];
    int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || (i > 0 && c >= '0' && c <= '9');
    if (!ok) {
      return fail_at(p, p->line, p->toks[0].start + i - p->line_start,
                     "a subgraph symbol is a C identifier ([A-Za-z_][A-Za-z0-9_]*); '%c' is not allowed here"
                     " (or is this an op line missing its id?)", c);
    }
  }
  if (n > EJ_MAX_NAME) return fail_tok(p, 0, "subgraph symbol longer than %d characters", EJ_MAX_NAME);
  if (end_subgraph(p) != 0) return -1;
  slot = name_hash(s, n, p->name_cap);
  while (p->name_slots[slot] >= 0) {
    const char* other = m->subgraphs[p->name_slots[slot]].name;
    if (strlen(other) == n && memcmp(other, s, n) == 0) {
      return fail_tok(p, 0, "subgraph '%s' is defined twice", other);
    }
    slot = (slot + 1) & (p->name_cap - 1);
  }
  p->name_slots[slot] = m->num_subgraphs;
  sg = &m->subgraphs[m->num_subgraphs];
  memset(sg, 0, sizeof(*sg));
  sg->name = m->names + p->names_used;
  memcpy(sg->name, s, n);
  sg->name[n] = '\0';
  p->names_used += n + 1;
  sg->inputs = m->id_lists + p->list_used;
  sg->nodes = m->nodes + m->num_nodes;
  sg->tensors = m->tensors;
  p->cur = sg;
  p->cur_index = m->num_subgraphs++;
  p->cur_closed = 0;
  p->cur_header_at = p->toks[0].start - p->line_start;
  p->cur_header_line = p->line;
  return 0;
}

static int is_statement_word(const Parser* p) {
  return tok_is(p, 0, "input") || tok_is(p, 0, "const") || tok_is(p, 0, "output") ||
         ej_find_op(tok_ptr(p, 0), p->toks[0].len) != NULL;
}

static int32_t parse_line(Parser* p) {
  const EjOpDef* op;
  if (p->ntok == 0 || tok_ptr(p, 0)[0] == '#') return 0; /* blank or comment */
  if (p->ntok == 1 && !is_statement_word(p)) return line_header(p);
  if (p->cur == NULL) {
    return fail_tok(p, 0, TOKFMT " before any subgraph; start each block with its symbol on a line of its own",
                    TOKARG(p, 0));
  }
  if (p->cur_closed) {
    return fail_tok(p, 0, "nothing may follow the 'output' line of subgraph '%s' (start a new subgraph first)",
                    p->cur->name);
  }
  if (tok_is(p, 0, "input")) return line_input(p);
  if (tok_is(p, 0, "const")) return line_const(p);
  if (tok_is(p, 0, "output")) return line_output(p);
  op = ej_find_op(tok_ptr(p, 0), p->toks[0].len);
  if (op == NULL) return fail_tok(p, 0, "unknown op " TOKFMT, TOKARG(p, 0));
  return line_op(p, op);
}

/* ---- passes ------------------------------------------------------------------------------------------ */
typedef struct {
  size_t tensors, nodes, subgraphs, tokens, max_line_tokens;
} Counts;

/* First pass: every byte allowed, and upper bounds of what the second pass creates. */
static int32_t scan(Parser* p, Counts* c) {
  size_t i = 0, line_tokens = 0, first_start = 0, first_len = 0;
  int in_tok = 0;
  memset(c, 0, sizeof(*c));
  p->line = 1;
  p->line_start = 0;
  for (i = 0; i <= p->len; ++i) {
    char ch = i < p->len ? p->text[i] : '\n';
    int space = ch == ' ' || ch == '\t' || ch == '\n' || (ch == '\r' && (i + 1 == p->len || p->text[i + 1] == '\n'));
    if (!space && ((unsigned char)ch < 0x21 || (unsigned char)ch > 0x7e)) {
      return fail_at(p, p->line, i - p->line_start,
                     "unexpected byte 0x%02x (ExampleJSON is printable ASCII, spaces, tabs and newlines)",
                     (unsigned)(unsigned char)ch);
    }
    if (!space && !in_tok) {
      if (line_tokens == 0) first_start = i;
      in_tok = 1;
      ++line_tokens;
    }
    if (space && in_tok) {
      in_tok = 0;
      if (line_tokens == 1) first_len = i - first_start;
    }
    if (ch == '\n') {
      if (line_tokens > 0) {
        const char* f = p->text + first_start;
        if (line_tokens == 1) {
          ++c->subgraphs;
        } else if ((first_len == 5 && (memcmp(f, "input", 5) == 0 || memcmp(f, "const", 5) == 0))) {
          ++c->tensors;
        } else if (ej_find_op(f, first_len) != NULL) {
          ++c->tensors;
          ++c->nodes;
        }
      }
      c->tokens += line_tokens;
      if (line_tokens > c->max_line_tokens) c->max_line_tokens = line_tokens;
      line_tokens = 0;
      ++p->line;
      p->line_start = i + 1;
    }
  }
  return 0;
}

static size_t pow2_at_least(size_t n) {
  size_t cap = 16;
  while (cap < n) cap *= 2;
  return cap;
}

static int32_t tokenize_line(Parser* p, size_t end) {
  size_t i = p->line_start;
  p->ntok = 0;
  while (i < end) {
    char ch = p->text[i];
    if (ch == ' ' || ch == '\t' || ch == '\r') {
      ++i;
      continue;
    }
    p->toks[p->ntok].start = i;
    while (i < end && p->text[i] != ' ' && p->text[i] != '\t' && p->text[i] != '\r') ++i;
    p->toks[p->ntok].len = i - p->toks[p->ntok].start;
    p->ntok++;
  }
  return 0;
}

static int32_t allocate(Parser* p, const Counts* c) {
  EjModule* m = p->m;
  size_t i;
  m->text = (char*)malloc(p->len + 1);
  m->tensors = (EjTensor*)calloc(c->tensors + 1, sizeof(EjTensor));
  m->nodes = (EjNode*)calloc(c->nodes + 1, sizeof(EjNode));
  m->subgraphs = (EjSubgraph*)calloc(c->subgraphs + 1, sizeof(EjSubgraph));
  m->id_lists = (int32_t*)calloc(c->tokens + c->subgraphs + 1, sizeof(int32_t));
  m->names = (char*)malloc(p->len + c->subgraphs + 1);
  p->toks = (Tok*)calloc(c->max_line_tokens + 1, sizeof(Tok));
  p->id_cap = pow2_at_least(2 * c->tensors + 2);
  p->id_keys = (uint64_t*)calloc(p->id_cap, sizeof(uint64_t));
  p->id_vals = (int32_t*)calloc(p->id_cap, sizeof(int32_t));
  p->name_cap = pow2_at_least(2 * c->subgraphs + 2);
  p->name_slots = (int32_t*)malloc(p->name_cap * sizeof(int32_t));
  if (!m->text || !m->tensors || !m->nodes || !m->subgraphs || !m->id_lists || !m->names || !p->toks ||
      !p->id_keys || !p->id_vals || !p->name_slots) {
    byoc_set_last_error("examplejson: out of memory parsing a %lu-byte text", (unsigned long)p->len);
    return -1;
  }
  for (i = 0; i < p->name_cap; ++i) p->name_slots[i] = -1;
  memcpy(m->text, p->text, p->len);
  m->text[p->len] = '\0';
  m->text_len = p->len;
  return 0;
}

/* One block for every op result and constant; inputs stay unbound until a call. */
static int32_t place_tensors(Parser* p) {
  EjModule* m = p->m;
  uint64_t off = 0;
  unsigned char* base;
  int32_t i;
  m->arena_raw = malloc((size_t)p->arena_bytes + ALIGN);
  if (m->arena_raw == NULL) {
    byoc_set_last_error("examplejson: cannot allocate %llu bytes of tensors",
                        (unsigned long long)p->arena_bytes);
    return -1;
  }
  base = (unsigned char*)m->arena_raw + (ALIGN - (uintptr_t)m->arena_raw % ALIGN) % ALIGN;
  memset(base, 0, (size_t)p->arena_bytes);
  m->arena_bytes = p->arena_bytes;
  for (i = 0; i < m->num_tensors; ++i) {
    EjTensor* t = &m->tensors[i];
    if (t->is_input) continue;
    t->data = (float*)(void*)(base + off);
    off += ((uint64_t)t->numel * sizeof(float) + ALIGN - 1u) / ALIGN * ALIGN;
    if (t->is_const) {
      decode_base64(m->text + t->data_off, t->data_len, (unsigned char*)t->data);
      if (!host_is_little_endian()) {
        unsigned char* b = (unsigned char*)t->data;
        int64_t e;
        for (e = 0; e < t->numel; ++e, b += 4) {
          unsigned char x0 = b[0], x1 = b[1];
          b[0] = b[3];
          b[1] = b[2];
          b[2] = x1;
          b[3] = x0;
        }
      }
    }
  }
  return 0;
}

void ej_free_module(EjModule* m) {
  if (m == NULL) return;
  free(m->text);
  free(m->tensors);
  free(m->nodes);
  free(m->subgraphs);
  free(m->id_lists);
  free(m->names);
  free(m->arena_raw);
  free(m);
}

int32_t ej_parse_module(const char* text, size_t len, EjModule** out) {
  Parser p;
  Counts counts;
  int32_t rc = -1;
  size_t pos = 0;
  *out = NULL;
  memset(&p, 0, sizeof(p));
  p.text = text;
  p.len = len;
  if (text == NULL && len > 0) {
    byoc_set_last_error("examplejson: text is NULL");
    return -1;
  }
  if (text == NULL) p.text = "";
  if (scan(&p, &counts) != 0) return -1;
  p.m = (EjModule*)calloc(1, sizeof(EjModule));
  if (p.m == NULL) {
    byoc_set_last_error("examplejson: out of memory");
    return -1;
  }
  if (allocate(&p, &counts) != 0) goto done;
  p.line = 1;
  for (;;) {
    const char* nl = (const char*)memchr(p.text + pos, '\n', len - pos);
    size_t end = nl ? (size_t)(nl - p.text) : len;
    p.line_start = pos;
    tokenize_line(&p, end);
    if (parse_line(&p) != 0) goto done;
    if (nl == NULL) break;
    pos = end + 1;
    p.line++;
  }
  if (end_subgraph(&p) != 0) goto done;
  if (p.m->num_subgraphs == 0) {
    byoc_set_last_error("examplejson: line 1, column 1: no subgraph; a text starts with a subgraph symbol "
                        "on a line of its own (e.g. 'subgraph_0')");
    goto done;
  }
  if (place_tensors(&p) != 0) goto done;
  rc = 0;
done:
  free(p.toks);
  free(p.id_keys);
  free(p.id_vals);
  free(p.name_slots);
  if (rc != 0) {
    ej_free_module(p.m);
  } else {
    *out = p.m;
  }
  return rc;
}
