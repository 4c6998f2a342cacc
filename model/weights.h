#pragma once
// A loaded model: its config, its weight tensors (views into memory-mapped files, never copied),
// and the tokenizer vocabulary when the file carries one.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <future>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"
#include "model/dtype.h"
#include "model/ops.h"
#include "model/unicode_normalization.h"

namespace tapdiff::model {

// The weights of a decoder, named once; which of them a model has is its block's choice
// (model/block.h). Per-layer kinds use layer >= 0; the others use layer -1.
enum class WeightKind : std::uint8_t {
  token_embd,      // [vocab, dim]
  attn_norm,       // [dim]     (pre_norms only)
  wq,              // [q_dim, dim]
  wk,              // [kv_dim, dim]
  wv,              // [kv_dim, dim]
  bq,              // [q_dim]   (qkv_bias only)
  bk,              // [kv_dim]  (qkv_bias only)
  bv,              // [kv_dim]  (qkv_bias only)
  q_norm,          // [head_dim] (qk_norm per_head: one weight shared by every query head), [q_dim] (whole)
  k_norm,          // [head_dim] or [kv_dim], as q_norm
  wo,              // [dim, q_dim]
  bo,              // [dim]     (o_bias only)
  attn_post_norm,  // [dim]     (post_norms only)
  ffn_norm,        // [dim]     (pre_norms only, as attn_norm)
  ffn_gate,        // [ffn_dim, dim]
  ffn_up,          // [ffn_dim, dim]
  ffn_down,        // [dim, ffn_dim]
  b_gate,          // [ffn_dim] (mlp_bias only)
  b_up,            // [ffn_dim] (mlp_bias only)
  b_down,          // [dim]     (mlp_bias only)
  ffn_post_norm,   // [dim]   (post_norms only)
  moe_router,      // [experts.count, dim]                       (MoE layers, in place of ffn_gate ... b_down)
  expert_gate,     // [experts.count * experts.ffn_dim, dim]: expert e's rows [e * ffn_dim, (e + 1) * ffn_dim)
  expert_up,       // [experts.count * experts.ffn_dim, dim]
  expert_down,     // [experts.count * dim, experts.ffn_dim]: expert e's rows [e * dim, (e + 1) * dim)
  output_norm,     // [dim]
  output,          // [vocab, dim] (absent when tied_output)
};
std::string_view weight_kind_name(WeightKind kind);
bool is_per_layer(WeightKind kind);
// A norm weight or a bias (1-D), as opposed to a matrix.
bool is_vector(WeightKind kind);
// The matrix an op multiplies its input by and the bias it adds, where the model has one: q_proj
// (wq, bq) ... ffn_down (ffn_down, b_down), moe_router, and logits (output, or token_embd where
// tied); nullopt for an op without a matrix product. Both engines map ops to weights by it.
struct OpWeights {
  WeightKind matrix;
  std::optional<WeightKind> bias;
};
std::optional<OpWeights> op_weights(Op op, const ModelConfig& c);

// An RMSNorm weight (scaled by norm_offset + w: model/block.h).
bool is_norm(WeightKind kind);

// Every kind, in the enum's order.
inline constexpr WeightKind kAllWeightKinds[] = {WeightKind::token_embd,
                                                 WeightKind::attn_norm,
                                                 WeightKind::wq,
                                                 WeightKind::wk,
                                                 WeightKind::wv,
                                                 WeightKind::bq,
                                                 WeightKind::bk,
                                                 WeightKind::bv,
                                                 WeightKind::q_norm,
                                                 WeightKind::k_norm,
                                                 WeightKind::wo,
                                                 WeightKind::bo,
                                                 WeightKind::attn_post_norm,
                                                 WeightKind::ffn_norm,
                                                 WeightKind::ffn_gate,
                                                 WeightKind::ffn_up,
                                                 WeightKind::ffn_down,
                                                 WeightKind::b_gate,
                                                 WeightKind::b_up,
                                                 WeightKind::b_down,
                                                 WeightKind::ffn_post_norm,
                                                 WeightKind::moe_router,
                                                 WeightKind::expert_gate,
                                                 WeightKind::expert_up,
                                                 WeightKind::expert_down,
                                                 WeightKind::output_norm,
                                                 WeightKind::output};
static_assert(std::size(kAllWeightKinds) == static_cast<std::size_t>(WeightKind::output) + 1);

// One weight tensor as stored: row-major [rows, cols] (cols contiguous; a 1-D tensor has rows = 1).
// For matrices rows = output features and cols = input features, so y = W x. Its rows lie in one
// span of a mapped file, or, for the experts of a model that stores each expert apart, in parts of
// equal row counts (stacked in order: part i holds rows [i * part_rows, (i + 1) * part_rows)).
struct WeightTensor {
  std::string name;  // name in the file, for messages
  DType dtype = DType::f32;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::span<const std::byte> bytes;               // rows * row_bytes(dtype, cols) bytes; empty when in parts
  std::vector<std::span<const std::byte>> parts;  // rows / parts.size() rows each; empty when in bytes

