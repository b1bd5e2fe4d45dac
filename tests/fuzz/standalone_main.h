/* main() for a fuzz target built without libFuzzer (gcc, or clang without its fuzzer runtime): runs each
 * file named on the command line once through LLVMFuzzerTestOneInput (regressions and seeds). */
#ifndef BYOC_FUZZ_STANDALONE_MAIN_H_
#define BYOC_FUZZ_STANDALONE_MAIN_H_
#ifdef BYOC_FUZZ_STANDALONE
#include <stdio.h>
#include <stdlib.h>

static unsigned char* fuzz_read_file(const char* path, size_t* len) {
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

int main(int argc, char** argv) {
  int i;
  for (i = 1; i < argc; ++i) {
    size_t len = 0;
    unsigned char* buf = fuzz_read_file(argv[i], &len);
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
#endif /* BYOC_FUZZ_STANDALONE_MAIN_H_ */
