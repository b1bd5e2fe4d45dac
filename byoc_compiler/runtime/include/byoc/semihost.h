/* Arm semihosting: file I/O, console text and the exit status of a bare-metal image run by a debugger
 * or an emulator (qemu-system-arm -semihosting-config enable=on,target=native). Used by the images byoc
 * builds to check a model on a board (docs/bare-metal.md); not part of an exported model. */
#ifndef BYOC_SEMIHOST_H_
#define BYOC_SEMIHOST_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { BYOC_SEMIHOST_READ_BINARY = 1, BYOC_SEMIHOST_WRITE_BINARY = 5 }; /* SYS_OPEN modes "rb", "wb" */

/* A handle (>= 0) of the host file `path`, or -1. */
int32_t byoc_semihost_open(const char* path, int32_t mode);
int32_t byoc_semihost_close(int32_t handle);
/* Length of an open file in bytes, or -1. */
int32_t byoc_semihost_flen(int32_t handle);
/* Bytes transferred (fewer than n at the end of a file or on error). */
size_t byoc_semihost_read(int32_t handle, void* buf, size_t n);
size_t byoc_semihost_write(int32_t handle, const void* buf, size_t n);
/* Text on the host's console (SYS_WRITE0), and a decimal number. */
void byoc_semihost_puts(const char* text);
void byoc_semihost_put_uint(uint32_t value);
/* Ends the run: SYS_EXIT_EXTENDED, so the emulator's exit status is `status` (on M-profile plain
 * SYS_EXIT can only say success or failure). */
void byoc_semihost_exit(int32_t status)
#if defined(__GNUC__)
    __attribute__((noreturn))
#endif
    ;

/* The startup code (baremetal/startup.c) paints the stack; this is the deepest it has been used (bytes)
 * and its size. */
uint32_t byoc_stack_used(void);
uint32_t byoc_stack_size(void);

#ifdef __cplusplus
}
#endif
#endif /* BYOC_SEMIHOST_H_ */
