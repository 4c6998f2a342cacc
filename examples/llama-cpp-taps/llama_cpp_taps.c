/* llama.cpp's intermediate values through its eval callback, written as a folder of safetensors
 * files that `tapdiff compare ... --map llama.cpp` reads (docs/import.md).
 *
 *   llama_cpp_taps MODEL.gguf OUT_DIR TOKEN,TOKEN,... [--chunk N] [--generate N] [--all]
 *                  [--backends DIR] [--gpu-layers N]
 *
 * Evaluates the tokens as one sequence in llama_decode calls of --chunk tokens (default 512; every
 * row's logits computed), then picks --generate greedy tokens, feeding each but the last back in a
 * llama_decode call of its own (as `tapdiff run --generate`), prints the tokens, and writes
 * each call's tensors as OUT_DIR/pass_N.safetensors: `tokens`, `positions` and `decode` (I32), and
 * the tensors the llama.cpp map reads (with --all, every named tensor of the graph), F32 (the
 * chosen experts' ids too), [rows, width]. A name the graph gives twice keeps the last tensor
 * (Qcur and Kcur after RoPE). Flash attention is off. --backends loads ggml's backends from a
 * folder (a build with GGML_BACKEND_DL, such as npm's node-llama-cpp); otherwise those linked in
 * are used.
 * --gpu-layers offloads that many layers (and, when it is at least the model's layer count plus
 * one, the output) to the GPU backend (llama.cpp's n_gpu_layers; default 0: the CPU backend runs
 * everything). Tensors a GPU computes are read back from its memory. */
#include <ggml-backend.h>
#include <ggml.h>
#include <llama.h>

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  char name[GGML_MAX_NAME];
  int64_t rows, width;
  float* values;
} Tap;

typedef struct {
  Tap* taps;
  size_t count, capacity;
  bool all;
  int64_t tokens; /* the rows of the llama_decode call under way */
} Taps;

/* The names docs/import.md's llama.cpp map knows, each followed by "-LAYER" or nothing. */
static const char* const kMapNames[] = {"embd",
                                        "inp_embd",
                                        "inp_scaled",
                                        "attn_norm",
                                        "wqkv",
                                        "Qcur",
                                        "Kcur",
                                        "Vcur",
                                        "q",
                                        "kv_cmpr_pe",
                                        "kv_cmpr",
                                        "k_pe",
                                        "kqv_out",
                                        "attn_out",
                                        "ffn_inp",
                                        "ffn_norm",
                                        "ffn_gate",
                                        "ffn_up",
                                        "ffn_gate_b",
                                        "ffn_up_b",
                                        "ffn_swiglu",
                                        "ffn_geglu",
                                        "ffn_out",
                                        "l_out",
                                        "attn_post_norm",
                                        "result_norm",
                                        "result_output",
                                        "ffn_moe_logits",
                                        "ffn_moe_probs",
                                        "ffn_moe_probs_biased",
                                        "ffn_moe_topk",
                                        "ffn_moe_weights",
                                        "ffn_moe_weights_norm",
                                        "ffn_moe_weights_scaled",
                                        "ffn_moe_weights_softmax",
                                        "ffn_moe_out",
                                        "Qcur_normed",
                                        "Kcur_normed",
                                        "ffn_moe_shexp",
                                        "ffn_moe_out_merged"};

static void die(const char* what) {
  fprintf(stderr, "llama_cpp_taps: %s\n", what);
  exit(1);
}

static void* checked(void* p) {
  if (!p) die("out of memory");
  return p;
}

/* A name of the map: one of kMapNames, alone or followed by "-" and the layer's digits (not a view
 * such as "Kcur-0 (view)"). */
static bool wanted(const Taps* taps, const char* name) {
  if (taps->all) return name[0] != '\0';
  for (size_t i = 0; i < sizeof kMapNames / sizeof kMapNames[0]; ++i) {
    size_t n = strlen(kMapNames[i]);
    if (strncmp(name, kMapNames[i], n) != 0) continue;
    if (name[n] == '\0') return true;
    if (name[n] != '-' || !isdigit((unsigned char)name[n + 1])) continue;
    const char* p = name + n + 1;
    while (isdigit((unsigned char)*p)) ++p;
    if (*p == '\0') return true;
  }
  return false;
}

static Tap* slot(Taps* taps, const char* name) {
  for (size_t i = 0; i < taps->count; ++i)
    if (strcmp(taps->taps[i].name, name) == 0) return &taps->taps[i];
  if (taps->count == taps->capacity) {
    taps->capacity = taps->capacity ? 2 * taps->capacity : 64;
    taps->taps = checked(realloc(taps->taps, taps->capacity * sizeof(Tap)));
  }
  Tap* tap = &taps->taps[taps->count++];
  memset(tap, 0, sizeof *tap);
  snprintf(tap->name, sizeof tap->name, "%s", name);
  return tap;
}

