/* Arm semihosting calls (the "Semihosting for AArch32 and AArch64" specification): on M-profile a
 * `bkpt 0xab` with the operation in r0 and a pointer to its parameter block in r1; the result in r0. */
#include "byoc/semihost.h"

enum {
  SYS_OPEN = 0x01, SYS_CLOSE = 0x02, SYS_WRITE0 = 0x04, SYS_WRITE = 0x05, SYS_READ = 0x06,
  SYS_FLEN = 0x0C, SYS_EXIT = 0x18, SYS_EXIT_EXTENDED = 0x20
};
#define ADP_STOPPED_APPLICATION_EXIT 0x20026u

static int32_t semihost_call(int32_t op, const void* args) {
  register int32_t r0 __asm__("r0") = op;
  register const void* r1 __asm__("r1") = args;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

static size_t length(const char* s) {
  size_t n = 0;
  while (s[n] != '\0') ++n;
  return n;
}

int32_t byoc_semihost_open(const char* path, int32_t mode) {
  uintptr_t args[3];
  args[0] = (uintptr_t)path;
  args[1] = (uintptr_t)mode;
  args[2] = (uintptr_t)length(path);
  return semihost_call(SYS_OPEN, args);
}

int32_t byoc_semihost_close(int32_t handle) {
  uintptr_t args[1];
  args[0] = (uintptr_t)handle;
  return semihost_call(SYS_CLOSE, args);
}

int32_t byoc_semihost_flen(int32_t handle) {
  uintptr_t args[1];
  args[0] = (uintptr_t)handle;
  return semihost_call(SYS_FLEN, args);
}

/* SYS_READ and SYS_WRITE return the number of bytes NOT transferred. */
static size_t transfer(int32_t op, int32_t handle, const void* buf, size_t n) {
  uintptr_t args[3];
  uint32_t left;
  args[0] = (uintptr_t)handle;
  args[1] = (uintptr_t)buf;
  args[2] = (uintptr_t)n;
  left = (uint32_t)semihost_call(op, args);
  return left > n ? 0 : n - left;
}

size_t byoc_semihost_read(int32_t handle, void* buf, size_t n) { return transfer(SYS_READ, handle, buf, n); }

size_t byoc_semihost_write(int32_t handle, const void* buf, size_t n) {
  return transfer(SYS_WRITE, handle, buf, n);
}

void byoc_semihost_puts(const char* text) { (void)semihost_call(SYS_WRITE0, text); }

void byoc_semihost_put_uint(uint32_t value) {
  char digits[11];
  int i = 10;
  digits[10] = '\0';
  do {
    digits[--i] = (char)('0' + value % 10u);
    value /= 10u;
  } while (value != 0u && i > 0);
  byoc_semihost_puts(&digits[i]);
}

void byoc_semihost_exit(int32_t status) {
  uintptr_t args[2];
  args[0] = ADP_STOPPED_APPLICATION_EXIT;
  args[1] = (uintptr_t)status;
  (void)semihost_call(SYS_EXIT_EXTENDED, args);
  for (;;) {
    /* an emulator without SYS_EXIT_EXTENDED: stay here (the harness's timeout ends the run) */
  }
}
