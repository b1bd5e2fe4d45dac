/* Reset and fault handling of the bare-metal images byoc builds (Armv7-M, Armv8-M and Armv8.1-M):
 * the vector table, .data copied from its load address, .bss cleared, the FPU (and Helium) enabled on
 * cores that have one, the stack painted so its high-water mark can be read after a run, then main();
 * its return value is the emulator's exit status (semihosting). The symbols come from the linker script
 * byoc writes from the board's memory regions (byoc_compiler/linker_script.py). */
#include <stdint.h>

#include "byoc/semihost.h"

extern uint32_t __data_load[], __data_start[], __data_end[], __bss_start[], __bss_end[];
extern uint32_t __stack_limit[], __stack_top[];
int main(void);
void byoc_reset_handler(void);
void byoc_fault_handler(void);

#define STACK_PAINT 0xC0DEC0DEu
#define CPACR (*(volatile uint32_t*)0xE000ED88u) /* coprocessor access control */
#define CFSR (*(volatile uint32_t*)0xE000ED28u)  /* configurable fault status */

typedef void (*byoc_handler)(void);

/* The initial stack pointer, then reset, NMI, HardFault, MemManage, BusFault, UsageFault; the rest of the
 * system exceptions are not used by a model run and go to the fault handler too. */
__attribute__((section(".vectors"), used)) const byoc_handler byoc_vectors[16] = {
    (byoc_handler)(uintptr_t)__stack_top, byoc_reset_handler, byoc_fault_handler, byoc_fault_handler,
    byoc_fault_handler, byoc_fault_handler, byoc_fault_handler, 0, 0, 0, 0,
    byoc_fault_handler, byoc_fault_handler, 0, byoc_fault_handler, byoc_fault_handler};

static void paint_stack(void) {
  volatile uint32_t* p = __stack_limit;
  uint32_t sp;
  __asm__ volatile("mov %0, sp" : "=r"(sp));
  /* up to a little below the live frame of this function */
  while ((uintptr_t)p + 64u < (uintptr_t)sp) *p++ = STACK_PAINT;
}

__attribute__((noreturn)) void byoc_reset_handler(void) {
  volatile uint32_t* dst;
  const volatile uint32_t* src;
#if defined(__ARM_FP) || defined(__ARM_FEATURE_MVE)
  /* CP10 and CP11 full access, before any floating-point or vector instruction runs */
  CPACR |= 0xFu << 20;
  __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif
  for (dst = __data_start, src = __data_load; dst < __data_end;) *dst++ = *src++;
  for (dst = __bss_start; dst < __bss_end;) *dst++ = 0u;
  paint_stack();
  byoc_semihost_exit(main());
}

uint32_t byoc_stack_size(void) { return (uint32_t)((uintptr_t)__stack_top - (uintptr_t)__stack_limit); }

uint32_t byoc_stack_used(void) {
  const volatile uint32_t* p = __stack_limit;
  while (p < __stack_top && *p == STACK_PAINT) ++p;
  return (uint32_t)((uintptr_t)__stack_top - (uintptr_t)p);
}

void byoc_fault_handler(void) {
  byoc_semihost_puts("byoc: the image faulted (HardFault or another fault exception); CFSR=");
  byoc_semihost_put_uint(CFSR);
  byoc_semihost_puts("\n");
  byoc_semihost_exit(70);
}
