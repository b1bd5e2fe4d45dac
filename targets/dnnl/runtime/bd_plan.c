/* The region's activation memory: one arena, laid out once after the steps are known.
 *
 * Every value a step writes (primitive outputs, per-run reorders) is an "activation": a buffer
 * with no storage while the primitives are built, seen through one or more memory objects (the
 * value itself, views of it with other dims, the scratchpad arguments of every primitive). Once
 * all steps exist, each buffer lives from the first step that names one of its memory objects to
 * the last; buffers whose lives do not overlap share bytes. Reusing bytes keeps the working set of
 * a run in cache (each primitive writes where an earlier, dead value was, not into memory no run
 * has touched lately), and the whole region costs one allocation at init and none per run. */
#include <stdlib.h>
#include <string.h>

#include "bd_internal.h"

#define BD_ALIGN 64 /* oneDNN's preferred alignment: a cache line, an AVX-512 register */

static size_t round_up(size_t n) { return (n + BD_ALIGN - 1) / BD_ALIGN * BD_ALIGN; }

static int32_t grow(BdModule* m, void** array, int32_t* cap, int32_t need, size_t size, int32_t node) {
  void* grown;
  int32_t n;
  if (need <= *cap) return 0;
  n = *cap ? *cap * 2 : 64;
  if (n < need) n = need;
  grown = realloc(*array, (size_t)n * size);
  if (grown == NULL) return bd_fail(m, node, "out of memory");
  *array = grown;
  *cap = n;
  return 0;
}

/* `mem` (created without storage) is placed over buffer `buffer`. */
static int32_t place(BdModule* m, dnnl_memory_t mem, int32_t buffer, size_t at, int32_t node) {
  if (grow(m, (void**)&m->placed, &m->cap_placed, m->num_placed + 1, sizeof(*m->placed), node) != 0) return -1;
  m->placed[m->num_placed].mem = mem;
  m->placed[m->num_placed].at = at;
  m->placed[m->num_placed++].buffer = buffer;
  return 0;
}

/* The entry of `placed` for mem (the latest), or NULL: mem was not created over a buffer. */
static const BdPlaced* placed_of(const BdModule* m, dnnl_memory_t mem) {
  int32_t i;
  for (i = m->num_placed - 1; i >= 0; --i) {
    if (m->placed[i].mem == mem) return &m->placed[i];
  }
  return NULL;
}

int32_t bd_buffer_of(const BdModule* m, dnnl_memory_t mem) {
  const BdPlaced* p = placed_of(m, mem);
  return p != NULL ? p->buffer : -1;
}

int32_t bd_activation(BdModule* m, const dnnl_memory_desc_t* md, dnnl_memory_t* out, int32_t node) {
  BdBuffer* b;
  if (bd_new_memory(m, md, DNNL_MEMORY_NONE, out, node) != 0) return -1;
  if (grow(m, (void**)&m->buffers, &m->cap_buffers, m->num_buffers + 1, sizeof(*m->buffers), node) != 0) return -1;
  b = &m->buffers[m->num_buffers];
  memset(b, 0, sizeof(*b));
  b->bytes = round_up(dnnl_memory_desc_get_size(md));
  return place(m, *out, m->num_buffers++, 0, node);
}

int32_t bd_view_at(BdModule* m, dnnl_memory_t base, size_t at, const dnnl_memory_desc_t* md, dnnl_memory_t* out,
                   int32_t node) {
  const BdPlaced* p = placed_of(m, base);
  void* handle = NULL;
  if (p != NULL) {
    const int32_t buffer = p->buffer;
    const size_t base_at = p->at;   /* read before place() may move `placed` */
    if (bd_new_memory(m, md, DNNL_MEMORY_NONE, out, node) != 0) return -1;
    return place(m, *out, buffer, base_at + at, node);
  }
  if (dnnl_memory_get_data_handle(base, &handle) != dnnl_success) return bd_fail(m, node, "oneDNN memory query failed");
  return bd_new_memory(m, md, (char*)handle + at, out, node);
}

int32_t bd_view(BdModule* m, dnnl_memory_t base, const dnnl_memory_desc_t* md, dnnl_memory_t* out, int32_t node) {
  return bd_view_at(m, base, 0, md, out, node);
}