static void clear(Taps* taps) {
  for (size_t i = 0; i < taps->count; ++i) free(taps->taps[i].values);
  taps->count = 0;
}

/* A tensor holds one row per token of the call: its elements split into that many rows (Qcur's
 * [head_dim, heads, tokens], the experts' weights [1, k, tokens]); one that does not split so is
 * not kept. Kept: F32 and I32 tensors (the chosen experts' ids, as floats), contiguous or 2-D views
 * of one row per token, rows apart (the top-k of an argsort). */
static bool on_tensor(struct ggml_tensor* t, bool ask, void* user) {
  Taps* taps = user;
  if (!wanted(taps, ggml_get_name(t))) return false;
  if (ask) return true;
  if ((t->type != GGML_TYPE_F32 && t->type != GGML_TYPE_I32) || t->nb[0] != 4) return true;
  const bool contiguous = ggml_is_contiguous(t);
  const int64_t rows = taps->tokens;
  if (rows <= 0 || ggml_nelements(t) % rows != 0) return true;
  if (!contiguous && (t->ne[2] > 1 || t->ne[3] > 1 || t->ne[1] != rows)) return true;
  Tap* tap = slot(taps, ggml_get_name(t));
  tap->rows = rows;
  tap->width = ggml_nelements(t) / rows;
  free(tap->values);
  tap->values = checked(malloc((size_t)ggml_nelements(t) * sizeof(float)));
  if (contiguous)
    ggml_backend_tensor_get(t, tap->values, 0, ggml_nbytes(t));
  else
    for (int64_t r = 0; r < rows; ++r)
      ggml_backend_tensor_get(t, tap->values + r * tap->width, (size_t)r * t->nb[1], (size_t)tap->width * 4);
  if (t->type == GGML_TYPE_I32)
    for (int64_t i = 0; i < ggml_nelements(t); ++i) {
      int32_t id;
      memcpy(&id, &tap->values[i], sizeof id);
      tap->values[i] = (float)id;
    }
  return true;
}

/* safetensors: an 8-byte header length, the JSON header (padded with spaces to 8 bytes), data. */
static void write_pass(const char* path, const Taps* taps, const int32_t* provenance, int rows) {
  size_t capacity = 512 + taps->count * (GGML_MAX_NAME + 96), length = 0, offset = 12 * (size_t)rows;
  char* header = checked(malloc(capacity));
  length += snprintf(header + length, capacity - length,
                     "{\"tokens\":{\"dtype\":\"I32\",\"shape\":[%d],\"data_offsets\":[0,%zu]},"
                     "\"positions\":{\"dtype\":\"I32\",\"shape\":[%d],\"data_offsets\":[%zu,%zu]},"
                     "\"decode\":{\"dtype\":\"I32\",\"shape\":[%d],\"data_offsets\":[%zu,%zu]}",
                     rows, 4 * (size_t)rows, rows, 4 * (size_t)rows, 8 * (size_t)rows, rows, 8 * (size_t)rows, offset);
  for (size_t i = 0; i < taps->count; ++i) {
    const Tap* tap = &taps->taps[i];
    size_t bytes = 4 * (size_t)(tap->rows * tap->width);
    length += snprintf(header + length, capacity - length,
                       ",\"%s\":{\"dtype\":\"F32\",\"shape\":[%lld,%lld],\"data_offsets\":[%zu,%zu]}", tap->name,
                       (long long)tap->rows, (long long)tap->width, offset, offset + bytes);
    offset += bytes;
  }
  length += snprintf(header + length, capacity - length, "}");
  while (length % 8) header[length++] = ' ';
  FILE* out = fopen(path, "wb");
  if (!out) die("cannot create an output file (does OUT_DIR exist?)");
  uint64_t size = length;
  bool ok = fwrite(&size, 8, 1, out) == 1 && fwrite(header, 1, length, out) == length &&
            fwrite(provenance, 4, 3 * (size_t)rows, out) == 3 * (size_t)rows;
  for (size_t i = 0; ok && i < taps->count; ++i) {
    size_t n = (size_t)(taps->taps[i].rows * taps->taps[i].width);
    ok = fwrite(taps->taps[i].values, 4, n, out) == n;
  }
  if (fclose(out) != 0 || !ok) die("cannot write an output file");
  free(header);
}