  const std::byte* row(std::int64_t r) const {
    const std::size_t size = row_bytes(dtype, cols);
    if (parts.empty()) return bytes.data() + static_cast<std::size_t>(r) * size;
    const std::int64_t part_rows = rows / std::ssize(parts);
    return parts[static_cast<std::size_t>(r / part_rows)].data() + static_cast<std::size_t>(r % part_rows) * size;
  }
  // The tensor's bytes, gathered into `storage` when they lie in parts.
  std::span<const std::byte> contiguous(std::vector<std::byte>& storage) const;
  // Rows [first, first + count) of a tensor in one piece (a part of a fused projection), named
  // "<name>[first:end]".
  WeightTensor row_slice(std::int64_t first, std::int64_t count) const;
};

// Where the SentencePiece-style encoder (model "llama") puts a "▁" before a fragment of text (the
// text at the start and between special tokens; model/tokenizer.h).
enum class SpacePrefix : std::uint8_t {
  none,
  every_fragment,               // llama.cpp's add_space_prefix; tokenizers' Prepend("▁") normalizer
  every_fragment_unless_space,  // tokenizers' Metaspace prepend_scheme "always": not before a leading ' '
  first_fragment_unless_space,  // Metaspace "first": the fragment at the text's start only, not before a ' '
};

// How an added token is matched in text beyond its own characters (tokenizers' AddedToken): with
// the white space beside it taken into the match (lstrip, rstrip), only where no word character
// (\w) stands just before or after it (single_word; elsewhere the match is text), and in the
// fragments between the other added tokens once normalized, as its own text normalized
// (normalized), rather than in the raw text.
struct AddedTokenMatch {
  bool strip_left = false;
  bool strip_right = false;
  bool single_word = false;
  bool normalized = false;
};

// The tokenizer vocabulary as GGUF stores it (tokenizer.ggml.*).
struct Vocabulary {
  std::string source;  // the file it came from, named in the tokenizer's messages
  std::string model;   // "llama" (SentencePiece-style) or "gpt2" (byte-level BPE)
  std::vector<std::string> tokens;
  std::vector<double> scores;       // may be empty
  std::vector<std::int32_t> types;  // 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte; may be empty
  // gpt2: ranked merges ("a b"); llama: empty (pieces merge by score), or from a tokenizer.json its
  // BPE's ranked merges, used instead of the scores.
  std::vector<std::string> merges;
  std::string pre;  // gpt2: the pre-tokenizer (GGUF tokenizer.ggml.pre), "" when not given
  // gpt2 from a tokenizer.json: its split patterns, in order (none: the text is one word), used
  // instead of `pre`; and its model's ignore_merges.
  std::optional<std::vector<std::string>> split_patterns;
  bool ignore_merges = false;
  std::string cannot_encode;  // why text cannot be encoded (a tokenizer.json feature not implemented); "" if it can
  int bos = -1, eos = -1, unk = -1;
  bool add_bos = true;   // a text prompt starts with BOS (tokenizer.ggml.add_bos_token, or llama.cpp's default)
  bool add_eos = false;  // a text prompt ends with EOS (tokenizer.ggml.add_eos_token)
  SpacePrefix space_prefix = SpacePrefix::every_fragment;  // llama only
  bool split_at_spaces = false;  // llama: each "▁"-led word merges alone (tokenizers' Metaspace split)
  bool fuse_unk = false;         // llama: adjacent unknown characters give one unk (tokenizers' fuse_unk)
  // llama from a tokenizer.json Unigram: ids below this are its pieces, into which each word is cut
  // by the best sum of their scores (tokenizers' Viterbi) instead of merged; 0 for the others.
  std::int32_t unigram_pieces = 0;
  UnicodeForm normalization = UnicodeForm::none;              // applied to each fragment of text (tokenizers' NFC, ...)
  std::map<std::int32_t, AddedTokenMatch> added_token_match;  // by token id; none: its own text, anywhere
  // tokenizer.json's added tokens that its model's vocabulary lacks (sorted): matched in text as
  // added tokens only, never a piece of a word (tokenizers' model does not know them; llama.cpp's
  // GGUF vocabulary has no such tokens, its user-defined ones are pieces too).
  std::vector<std::int32_t> added_only;
  bool special_tokens_as_text = false;  // control tokens written in text are text (split_special_tokens)
};

// One weight that a file's tensor holds: the whole tensor, or (rows > 0) its next `rows` rows, the
// parts of a fused projection in row order (Phi-3's q/k/v and gate/up).
struct WeightPart {
  WeightKind kind;
  int layer;              // -1 for whole-model tensors
  std::int64_t rows = 0;  // 0: the whole tensor
};

class MappedFile;  // model/mapped_file.h

class Model {
 public:
  Model(std::filesystem::path path, ModelConfig config);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const std::filesystem::path& path() const { return path_; }
  const ModelConfig& config() const { return config_; }
  const std::optional<Vocabulary>& vocabulary() const { return vocabulary_; }

