/* Strict recursive-descent JSON reader with a depth limit; every read is bounds-checked. */
#include "json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "byoc/runtime.h"

typedef struct {
  const char* s;
  size_t len, pos;
  ByocJsonDoc* doc;
  int failed;
} Parser;

static void fail(Parser* p, const char* why) {
  size_t i, line = 1, col = 1;
  if (p->failed) return;
  p->failed = 1;
  for (i = 0; i < p->pos && i < p->len; ++i) {
    if (p->s[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  if (p->pos >= p->len) {
    byoc_set_last_error("graph.json: %s at end of input (line %lu; truncated?)", why, (unsigned long)line);
  } else {
    byoc_set_last_error("graph.json: %s at line %lu column %lu", why, (unsigned long)line, (unsigned long)col);
  }
}

static void skip_ws(Parser* p) {
  while (p->pos < p->len) {
    char c = p->s[p->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    ++p->pos;
  }
}

static int32_t new_value(Parser* p, ByocJsonType type) {
  ByocJsonDoc* d = p->doc;
  ByocJsonValue* v;
  if (d->n == d->cap) {
    int32_t cap = d->cap ? d->cap : 64;
    ByocJsonValue* grown;
    if (cap > INT32_MAX / 2) {
      fail(p, "too many values");
      return -1;
    }
    cap *= 2;
    grown = (ByocJsonValue*)realloc(d->values, (size_t)cap * sizeof(ByocJsonValue));
    if (grown == NULL) {
      fail(p, "out of memory");
      return -1;
    }
    d->values = grown;
    d->cap = cap;
  }
  v = &d->values[d->n];
  memset(v, 0, sizeof(*v));
  v->type = type;
  v->first = -1;
  v->next = -1;
  return d->n++;
}

static int expect_word(Parser* p, const char* word) {
  size_t n = strlen(word);
  if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0) {
    fail(p, "invalid literal");
    return -1;
  }
  p->pos += n;
  return 0;
}

static int hex4(Parser* p, unsigned* out) {
  unsigned v = 0;
  int k;
  if (p->len - p->pos < 4) {
    fail(p, "truncated \\u escape");
    return -1;
  }
  for (k = 0; k < 4; ++k) {
    char c = p->s[p->pos + (size_t)k];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
    else {
      fail(p, "invalid \\u escape");
      return -1;
    }
  }
  p->pos += 4;
  *out = v;
  return 0;
}

/* Decoded text never exceeds the quoted source span, so strbuf (len + 1 bytes) cannot overflow. */
static void put(Parser* p, char c) { p->doc->strbuf[p->doc->str_used++] = c; }

static int parse_string(Parser* p, const char** out, size_t* out_len) {
  ByocJsonDoc* d = p->doc;
  size_t start = d->str_used;
  ++p->pos; /* opening quote */
  for (;;) {
    unsigned char c;
    if (p->pos >= p->len) {
      fail(p, "unterminated string");
      return -1;
    }
    c = (unsigned char)p->s[p->pos++];
    if (c == '"') break;
    if (c < 0x20) {
      --p->pos;
      fail(p, "control character in string");
      return -1;
    }
    if (c != '\\') {
      put(p, (char)c);
      continue;
    }
    if (p->pos >= p->len) {
      fail(p, "unterminated string");
      return -1;
    }
    c = (unsigned char)p->s[p->pos++];
    switch (c) {
      case '"': put(p, '"'); break;
      case '\\': put(p, '\\'); break;
      case '/': put(p, '/'); break;
      case 'b': put(p, '\b'); break;
      case 'f': put(p, '\f'); break;
      case 'n': put(p, '\n'); break;
      case 'r': put(p, '\r'); break;
      case 't': put(p, '\t'); break;
      case 'u': {
        unsigned cp, lo;
        if (hex4(p, &cp) != 0) return -1;
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
          fail(p, "unpaired surrogate in \\u escape");
          return -1;
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (p->len - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u') {
            fail(p, "unpaired surrogate in \\u escape");
            return -1;
          }
          p->pos += 2;
          if (hex4(p, &lo) != 0) return -1;
          if (lo < 0xDC00 || lo > 0xDFFF) {
            fail(p, "unpaired surrogate in \\u escape");
            return -1;
          }
          cp = 0x10000u + ((cp - 0xD800u) << 10) + (lo - 0xDC00u);
        }
        if (cp == 0) {
          fail(p, "\\u0000 is not allowed in strings");
          return -1;
        }
        /* UTF-8 of cp is at most 4 bytes; the escape was 6 (or 12) source bytes */
        if (cp < 0x80) {
          put(p, (char)cp);
        } else if (cp < 0x800) {
          put(p, (char)(0xC0 | (cp >> 6)));
          put(p, (char)(0x80 | (cp & 0x3F)));
        } else if (cp < 0x10000) {
          put(p, (char)(0xE0 | (cp >> 12)));
          put(p, (char)(0x80 | ((cp >> 6) & 0x3F)));
          put(p, (char)(0x80 | (cp & 0x3F)));
        } else {
          put(p, (char)(0xF0 | (cp >> 18)));
          put(p, (char)(0x80 | ((cp >> 12) & 0x3F)));
          put(p, (char)(0x80 | ((cp >> 6) & 0x3F)));
          put(p, (char)(0x80 | (cp & 0x3F)));
        }
        break;
      }
      default:
        p->pos -= 2;
        fail(p, "invalid escape in string");
        return -1;
    }
  }
  put(p, '\0');
  *out = d->strbuf + start;
  *out_len = d->str_used - start - 1;
  return 0;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

static int parse_number(Parser* p, ByocJsonValue* v) {
  size_t start = p->pos;
  int neg = 0, is_int = 1, overflow = 0;
  uint64_t mag = 0;
  if (p->s[p->pos] == '-') {
    neg = 1;
    ++p->pos;
  }
  if (p->pos >= p->len || !is_digit(p->s[p->pos])) {
    fail(p, "invalid number");
    return -1;
  }
  if (p->s[p->pos] == '0' && p->pos + 1 < p->len && is_digit(p->s[p->pos + 1])) {
    fail(p, "leading zero in number");
    return -1;
  }
  while (p->pos < p->len && is_digit(p->s[p->pos])) {
    unsigned digit = (unsigned)(p->s[p->pos] - '0');
    if (mag > (UINT64_MAX - digit) / 10u) overflow = 1;
    else mag = mag * 10u + digit;
    ++p->pos;
  }
  if (p->pos < p->len && p->s[p->pos] == '.') {
    is_int = 0;
    ++p->pos;
    if (p->pos >= p->len || !is_digit(p->s[p->pos])) {
      fail(p, "invalid number");
      return -1;
    }
    while (p->pos < p->len && is_digit(p->s[p->pos])) ++p->pos;
  }
  if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
    is_int = 0;
    ++p->pos;
    if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-')) ++p->pos;
    if (p->pos >= p->len || !is_digit(p->s[p->pos])) {
      fail(p, "invalid number");
      return -1;
    }
    while (p->pos < p->len && is_digit(p->s[p->pos])) ++p->pos;
  }
  { /* every number also as a double (targets' float attributes); strtod needs a terminated copy */
    char buf[64];
    size_t n = p->pos - start;
    if (n >= sizeof(buf)) {
      v->d = NAN; /* no float attribute is written that long; readers reject non-finite values */
    } else {
      memcpy(buf, p->s + start, n);
      buf[n] = '\0';
      v->d = strtod(buf, NULL);
    }
  }
  if (is_int && !overflow && (neg ? mag <= (uint64_t)INT64_MAX + 1u : mag <= (uint64_t)INT64_MAX)) {
    v->is_int = 1;
    v->i = neg ? (mag == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
  }
  return 0;
}

static int32_t parse_value(Parser* p, int depth);

static int32_t parse_container(Parser* p, int depth, int is_object) {
  int32_t self = new_value(p, is_object ? BYOC_JSON_OBJECT : BYOC_JSON_ARRAY);
  int32_t last = -1;
  char close = is_object ? '}' : ']';
  if (self < 0) return -1;
  ++p->pos;
  skip_ws(p);
  if (p->pos < p->len && p->s[p->pos] == close) {
    ++p->pos;
    return self;
  }
  for (;;) {
    const char* key = NULL;
    size_t key_len = 0;
    int32_t child;
    if (is_object) {
      skip_ws(p);
      if (p->pos >= p->len || p->s[p->pos] != '"') {
        fail(p, "expected a string key");
        return -1;
      }
      if (parse_string(p, &key, &key_len) != 0) return -1;
      if (p->doc->values[self].count >= BYOC_JSON_MAX_MEMBERS) {
        fail(p, "object has too many members");
        return -1;
      }
      if (byoc_json_get(p->doc, &p->doc->values[self], key) != NULL) {
        fail(p, "duplicate key");
        return -1;
      }
      skip_ws(p);
      if (p->pos >= p->len || p->s[p->pos] != ':') {
        fail(p, "expected ':'");
        return -1;
      }
      ++p->pos;
    }
    child = parse_value(p, depth + 1);
    if (child < 0) return -1;
    p->doc->values[child].key = key;
    p->doc->values[child].key_len = key_len;
    if (last < 0) p->doc->values[self].first = child;
    else p->doc->values[last].next = child;
    last = child;
    if (p->doc->values[self].count == INT32_MAX) {
      fail(p, "too many elements");
      return -1;
    }
    p->doc->values[self].count++;
    skip_ws(p);
    if (p->pos >= p->len) {
      fail(p, is_object ? "unterminated object" : "unterminated array");
      return -1;
    }
    if (p->s[p->pos] == ',') {
      ++p->pos;
      continue;
    }
    if (p->s[p->pos] == close) {
      ++p->pos;
      return self;
    }
    fail(p, is_object ? "expected ',' or '}'" : "expected ',' or ']'");
    return -1;
  }
}

static int32_t parse_value(Parser* p, int depth) {
  int32_t idx;
  skip_ws(p);
  if (depth > BYOC_JSON_MAX_DEPTH) {
    fail(p, "nesting too deep");
    return -1;
  }
  if (p->pos >= p->len) {
    fail(p, "expected a value");
    return -1;
  }
  switch (p->s[p->pos]) {
    case '{': return parse_container(p, depth, 1);
    case '[': return parse_container(p, depth, 0);
    case '"':
      idx = new_value(p, BYOC_JSON_STRING);
      if (idx < 0) return -1;
      {
        const char* str;
        size_t n;
        if (parse_string(p, &str, &n) != 0) return -1;
        p->doc->values[idx].str = str;
        p->doc->values[idx].len = n;
      }
      return idx;
    case 't':
    case 'f':
      idx = new_value(p, BYOC_JSON_BOOL);
      if (idx < 0) return -1;
      p->doc->values[idx].i = p->s[p->pos] == 't';
      if (expect_word(p, p->s[p->pos] == 't' ? "true" : "false") != 0) return -1;
      return idx;
    case 'n':
      idx = new_value(p, BYOC_JSON_NULL);
      if (idx < 0) return -1;
      if (expect_word(p, "null") != 0) return -1;
      return idx;
    default:
      if (p->s[p->pos] == '-' || is_digit(p->s[p->pos])) {
        idx = new_value(p, BYOC_JSON_NUMBER);
        if (idx < 0) return -1;
        if (parse_number(p, &p->doc->values[idx]) != 0) return -1;
        return idx;
      }
      fail(p, "unexpected character");
      return -1;
  }
}

void byoc_json_free(ByocJsonDoc* doc) {
  if (doc == NULL) return;
  free(doc->values);
  free(doc->strbuf);
  memset(doc, 0, sizeof(*doc));
}

int32_t byoc_json_parse(const char* text, size_t len, ByocJsonDoc* doc) {
  Parser p;
  memset(doc, 0, sizeof(*doc));
  memset(&p, 0, sizeof(p));
  if (text == NULL) {
    byoc_set_last_error("graph.json: no text given");
    return -1;
  }
  if (len == SIZE_MAX) {
    byoc_set_last_error("graph.json: too large");
    return -1;
  }
  doc->strbuf = (char*)malloc(len + 1);
  if (doc->strbuf == NULL) {
    byoc_set_last_error("graph.json: out of memory (%lu bytes)", (unsigned long)len);
    return -1;
  }
  doc->str_cap = len + 1;
  p.s = text;
  p.len = len;
  p.doc = doc;
  if (parse_value(&p, 1) < 0) {
    byoc_json_free(doc);
    return -1;
  }
  skip_ws(&p);
  if (p.pos != p.len) {
    fail(&p, "trailing characters after the JSON value");
    byoc_json_free(doc);
    return -1;
  }
  return 0;
}

const ByocJsonValue* byoc_json_get(const ByocJsonDoc* d, const ByocJsonValue* obj, const char* key) {
  const ByocJsonValue* v;
  size_t n = strlen(key);
  if (obj == NULL || obj->type != BYOC_JSON_OBJECT) return NULL;
  for (v = byoc_json_child(d, obj); v != NULL; v = byoc_json_next(d, v)) {
    if (v->key != NULL && v->key_len == n && memcmp(v->key, key, n) == 0) return v;
  }
  return NULL;
}

const char* byoc_json_type_name(ByocJsonType t) {
  switch (t) {
    case BYOC_JSON_NULL: return "null";
    case BYOC_JSON_BOOL: return "boolean";
    case BYOC_JSON_NUMBER: return "number";
    case BYOC_JSON_STRING: return "string";
    case BYOC_JSON_ARRAY: return "array";
    case BYOC_JSON_OBJECT: return "object";
  }
  return "?";
}