int32_t bd_scratchpad(BdModule* m, const dnnl_memory_desc_t* md, dnnl_memory_t* out, int32_t node) {
  size_t bytes = round_up(dnnl_memory_desc_get_size(md));
  if (m->scratch_buffer < 0) {
    dnnl_memory_t first;
    if (bd_activation(m, md, &first, node) != 0) return -1;
    m->scratch_buffer = m->num_buffers - 1;
    *out = first;
    return 0;
  }
  if (bytes > m->buffers[m->scratch_buffer].bytes) m->buffers[m->scratch_buffer].bytes = bytes;
  if (bd_new_memory(m, md, DNNL_MEMORY_NONE, out, node) != 0) return -1;
  return place(m, *out, m->scratch_buffer, 0, node);
}

static int cmp_placed(const void* a, const void* b) {
  const BdPlaced *x = (const BdPlaced*)a, *y = (const BdPlaced*)b;
  uintptr_t p = (uintptr_t)x->mem, q = (uintptr_t)y->mem;
  return p < q ? -1 : p > q;
}

/* first and last step of every buffer (by memory object, looked up in a sorted copy of `placed`) */
static int32_t lifetimes(BdModule* m) {
  BdPlaced* sorted;
  int32_t s, k, i;
  for (i = 0; i < m->num_buffers; ++i) m->buffers[i].first = m->buffers[i].last = -1;
  if (m->num_placed == 0) return 0;
  sorted = (BdPlaced*)malloc((size_t)m->num_placed * sizeof(*sorted));
  if (sorted == NULL) return bd_fail(m, -1, "out of memory");
  memcpy(sorted, m->placed, (size_t)m->num_placed * sizeof(*sorted));
  qsort(sorted, (size_t)m->num_placed, sizeof(*sorted), cmp_placed);
  for (s = 0; s < m->num_steps; ++s) {
    for (k = 0; k < m->steps[s].nargs; ++k) {
      BdPlaced key;
      const BdPlaced* hit;
      key.mem = m->steps[s].args[k].memory;
      hit = (const BdPlaced*)bsearch(&key, sorted, (size_t)m->num_placed, sizeof(*sorted), cmp_placed);
      if (hit == NULL) continue;
      if (m->buffers[hit->buffer].first < 0) m->buffers[hit->buffer].first = s;
      m->buffers[hit->buffer].last = s;
    }
  }
  free(sorted);
  return 0;
}

/* Free byte ranges of the arena, sorted by offset, adjacent ones merged. */
typedef struct {
  size_t offset, bytes;
} BdRange;

typedef struct {
  BdRange* r;
  int32_t n, cap;
  size_t top; /* the arena's size so far */
} BdFree;

static size_t take(BdFree* f, size_t bytes) {
  int32_t i;
  size_t at;
  for (i = 0; i < f->n; ++i) {
    if (f->r[i].bytes >= bytes) {
      at = f->r[i].offset;
      f->r[i].offset += bytes;
      f->r[i].bytes -= bytes;
      if (f->r[i].bytes == 0) {
        memmove(&f->r[i], &f->r[i + 1], (size_t)(f->n - i - 1) * sizeof(BdRange));
        --f->n;
      }
      return at;
    }
  }
  /* nothing fits: grow the arena, starting inside the last free range if it reaches the top */
  if (f->n > 0 && f->r[f->n - 1].offset + f->r[f->n - 1].bytes == f->top) {
    at = f->r[--f->n].offset;
  } else {
    at = f->top;
  }
  f->top = at + bytes;
  return at;
}