  // The tensor, or FormatError naming the file and the missing tensor.
  const WeightTensor& weight(WeightKind kind, int layer = -1) const;
  const WeightTensor* find(WeightKind kind, int layer = -1) const;
  const std::map<std::pair<WeightKind, int>, WeightTensor>& tensors() const { return tensors_; }
  // sha256 of the model file (of every file, in order, for multi-file models): remembered from an
  // earlier run (model/sha256_cache.h), or computed on first use or by prefetch_sha256()'s thread.
  const std::string& sha256() const;
  // Starts finding sha256() on a thread of its own, so that hashing overlaps other work (loading
  // the weights onto a device); sha256() then waits for it.
  void prefetch_sha256() const;

  // For loaders: take ownership of a mapping and register tensors that point into it.
  const MappedFile& adopt(std::unique_ptr<MappedFile> file);
  void add(WeightKind kind, int layer, WeightTensor tensor);
  // Adds each part of `whole`, a tensor of `file`: FormatError when the parts' rows do not add up to
  // the tensor's, or when another tensor already gave one of them.
  void add_parts(const WeightTensor& whole, std::span<const WeightPart> parts, const std::string& file);
  void set_vocabulary(Vocabulary vocab) { vocabulary_ = std::move(vocab); }
  // Checks that every tensor the config needs is present with the shape the config implies.
  void validate() const;

 private:
  std::filesystem::path path_;
  ModelConfig config_;
  std::optional<Vocabulary> vocabulary_;
  std::vector<std::unique_ptr<MappedFile>> files_;
  std::map<std::pair<WeightKind, int>, WeightTensor> tensors_;
  std::string find_sha256() const;  // the cache's, or hashed (stopping early once stop_hashing_ is set)
  mutable std::mutex sha256_mutex_;
  mutable std::atomic<bool> stop_hashing_{false};
  mutable std::shared_future<std::string> sha256_;  // after files_: done with them before they unmap
};

// Loads a GGUF file or a Hugging Face folder (config.json + *.safetensors); FormatError on bad input.
// What a model file leaves to the run that loads it.
struct LoadOptions {
  // The context size the model runs with (llama.cpp's n_ctx, -c): a GGUF's LongRoPE takes its long
  // factors when it exceeds rope.scaling.original_context_length (0: not given).
  int context_size = 0;
};

std::unique_ptr<Model> load_model(const std::filesystem::path& path, const LoadOptions& options = {});

// UsageError naming the file where an engine cannot run the model as loaded: a GGUF's LongRoPE
// without LoadOptions::context_size.
void require_runnable(const Model& m);

}  // namespace tapdiff::model
