/* byoc runtime core: what every model calls, in both runtime profiles (docs/bare-metal.md).
 * C99 with <stdint.h> and <stddef.h> only: the freestanding profile (BYOC_FREESTANDING, bare metal)
 * compiles this and nothing else of the runtime; the hosted runtime (runtime.h) builds on it. */
#ifndef BYOC_CORE_H_
#define BYOC_CORE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- error codes: what a model's <mod>_run returns (0 on success) ----------------------------- */
enum {
  BYOC_OK = 0,
  BYOC_ERROR_STEP = -1,      /* a step (kernel, region) failed; byoc_get_last_error() says which and why */
  BYOC_ERROR_NULL = -2,      /* a NULL struct, input, output or workspace pool */
  BYOC_ERROR_ALIGNMENT = -3, /* a buffer not aligned as the model header asks */
  BYOC_ERROR_POOL_SIZE = -4  /* a workspace pool smaller than the model header's <MOD>_<POOL>_SIZE */
};

/* ---- last error ------------------------------------------------------------------------------
 * Hosted: printf-style, formatted into one buffer per thread (thread-local where the compiler has it:
 * gcc, clang), truncated, never allocated. Freestanding: no formatting and no stdio -- the message is
 * the static text given (its format directives left as written), readable without printf. */
#define BYOC_LAST_ERROR_SIZE 1024
#if (defined(__GNUC__) || defined(__clang__)) && !defined(BYOC_FREESTANDING)
#define BYOC_PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define BYOC_PRINTF_LIKE(f, a)
#endif
void byoc_set_last_error(const char* fmt, ...) BYOC_PRINTF_LIKE(1, 2);
const char* byoc_get_last_error(void); /* "" when no error was set */
void byoc_clear_last_error(void);

#ifdef __cplusplus
}
#endif
#endif /* BYOC_CORE_H_ */
