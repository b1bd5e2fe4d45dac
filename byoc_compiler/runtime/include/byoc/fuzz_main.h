/* main() for a fuzz target built without libFuzzer (gcc, or clang without its fuzzer runtime), shared by
 * the runtime's fuzz targets (tests/fuzz) and the targets' (targets/<name>/fuzz). Include it after
 * LLVMFuzzerTestOneInput; it compiles to nothing unless BYOC_FUZZ_STANDALONE is defined. The program
 *   - runs each file named on the command line once (regressions and seeds), or
 *   - with `--mutate SECONDS SEED FILE...`, mutates the files for SECONDS of CPU time, deterministically
 *     for a SEED, for machines without libFuzzer.
 * Mutations insert words of BYOC_FUZZ_WORDS (define it as the name of a `static const char* const []`
 * of the format's tokens before including; a few generic ones otherwise). */
#ifndef BYOC_FUZZ_MAIN_H_
#define BYOC_FUZZ_MAIN_H_
#ifdef BYOC_FUZZ_STANDALONE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef BYOC_FUZZ_WORDS
static const char* const byoc_fuzz_generic_words[] = {" ", "\n", ":", ",", "0", "1", "-1", "2147483648"};
#define BYOC_FUZZ_WORDS byoc_fuzz_generic_words
#endif

static unsigned char* byoc_fuzz_read_file(const char* path, size_t* len) {
  FILE* f = fopen(path, "rb");
  unsigned char* buf;
  long n;
  if (f == NULL) return NULL;
  if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return NULL;
  }
  buf = (unsigned char*)malloc(n > 0 ? (size_t)n : 1);
  *len = buf ? fread(buf, 1, (size_t)n, f) : 0;
  fclose(f);
  return buf;
}

static uint64_t byoc_fuzz_rng_state;
static uint64_t byoc_fuzz_rand(void) { /* xorshift64*: deterministic for a seed */
  byoc_fuzz_rng_state ^= byoc_fuzz_rng_state >> 12;
  byoc_fuzz_rng_state ^= byoc_fuzz_rng_state << 25;
  byoc_fuzz_rng_state ^= byoc_fuzz_rng_state >> 27;
  return byoc_fuzz_rng_state * 2685821657736338717ULL;
}

/* One mutation of buf[0..len) into out (capacity cap >= len); returns the new length. */
static size_t byoc_fuzz_mutate(const unsigned char* buf, size_t len, unsigned char* out, size_t cap) {
  size_t pos = len ? (size_t)(byoc_fuzz_rand() % (len + 1)) : 0, n, span;
  const char* w;
  switch (byoc_fuzz_rand() % 6) {
    case 0: /* overwrite a byte */
      memcpy(out, buf, len);
      if (len) out[pos % len] = (unsigned char)byoc_fuzz_rand();
      return len;
    case 1: /* delete a span */
      span = (size_t)(byoc_fuzz_rand() % 16);
      if (pos + span > len) span = len - pos;
      memcpy(out, buf, pos);
      memcpy(out + pos, buf + pos + span, len - pos - span);
      return len - span;
    case 2: /* insert a word */
    case 3:
      w = BYOC_FUZZ_WORDS[byoc_fuzz_rand() % (sizeof(BYOC_FUZZ_WORDS) / sizeof(BYOC_FUZZ_WORDS[0]))];
      n = strlen(w);
      if (len + n > cap) n = 0;
      memcpy(out, buf, pos);
      memcpy(out + pos, w, n);
      memcpy(out + pos + n, buf + pos, len - pos);
      return len + n;
    case 4: /* duplicate a span */
      span = (size_t)(byoc_fuzz_rand() % 64);
      if (pos + span > len) span = len - pos;
      if (len + span > cap) span = 0;
      memcpy(out, buf, pos + span);
      memcpy(out + pos + span, buf + pos, len - pos);
      return len + span;
    default: /* truncate */
      memcpy(out, buf, pos);
      return pos;
  }
}

static int byoc_fuzz_mutation_loop(double seconds, uint64_t seed, int nseeds, char** paths) {
  unsigned long long execs = 0;
  unsigned char** seeds = (unsigned char**)calloc((size_t)nseeds + 1, sizeof(unsigned char*));
  size_t* lens = (size_t*)calloc((size_t)nseeds + 1, sizeof(size_t));
  const size_t cap = (size_t)1 << 20;
  unsigned char* cur = (unsigned char*)malloc(cap);
  unsigned char* next = (unsigned char*)malloc(cap);
  clock_t start = clock();
  int i, status = 0;
  byoc_fuzz_rng_state = seed | 1u;
  if (seeds == NULL || lens == NULL || cur == NULL || next == NULL) status = 2;
  for (i = 0; i < nseeds && status == 0; ++i) {
    seeds[i] = byoc_fuzz_read_file(paths[i], &lens[i]);
    if (seeds[i] == NULL || lens[i] > cap / 2) {
      fprintf(stderr, "fuzz: cannot use seed %s\n", paths[i]);
      status = 2;
    }
  }
  while (status == 0 && nseeds > 0 && (double)(clock() - start) / CLOCKS_PER_SEC < seconds) {
    int s = (int)(byoc_fuzz_rand() % (uint64_t)nseeds), k, rounds = 1 + (int)(byoc_fuzz_rand() % 8);
    size_t len = lens[s];
    memcpy(cur, seeds[s], len);
    for (k = 0; k < rounds; ++k) {
      unsigned char* t;
      len = byoc_fuzz_mutate(cur, len, next, cap / 2);
      t = cur, cur = next, next = t;
      LLVMFuzzerTestOneInput(cur, len);
      ++execs;
    }
  }
  if (status == 0) printf("executions=%llu crashes=0\n", execs);
  for (i = 0; seeds != NULL && i < nseeds; ++i) free(seeds[i]);
  free(seeds), free(lens), free(cur), free(next);
  return status;
}

int main(int argc, char** argv) {
  int i;
  if (argc >= 4 && strcmp(argv[1], "--mutate") == 0) {
    return byoc_fuzz_mutation_loop(atof(argv[2]), (uint64_t)strtoull(argv[3], NULL, 10), argc - 4, argv + 4);
  }
  for (i = 1; i < argc; ++i) {
    size_t len = 0;
    unsigned char* buf = byoc_fuzz_read_file(argv[i], &len);
    if (buf == NULL) {
      fprintf(stderr, "fuzz: cannot read %s\n", argv[i]);
      return 2;
    }
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
  }
  printf("ran %d inputs\n", argc - 1);
  return 0;
}
#endif
#endif /* BYOC_FUZZ_MAIN_H_ */
