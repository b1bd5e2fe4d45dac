/* Strict, bounded JSON reader (RFC 8259) for graph.json. Internal to the byoc runtime. */
#ifndef BYOC_JSON_H_
#define BYOC_JSON_H_

#include <stddef.h>
#include <stdint.h>

#define BYOC_JSON_MAX_DEPTH 64
/* duplicate keys are found by a linear scan, so objects stay small (graph.json's have < 10 keys) */
#define BYOC_JSON_MAX_MEMBERS 1024

typedef enum {
  BYOC_JSON_NULL,
  BYOC_JSON_BOOL,
  BYOC_JSON_NUMBER,
  BYOC_JSON_STRING,
  BYOC_JSON_ARRAY,
  BYOC_JSON_OBJECT
} ByocJsonType;

typedef struct {
  ByocJsonType type;
  int is_int;      /* NUMBER written as an integer that fits int64 */
  int64_t i;       /* integer value (is_int) or bool value */
  double d;        /* NUMBER as a double (strtod of its text; +-HUGE_VAL when out of range) */
  int32_t first;   /* first child index (ARRAY/OBJECT), -1 if none */
  int32_t next;    /* next sibling index, -1 if last */
  int32_t count;   /* number of children */
  const char* str; /* decoded STRING, NUL-terminated (may contain no NUL: \u0000 is rejected) */
  size_t len;
  const char* key; /* member name when the parent is an OBJECT */
  size_t key_len;
} ByocJsonValue;

typedef struct {
  ByocJsonValue* values; /* values[0] is the root */
  int32_t n, cap;
  char* strbuf;
  size_t str_used, str_cap;
} ByocJsonDoc;

/* Parses text[0..len). On error: -1, last error "graph.json: <why> at line L column C", doc emptied. */
int32_t byoc_json_parse(const char* text, size_t len, ByocJsonDoc* doc);
void byoc_json_free(ByocJsonDoc* doc);

static inline const ByocJsonValue* byoc_json_child(const ByocJsonDoc* d, const ByocJsonValue* v) {
  return v->first < 0 ? NULL : &d->values[v->first];
}
static inline const ByocJsonValue* byoc_json_next(const ByocJsonDoc* d, const ByocJsonValue* v) {
  return v->next < 0 ? NULL : &d->values[v->next];
}
/* Member of an OBJECT by key, NULL if absent. */
const ByocJsonValue* byoc_json_get(const ByocJsonDoc* d, const ByocJsonValue* obj, const char* key);
const char* byoc_json_type_name(ByocJsonType t);

#endif /* BYOC_JSON_H_ */
