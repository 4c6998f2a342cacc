// Writes the seed corpus of the fuzz targets with the project's own writers:
//   fuzz_write_seeds OUT_DIR [DUMP.h5 ...]
// fills OUT_DIR/{gguf,safetensors,config_json,tokenizer}/ and, from dumps that `tapdiff run
// --dump` wrote, OUT_DIR/dump/ (as text, dump_text.h). The tolerance seeds are copies of
// examples/ (tests/fuzz/make_corpus.sh).
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/family_spec.h"
#include "formats/synth.h"
#include "model/dtype.h"
#include "tests/fuzz/dump_text.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/tokenizer_input.h"
#include "text/vocabulary.h"

namespace {

using namespace tapdiff;
namespace fs = std::filesystem;

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// Tiny synth models: f32, f16 qwen2 (QKV bias, untied), and the block formats (widths of 32).
void gguf_seeds(const fs::path& dir) {
  auto write = [&](const char* name, const char* arch, model::DType dtype, int dim, int head_dim, int kv_heads,
                   int vocab, bool tied) {
    formats::SynthOptions o;
    o.config.family = *formats::family_named(arch);
    o.config.n_layers = 1, o.config.dim = dim, o.config.n_heads = 2, o.config.n_kv_heads = kv_heads;
    o.config.head_dim = head_dim, o.config.ffn_dim = 32, o.config.vocab = vocab, o.config.context_length = 64;
    o.config.rope_style = std::string(arch) == "qwen2" ? model::RopeStyle::rotate_half : model::RopeStyle::interleaved;
    o.config.block.qkv_bias = std::string(arch) == "qwen2";
    o.config.tied_output = tied, o.config.bos_token = 1, o.config.eos_token = 2;
    o.dtype = dtype;
    formats::write_synth_model(dir / name, o);
  };
  write("llama-f32.gguf", "llama", model::DType::f32, 16, 8, 2, 300, true);
  write("qwen2-f16.gguf", "qwen2", model::DType::f16, 16, 8, 1, 260, false);
  write("llama-q8_0.gguf", "llama", model::DType::q8_0, 32, 16, 1, 260, true);
  write("llama-q4_0.gguf", "llama", model::DType::q4_0, 32, 16, 2, 260, true);
  write("llama-bf16.gguf", "llama", model::DType::bf16, 16, 8, 2, 260, true);
}

void safetensors_seeds(const fs::path& dir) {
  testing::TinyHf hf = testing::tiny_hf(fuzz::kTinyHf);
  testing::write_safetensors(dir / "tiny-f32.safetensors", hf.tensors);
  // The final norm as BF16 (the high halves of its f32 values) and an I8 tensor the model does not use.
  for (testing::StEntry& t : hf.tensors) {
    if (t.name != "model.norm.weight") continue;
    std::vector<std::byte> half(t.data.size() / 2);
    for (std::size_t i = 0; i < half.size(); i += 2) std::memcpy(&half[i], &t.data[2 * i + 2], 2);
    t.dtype = "BF16", t.data = std::move(half);
  }
  hf.tensors.push_back({"extra.counts", "I8", {4}, std::vector<std::byte>(4, std::byte{7})});
  testing::write_safetensors(dir / "tiny-bf16-i8.safetensors", hf.tensors);
}

void config_seeds(const fs::path& dir) {
  nlohmann::json config = testing::tiny_hf(fuzz::kTinyHf).config;
  write_text(dir / "llama.json", config.dump(2));
  config["architectures"] = {"LlamaForCausalLM"}, config["torch_dtype"] = "bfloat16", config["hidden_act"] = "silu";
  config["head_dim"] = 8, config["attention_bias"] = false, config["max_position_embeddings"] = 2048;
  write_text(dir / "llama-full.json", config.dump(2));
  config["model_type"] = "mistral", config["sliding_window"] = 4096;
  write_text(dir / "mistral.json", config.dump());
  config["model_type"] = "qwen2", config["use_sliding_window"] = false, config["rope_theta"] = 1e6;
  config["eos_token_id"] = 2;
  write_text(dir / "qwen2.json", config.dump(1));
}

// The byte-level vocabulary of a tokenizer seed as a Hugging Face tokenizer.json, with a
// pre-tokenizer, post-processor and added token.
nlohmann::json tokenizer_json(const text::Vocabulary& v, nlohmann::json pre_tokenizer) {
  nlohmann::json vocab = nlohmann::json::object(), added = nlohmann::json::array();
  for (std::size_t id = 0; id < v.tokens.size(); ++id) {
    if (v.types[id] == 3)
      added.push_back({{"id", id},
                       {"content", v.tokens[id]},
                       {"special", true},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"single_word", false},
                       {"normalized", false}});
    else
      vocab[v.tokens[id]] = id;
  }
  nlohmann::json merges = nlohmann::json::array();
  for (const std::string& m : v.merges) merges.push_back({m.substr(0, m.find(' ')), m.substr(m.find(' ') + 1)});
  const std::string& bos = v.tokens[static_cast<std::size_t>(v.bos)];
  return {
      {"version", "1.0"},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer", std::move(pre_tokenizer)},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"special_tokens", {{bos, {{"id", bos}, {"ids", {v.bos}}, {"tokens", {bos}}}}}}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"byte_fallback", false},
        {"ignore_merges", true},
        {"vocab", vocab},
        {"merges", merges}}}};
}

