/* An engine's side of the C API: writes a dump pass by pass, here with values read from another
 * dump (an engine would record what it computes). `tapdiff compare IN OUT` then matches.
 *
 *   copy_dump IN.h5 MODEL OUT.h5     (MODEL: the GGUF file or Hugging Face folder IN ran) */
#include <stdio.h>
#include <stdlib.h>

#include <tapdiff.h>

static int fail(const char* what, const char* why) {
  fprintf(stderr, "copy_dump: %s: %s\n", what, why);
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 4) return fail("usage", "copy_dump IN.h5 MODEL OUT.h5");
  char error[1024];
  tapdiff_dump* in = tapdiff_dump_open(argv[1], error, sizeof error);
  if (!in) return fail(argv[1], error);
  tapdiff_writer* out = tapdiff_writer_open(argv[3], argv[2], "c-api-example", "f32", error, sizeof error);
  if (!out) return fail(argv[3], error);
  const int64_t rows = tapdiff_dump_rows(in), taps = tapdiff_dump_taps(in);
  int32_t* tokens = malloc(sizeof(int32_t) * (size_t)rows);
  int32_t* positions = malloc(sizeof(int32_t) * (size_t)rows);
  int32_t* chunks = malloc(sizeof(int32_t) * (size_t)rows);
  int* decode = malloc(sizeof(int) * (size_t)rows);
  for (int64_t r = 0; r < rows; ++r) tapdiff_dump_row(in, r, &tokens[r], &positions[r], &chunks[r], &decode[r]);
  for (int64_t first = 0, end; first < rows; first = end) { /* one forward pass: the rows of one chunk */
    for (end = first + 1; end < rows && chunks[end] == chunks[first]; ++end) {
    }
    const int64_t n = end - first;
    if (tapdiff_chunk_begin(out, tokens + first, n, positions + first, decode[first])) break;
    for (int64_t t = 0; t < taps; ++t) {
      int layer;
      const char* op;
      int64_t width;
      tapdiff_dump_tap(in, t, &layer, &op, &width);
      float* values = malloc(sizeof(float) * (size_t)(n * width));
      if (tapdiff_dump_read_f32(in, layer, op, first, n, values)) {
        free(values);
        return fail(argv[1], tapdiff_dump_error(in));
      }
      const int failed = tapdiff_record_f32(out, layer, op, values, n, width);
      free(values);
      if (failed) return fail(argv[3], tapdiff_writer_error(out));
    }
    if (tapdiff_chunk_end(out)) break;
  }
  if (tapdiff_writer_error(out)[0] != '\0') return fail(argv[3], tapdiff_writer_error(out));
  int32_t generated[256];
  const int64_t n_generated = tapdiff_dump_generated(in, generated, 256);
  if (tapdiff_writer_finish(out, generated, n_generated < 256 ? n_generated : 256)) return fail(argv[3], "finish");
  tapdiff_dump_close(in);
  free(tokens), free(positions), free(chunks), free(decode);
  printf("copy_dump: %lld rows, %lld taps written to %s\n", (long long)rows, (long long)taps, argv[3]);
  return 0;
}
