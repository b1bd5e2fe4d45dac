/* byoc runtime core, shared by both profiles: the last error. Hosted it is formatted (vsnprintf) into a
 * thread-local buffer; freestanding (BYOC_FREESTANDING) it is the static text given, so a bare-metal
 * image links no stdio, no TLS and no allocator (docs/bare-metal.md). */
#include "byoc/core.h"

#ifdef BYOC_FREESTANDING

static const char* g_last_error = "";

void byoc_set_last_error(const char* fmt, ...) { g_last_error = fmt != NULL ? fmt : ""; }

const char* byoc_get_last_error(void) { return g_last_error; }

void byoc_clear_last_error(void) { g_last_error = ""; }

#else

#include <stdarg.h>
#include <stdio.h>

#if defined(__GNUC__) || defined(__clang__)
#define BYOC_THREAD_LOCAL __thread
#else
#define BYOC_THREAD_LOCAL /* C99 has no thread-local storage: one buffer per process */
#endif
static BYOC_THREAD_LOCAL char g_last_error[BYOC_LAST_ERROR_SIZE];

void byoc_set_last_error(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  /* vsnprintf truncates and always NUL-terminates for size > 0 */
  if (vsnprintf(g_last_error, sizeof(g_last_error), fmt, ap) < 0) {
    g_last_error[0] = '\0';
  }
  va_end(ap);
}

const char* byoc_get_last_error(void) { return g_last_error; }

void byoc_clear_last_error(void) { g_last_error[0] = '\0'; }

#endif /* BYOC_FREESTANDING */