static int give_back(BdFree* f, size_t offset, size_t bytes) {
  int32_t i = 0;
  while (i < f->n && f->r[i].offset < offset) ++i;
  if (i > 0 && f->r[i - 1].offset + f->r[i - 1].bytes == offset) { /* merge with the range before */
    f->r[i - 1].bytes += bytes;
    if (i < f->n && offset + bytes == f->r[i].offset) {
      f->r[i - 1].bytes += f->r[i].bytes;
      memmove(&f->r[i], &f->r[i + 1], (size_t)(f->n - i - 1) * sizeof(BdRange));
      --f->n;
    }
    return 0;
  }
  if (i < f->n && offset + bytes == f->r[i].offset) { /* merge with the range after */
    f->r[i].offset = offset;
    f->r[i].bytes += bytes;
    return 0;
  }
  if (f->n == f->cap) {
    int32_t cap = f->cap ? f->cap * 2 : 16;
    BdRange* grown = (BdRange*)realloc(f->r, (size_t)cap * sizeof(BdRange));
    if (grown == NULL) return -1;
    f->r = grown;
    f->cap = cap;
  }
  memmove(&f->r[i + 1], &f->r[i], (size_t)(f->n - i) * sizeof(BdRange));
  f->r[i].offset = offset;
  f->r[i].bytes = bytes;
  ++f->n;
  return 0;
}

/* Offsets by a walk over the steps: at step s, buffers first used there take the lowest free range
 * that fits; then buffers last used there give theirs back (after: a step's inputs and outputs
 * never share bytes). `order` lists buffers by first step, `ends` by last step. */
static int32_t assign(BdModule* m, const int32_t* order, const int32_t* ends) {
  BdFree f;
  int32_t s, a = 0, e = 0, n = m->num_buffers;
  memset(&f, 0, sizeof(f));
  for (s = 0; s < m->num_steps; ++s) {
    for (; a < n && m->buffers[order[a]].first == s; ++a) {
      m->buffers[order[a]].offset = take(&f, m->buffers[order[a]].bytes);
    }
    for (; e < n && m->buffers[ends[e]].last == s; ++e) {
      if (give_back(&f, m->buffers[ends[e]].offset, m->buffers[ends[e]].bytes) != 0) {
        free(f.r);
        return bd_fail(m, -1, "out of memory");
      }
    }
  }
  free(f.r);
  m->arena_bytes = f.top;
  return 0;
}

/* Buffers by first (or last) step: a counting sort (stable). */
static void sort_by_step(const BdModule* m, int32_t* out, int use_last, int32_t* counts) {
  int32_t i, s, n = m->num_buffers;
  memset(counts, 0, (size_t)(m->num_steps + 1) * sizeof(int32_t));
  for (i = 0; i < n; ++i) {
    int32_t k = use_last ? m->buffers[i].last : m->buffers[i].first;
    if (k >= 0) ++counts[k + 1];
  }
  for (s = 0; s < m->num_steps; ++s) counts[s + 1] += counts[s];
  for (i = 0; i < n; ++i) {
    int32_t k = use_last ? m->buffers[i].last : m->buffers[i].first;
    if (k >= 0) out[counts[k]++] = i;
  }
}

int32_t bd_plan(BdModule* m) {
  int32_t *order, *ends, *counts, i;
  char* base;
  if (lifetimes(m) != 0) return -1;
  order = (int32_t*)malloc(((size_t)m->num_buffers * 2 + (size_t)m->num_steps + 1) * sizeof(int32_t));
  if (order == NULL) return bd_fail(m, -1, "out of memory");
  ends = order + m->num_buffers;
  counts = ends + m->num_buffers;
  sort_by_step(m, order, 0, counts);
  sort_by_step(m, ends, 1, counts);
  i = assign(m, order, ends);
  free(order);
  if (i != 0) return -1;
  if (m->arena_bytes == 0) return 0;
  m->arena = malloc(m->arena_bytes + BD_ALIGN);
  if (m->arena == NULL) {
    return bd_fail(m, -1, "out of memory for the region's %lu bytes of activations", (unsigned long)m->arena_bytes);
  }
  base = (char*)m->arena + (BD_ALIGN - (uintptr_t)m->arena % BD_ALIGN) % BD_ALIGN;
  for (i = 0; i < m->num_placed; ++i) {
    const BdBuffer* b = &m->buffers[m->placed[i].buffer];
    if (b->first < 0) continue; /* no step names it: it needs no bytes */
    if (dnnl_memory_set_data_handle(m->placed[i].mem, base + b->offset + m->placed[i].at) != dnnl_success) {
      return bd_fail(m, -1, "oneDNN rejected a buffer of the arena");
    }
  }
  return 0;
}
