/* The kernel under test, called by check.c: call your engine's kernel here.
   The op's inputs are arrays of the case (repro.h): "input.LAYER/OP" [rows, width] as the engine had
   them, "kv.k" and "kv.v" (attention: the K and V rows of every position it reads), "weight.KIND"
   (the weights the op reads, as tapdiff holds them), "positions" and "tokens"; the model's config
   is repro_meta(c, "config") (JSON). Write the op's output, [c->rows, c->width] row-major, to out. */
#include <stdio.h>

#include "repro.h"

int repro_kernel(const struct repro_case* c, double* out) {
  (void)out;
  fprintf(stderr, "kernel.c: call your engine's %s kernel here (layer %d) and write its output\n", c->op, c->layer);
  return 1;
}