// A SentencePiece-style vocabulary as a tokenizer.json: Llama 2's normalizer, or Metaspace.
nlohmann::json sentencepiece_json(const text::Vocabulary& v, bool metaspace) {
  nlohmann::json vocab = nlohmann::json::object(), added = nlohmann::json::array(), merges = nlohmann::json::array();
  for (std::size_t id = 0; id < v.tokens.size(); ++id) {
    vocab[v.tokens[id]] = id;
    if (v.types[id] == 2 || v.types[id] == 3)
      added.push_back({{"id", id}, {"content", v.tokens[id]}, {"special", true}, {"normalized", false}});
  }
  for (const std::string& m : v.merges) merges.push_back({m.substr(0, m.find(' ')), m.substr(m.find(' ') + 1)});
  const std::string space = "\xE2\x96\x81";
  const nlohmann::json normalizer = {{"type", "Sequence"},
                                     {"normalizers",
                                      {{{"type", "Prepend"}, {"prepend", space}},
                                       {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", space}}}}};
  const nlohmann::json pre = {{"type", "Metaspace"}, {"replacement", space}, {"prepend_scheme", "first"}};
  return {{"version", "1.0"},
          {"added_tokens", added},
          {"normalizer", metaspace ? nlohmann::json(nullptr) : normalizer},
          {"pre_tokenizer", metaspace ? pre : nlohmann::json(nullptr)},
          {"decoder", {{"type", "Sequence"}, {"decoders", nlohmann::json::array()}}},
          {"model",
           {{"type", "BPE"},
            {"unk_token", v.tokens[static_cast<std::size_t>(v.unk)]},
            {"byte_fallback", true},
            {"fuse_unk", true},
            {"vocab", vocab},
            {"merges", merges}}}};
}

void tokenizer_json_seeds(const text::Vocabulary& bpe, const fs::path& dir) {
  const nlohmann::json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  write_text(dir / "byte-level.json", tokenizer_json(bpe, byte_level).dump(1));
  const nlohmann::json split = {
      {"type", "Split"},
      {"pattern",
       {{"Regex",
         R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"}}},
      {"behavior", "Isolated"},
      {"invert", false}};
  const nlohmann::json steps = {{"type", "Sequence"},
                                {"pretokenizers",
                                 {{{"type", "Digits"}, {"individual_digits", true}},
                                  {{"type", "Punctuation"}, {"behavior", "Contiguous"}},
                                  split,
                                  {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
  write_text(dir / "split-sequence.json", tokenizer_json(bpe, steps).dump());
}

void tokenizer_seeds(const fs::path& dir, const fs::path& json_dir) {
  const std::vector<std::string> texts = {"Hello world", " it's 42 tokens,\n\ttwo  spaces",
                                          "caf\xC3\xA9 \xF0\x9F\x98\x80 \xFF"};
  fuzz::TokenizerInput spm;
  const formats::SynthVocabulary synth = formats::synth_vocabulary(300);
  spm.vocab.model = "llama";
  spm.vocab.tokens = synth.tokens, spm.vocab.scores.assign(synth.scores.begin(), synth.scores.end()),
  spm.vocab.types = synth.types;
  spm.vocab.bos = 1, spm.vocab.eos = 2, spm.vocab.unk = 0;
  spm.texts = texts;
  write_text(dir / "llama-synth", fuzz::format_tokenizer_input(spm));
  // Without scores and types: the tokenizer infers them.
  spm.vocab.tokens.resize(40), spm.vocab.scores.clear(), spm.vocab.types.clear();
  spm.vocab.space_prefix = text::SpacePrefix::none;
  write_text(dir / "llama-untyped", fuzz::format_tokenizer_input(spm));
  // Byte-level BPE: printable ASCII stands for itself; U+0120 stands for ' ', U+010A for '\n'.
  fuzz::TokenizerInput bpe;
  bpe.vocab.model = "gpt2";
  bpe.vocab.pre = "gpt-2";
  bpe.vocab.space_prefix = text::SpacePrefix::none;
  for (char c = '!'; c <= '~'; ++c) bpe.vocab.tokens.emplace_back(1, c);
  for (const char* piece : {"\xC4\xA0", "\xC4\x8A", "\xC4\xA0t", "he", "\xC4\xA0the", "in", "er", "'s"})
    bpe.vocab.tokens.emplace_back(piece);
  bpe.vocab.tokens.emplace_back("<|endoftext|>");
  bpe.vocab.types.assign(bpe.vocab.tokens.size(), 1);
  bpe.vocab.types.back() = 3;
  bpe.vocab.bos = bpe.vocab.eos = static_cast<int>(bpe.vocab.tokens.size()) - 1;
  bpe.vocab.merges = {"\xC4\xA0 t", "h e", "\xC4\xA0t he", "i n", "e r", "' s"};
  bpe.texts = texts;
  bpe.texts.emplace_back("the cat's in there\n");
  write_text(dir / "gpt2-small", fuzz::format_tokenizer_input(bpe));
  tokenizer_json_seeds(bpe.vocab, json_dir);
  // Another GGUF pre-tokenizer; then a tokenizer.json's own split patterns (Tekken's).
  bpe.vocab.pre = "deepseek-llm";
  write_text(dir / "gpt2-deepseek-llm", fuzz::format_tokenizer_input(bpe));
  bpe.vocab.split_patterns = std::vector<std::string>{
      R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re",
      R"re(\p{N}{1,3})re"};
  write_text(dir / "gpt2-split-patterns", fuzz::format_tokenizer_input(bpe));
  // SentencePiece-style with a tokenizer.json's ranked merges, Metaspace "first", split and fuse_unk.
  fuzz::TokenizerInput ranked;
  ranked.vocab.model = "llama";
  ranked.vocab.tokens = {"<unk>",
                         "<s>",
                         "</s>",
                         "\xE2\x96\x81",
                         "a",
                         "b",
                         "\xE2\x96\x81"
                         "a",
                         "ab",
                         "\xE2\x96\x81"
                         "ab",
                         "\xE2\x96\x81\xE2\x96\x81",
                         "<0xC3>",
                         "<0xA9>"};
  ranked.vocab.types = {2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 6, 6};
  ranked.vocab.merges = {"\xE2\x96\x81 a", "a b",
                         "\xE2\x96\x81"
                         "a b",
                         "\xE2\x96\x81 \xE2\x96\x81"};
  ranked.vocab.bos = 1, ranked.vocab.eos = 2, ranked.vocab.unk = 0;
  ranked.vocab.space_prefix = text::SpacePrefix::first_fragment_unless_space;
  ranked.vocab.split_at_spaces = ranked.vocab.fuse_unk = true;
  ranked.texts = texts;
  write_text(dir / "llama-ranked-merges", fuzz::format_tokenizer_input(ranked));
  write_text(json_dir / "sentencepiece-legacy.json", sentencepiece_json(ranked.vocab, false).dump(1));
  write_text(json_dir / "sentencepiece-metaspace.json", sentencepiece_json(ranked.vocab, true).dump());
  // The same pieces as a Unigram's, scored by their place.
  nlohmann::json unigram = sentencepiece_json(ranked.vocab, true), pieces = nlohmann::json::array();
  ranked.vocab.scores.clear();
  for (std::size_t id = 0; id < ranked.vocab.tokens.size(); ++id) {
    ranked.vocab.scores.push_back(-static_cast<double>(id));
    pieces.push_back({ranked.vocab.tokens[id], ranked.vocab.scores.back()});
  }
  unigram["model"] = {{"type", "Unigram"}, {"unk_id", 0}, {"byte_fallback", true}, {"vocab", pieces}};
  write_text(json_dir / "unigram.json", unigram.dump());
  ranked.vocab.unigram_pieces = static_cast<std::int32_t>(ranked.vocab.tokens.size());
  write_text(dir / "llama-unigram", fuzz::format_tokenizer_input(ranked));
}

// Outside engines' dumps of the imported_dump target's model (vLLM's names): 3 prefill rows and
// a decode row, q/k/v fused, the layer's output in two halves; as .npz stored and deflated, and as
// safetensors.
void imported_dump_seeds(const fs::path& dir) {
  auto values = [](std::size_t n, float from) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = from + 0.01f * static_cast<float>(i);
    return v;
  };
  const std::int64_t rows = 4;
  const std::vector<testing::Npy> arrays = {
      testing::npy("input_ids", "<i8", {rows}, std::vector<std::int64_t>{1, 5, 9, 3}),
      testing::npy("position_ids", "<i4", {rows}, std::vector<std::int32_t>{0, 1, 2, 3}),
      testing::npy("decode", "<i4", {rows}, std::vector<std::int32_t>{0, 0, 0, 1}),
      testing::npy("model.layers.0.self_attn.qkv_proj.0", "<f4", {rows, 32}, values(rows * 32, -1)),
      testing::npy("model.layers.0.0", "<f4", {1, rows, 16}, values(rows * 16, 0.5f)),
      testing::npy("model.layers.0.1", "<f4", {1, rows, 16}, values(rows * 16, 2)),
      testing::npy("model.layers.0.self_attn.attn", "<f8", {rows, 2, 8}, std::vector<double>(rows * 16, 0.25)),
      testing::npy("0/attn_norm", "<f2", {rows, 16}, std::vector<std::uint16_t>(rows * 16, 0x3c00)),
      testing::npy("unmapped.thing", "<f4", {2}, values(2, 0))};
  testing::write_npz(dir / "vllm-stored.npz", arrays);
  testing::write_npz(dir / "vllm-deflated.npz", arrays, true);
  std::vector<testing::StEntry> tensors;
  const std::map<std::string, std::string> types = {
      {"<i8", "I64"}, {"<i4", "I32"}, {"<f4", "F32"}, {"<f8", "F64"}, {"<f2", "F16"}};
  for (const testing::Npy& a : arrays) tensors.push_back({a.name, types.at(a.descr), a.shape, a.data});
  testing::write_safetensors(dir / "vllm.safetensors", tensors);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: fuzz_write_seeds OUT_DIR [DUMP.h5 ...]\n");
    return 2;
  }
  const fs::path out = argv[1];
  for (const char* target :
       {"gguf", "safetensors", "config_json", "tokenizer", "tokenizer_json", "dump", "imported_dump"})
    fs::create_directories(out / target);
  imported_dump_seeds(out / "imported_dump");
  gguf_seeds(out / "gguf");
  safetensors_seeds(out / "safetensors");
  config_seeds(out / "config_json");
  tokenizer_seeds(out / "tokenizer", out / "tokenizer_json");
  for (int i = 2; i < argc; ++i)  // 16 values per dataset: the text repeats them to fill it
    write_text(out / "dump" / fs::path(argv[i]).filename().replace_extension(".txt"),
               fuzz::read_dump_text(argv[i], 16));
  return 0;
}
