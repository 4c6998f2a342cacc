/* tapdiff's C API: write a dump (docs/dump-format.md) from an engine in C, C++, Rust, Swift or
 * anything with a C FFI, for `tapdiff compare ref.h5 mine.h5 --model MODEL`; read one back.
 *
 *   char error[512];
 *   tapdiff_writer* w = tapdiff_writer_open("mine.h5", "model.gguf", "my-engine", "f32", error, sizeof error);
 *   tapdiff_chunk_begin(w, tokens, 64, NULL, 0);          // a prefill chunk of 64 tokens
 *   tapdiff_record_f32(w, 0, "q_proj", q, 64, 4096);    // [rows, width] row-major, each op once
 *   ...
 *   tapdiff_chunk_end(w);                                // the chunk's rows become durable
 *   tapdiff_writer_finish(w, generated, n_generated);    // complete = 1, closed, freed
 *
 * Every function but tapdiff_writer_open and tapdiff_dump_open returns 0 on success and nonzero
 * on failure, with the reason in tapdiff_writer_error / tapdiff_dump_error (naming the op, the
 * shape expected and found, ...). A writer dropped with tapdiff_writer_close before finishing
 * leaves a dump that reads up to its last ended chunk (complete = 0). Link with tapdiff::tapdiff
 * (CMake: find_package(tapdiff)). */
#ifndef TAPDIFF_H
#define TAPDIFF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tapdiff_writer tapdiff_writer;
typedef struct tapdiff_dump tapdiff_dump;

/* Creates `path` for a run of `model` (a GGUF file or a Hugging Face folder: its config, sha256
 * and tap widths are read from it). compute_dtype: what the engine computed in ("f32", "f16",
 * "bf16", "f64"); values are stored as f32 (f64 when compute_dtype is "f64"). NULL on failure,
 * with the reason in error (error_size bytes, may be 0). */
tapdiff_writer* tapdiff_writer_open(const char* path, const char* model, const char* engine, const char* compute_dtype,
                                    char* error, size_t error_size);
/* A forward pass over n tokens: a prefill chunk, or (decode != 0) one decode step's token.
 * positions: the position of each token, or NULL to continue the sequence. */
int tapdiff_chunk_begin(tapdiff_writer* w, const int32_t* tokens, int64_t n, const int32_t* positions, int decode);
/* One op's output in the open chunk: rows x width values, row-major; layer -1 for embed,
 * n_layers for final_norm and logits. */
int tapdiff_record_f32(tapdiff_writer* w, int layer, const char* op, const float* values, int64_t rows, int64_t width);
int tapdiff_record_f64(tapdiff_writer* w, int layer, const char* op, const double* values, int64_t rows, int64_t width);
int tapdiff_chunk_end(tapdiff_writer* w);
/* Writes the generated tokens, marks the dump complete, closes and frees w (even on failure). */
int tapdiff_writer_finish(tapdiff_writer* w, const int32_t* generated, int64_t n_generated);
/* Closes and frees w without finishing: the dump stays incomplete. NULL is allowed. */
void tapdiff_writer_close(tapdiff_writer* w);
/* The last failure's message ("" when none); valid until the next call on w. */
const char* tapdiff_writer_error(const tapdiff_writer* w);

/* Opens a tapdiff dump for reading. NULL on failure, with the reason in error. */
tapdiff_dump* tapdiff_dump_open(const char* path, char* error, size_t error_size);
int64_t tapdiff_dump_rows(const tapdiff_dump* d);
/* Row r's token, position, chunk (the forward pass it was fed in) and decode flag (0 or 1); any
 * pointer may be NULL. */
int tapdiff_dump_row(const tapdiff_dump* d, int64_t row, int32_t* token, int32_t* position, int32_t* chunk,
                     int* decode);
/* The number of taps, and tap i's layer and op name (valid while d is open). */
int64_t tapdiff_dump_taps(const tapdiff_dump* d);
int tapdiff_dump_tap(const tapdiff_dump* d, int64_t i, int* layer, const char** op, int64_t* width);
/* Rows [first_row, first_row + rows) of a tap as f32 into out (rows x width values). */
int tapdiff_dump_read_f32(tapdiff_dump* d, int layer, const char* op, int64_t first_row, int64_t rows, float* out);
/* The dump's model file as it names it, its generated tokens (count, then up to max of them). */
const char* tapdiff_dump_model_path(const tapdiff_dump* d);
int64_t tapdiff_dump_generated(const tapdiff_dump* d, int32_t* tokens, int64_t max);
const char* tapdiff_dump_error(const tapdiff_dump* d);
void tapdiff_dump_close(tapdiff_dump* d);

#ifdef __cplusplus
}
#endif

#endif /* TAPDIFF_H */
