/* Host byte order detected at run time (no macro guessing) and in-place byte swapping. Internal. */
#ifndef BYOC_ENDIAN_H_
#define BYOC_ENDIAN_H_

#include <stddef.h>
#include <stdint.h>

static inline int byoc_host_is_big_endian(void) {
  const union { uint16_t u; unsigned char b[2]; } probe = {0x0102u};
  return probe.b[0] == 0x01;
}

/* Reverses the bytes of each of n elements of elem_size bytes. */
static inline void byoc_swap_elements(void* data, size_t n, size_t elem_size) {
  unsigned char* p = (unsigned char*)data;
  size_t i, k;
  if (elem_size < 2) return;
  for (i = 0; i < n; ++i, p += elem_size) {
    for (k = 0; k < elem_size / 2; ++k) {
      unsigned char t = p[k];
      p[k] = p[elem_size - 1 - k];
      p[elem_size - 1 - k] = t;
    }
  }
}

/* Little-endian readers for byte streams, independent of host order. */
static inline uint16_t byoc_read_le16(const unsigned char* p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t byoc_read_le32(const unsigned char* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t byoc_read_le64(const unsigned char* p) {
  return (uint64_t)byoc_read_le32(p) | ((uint64_t)byoc_read_le32(p + 4) << 32);
}

#endif /* BYOC_ENDIAN_H_ */