/* One llama_decode call over tokens [0, rows) at positions first.., written as pass `pass`. */
static void run_pass(struct llama_context* context, struct llama_batch* batch, Taps* taps, const char* out_dir,
                     int pass, const int32_t* tokens, int first, int rows, bool decode) {
  int32_t* provenance = checked(malloc(12 * (size_t)rows));
  batch->n_tokens = rows;
  for (int i = 0; i < rows; ++i) {
    batch->token[i] = provenance[i] = tokens[i];
    batch->pos[i] = provenance[rows + i] = first + i;
    provenance[2 * rows + i] = decode;
    batch->n_seq_id[i] = 1;
    batch->seq_id[i][0] = 0;
    batch->logits[i] = 1;
  }
  clear(taps);
  taps->tokens = rows;
  if (llama_decode(context, *batch) != 0) die("llama_decode failed");
  char path[4096];
  snprintf(path, sizeof path, "%s/pass_%d.safetensors", out_dir, pass);
  write_pass(path, taps, provenance, rows);
  free(provenance);
}

int main(int argc, char** argv) {
  if (argc < 4)
    die("usage: llama_cpp_taps MODEL.gguf OUT_DIR TOKEN,TOKEN,... [--chunk N] [--generate N] [--all] "
        "[--backends DIR] [--gpu-layers N]");
  Taps taps = {0};
  int chunk = 512, generate = 0, gpu_layers = 0;
  const char* backends = NULL;
  for (int i = 4; i < argc; ++i) {
    if (strcmp(argv[i], "--all") == 0)
      taps.all = true;
    else if (strcmp(argv[i], "--chunk") == 0 && i + 1 < argc)
      chunk = atoi(argv[++i]);
    else if (strcmp(argv[i], "--generate") == 0 && i + 1 < argc)
      generate = atoi(argv[++i]);
    else if (strcmp(argv[i], "--backends") == 0 && i + 1 < argc)
      backends = argv[++i];
    else if (strcmp(argv[i], "--gpu-layers") == 0 && i + 1 < argc)
      gpu_layers = atoi(argv[++i]);
    else
      die("unknown option (expected --chunk N, --generate N, --all, --backends DIR, --gpu-layers N)");
  }
  if (chunk <= 0 || generate < 0 || gpu_layers < 0)
    die("--chunk must be positive, --generate and --gpu-layers not negative");
  int count = 1;
  for (const char* p = argv[3]; *p; ++p) count += *p == ',';
  int32_t* tokens = checked(malloc(sizeof(int32_t) * (size_t)(count + generate)));
  char* p = argv[3];
  for (int i = 0; i < count; ++i) {
    char* end = NULL;
    tokens[i] = (int32_t)strtol(p, &end, 10);
    if (end == p || (*end != ',' && *end != '\0')) die("TOKENS: expected comma-separated token ids");
    p = *end == ',' ? end + 1 : end;
  }

  if (backends) ggml_backend_load_all_from_path(backends);
  llama_backend_init();
  struct llama_model_params model_params = llama_model_default_params();
  model_params.n_gpu_layers = gpu_layers;
  struct llama_model* model = llama_model_load_from_file(argv[1], model_params);
  if (!model) die("cannot load the model");
  struct llama_context_params params = llama_context_default_params();
  params.n_ctx = (uint32_t)(count + generate + 8);
  params.n_batch = params.n_ubatch = (uint32_t)chunk;
  params.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  const long cores = sysconf(_SC_NPROCESSORS_ONLN); /* llama.cpp's default of 4 spins on fewer cores */
  params.n_threads = params.n_threads_batch = cores > 0 && cores < 4 ? (int32_t)cores : 4;
  params.cb_eval = on_tensor;
  params.cb_eval_user_data = &taps;
  struct llama_context* context = llama_init_from_model(model, params);
  if (!context) die("cannot create a context");

  struct llama_batch batch = llama_batch_init(chunk, 0, 1);
  const int vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  int pass = 0, rows = 0;
  for (int first = 0; first < count; first += chunk) {
    rows = count - first < chunk ? count - first : chunk;
    run_pass(context, &batch, &taps, argv[2], pass++, tokens + first, first, rows, false);
  }
  for (int step = 0; step < generate; ++step) {
    const float* logits = llama_get_logits_ith(context, rows - 1);
    int best = 0;
    for (int t = 1; t < vocab; ++t)
      if (logits[t] > logits[best]) best = t;
    tokens[count + step] = best;
    rows = 1;
    if (step + 1 < generate)  // as `tapdiff run --generate`: the last token is not fed back
      run_pass(context, &batch, &taps, argv[2], pass++, tokens + count + step, count + step, 1, true);
  }
  for (int i = 0; i < count + generate; ++i) printf("%s%d", i ? "," : "", tokens[i]);
  printf("\n");
  clear(&taps);
  free(taps.taps);
  free(tokens);
  llama_batch_free(batch);
  llama_free(context);
  llama_model_free(model);
  return 0;
}
