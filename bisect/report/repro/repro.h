/* The case check.c loads from case.safetensors, for kernel.c: every array as doubles, by name. */
#ifndef TAPDIFF_REPRO_H
#define TAPDIFF_REPRO_H

#include <stdint.h>

struct repro_array {
  char name[128]; /* "input.0/rope_q", "kv.k", "weight.wq", "positions", "tokens", "output.reference", ... */
  int rank;
  int64_t shape[4];
  int64_t size; /* elements */
  double* data; /* row-major */
};

struct repro_case {
  const char* op; /* "rope_q": the op's name in tapdiff dumps */
  int layer;
  int64_t rows, width; /* of the op's output */
  int count;
  struct repro_array* arrays;
  char **meta_keys, **meta_values; /* the file's metadata: config (JSON), tolerance, ... */
  int meta_count;
};

/* The array of that name, or NULL. */
const struct repro_array* repro_find(const struct repro_case* c, const char* name);
/* The metadata value of that key, or NULL. */
const char* repro_meta(const struct repro_case* c, const char* key);

/* kernel.c: the engine's kernel on the case's inputs, its output into out [rows * width].
   Returns 0, or nonzero when it cannot run (check prints the reason you print, and exits 2). */
int repro_kernel(const struct repro_case* c, double* out);

#endif
