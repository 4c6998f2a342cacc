#pragma once
// Everything tapdiff knows of a family, one file per family (formats/families/<family>.cpp), read top
// to bottom like a modeling file: how its Hugging Face config.json and its GGUF metadata are read
// into a ModelConfig, how llama.cpp's graph of it differs, its tokenizer class, what synth writes.
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/family.h"
#include "model/rope.h"

namespace tapdiff::model {
struct ModelConfig;
}  // namespace tapdiff::model

namespace tapdiff::formats {

using model::Family;

class GgufFile;
class KeyReader;

// A multimodal checkpoint whose text decoder is the family, its config under text_config: a run
// on token ids computes that decoder only, so the image encoder's keys are read as unused (and
// its tensors: formats/safetensors_reader.cpp).
struct HfComposite {
  std::string_view model_type;
  std::set<std::string_view> encoder_keys = {};  // keys of the image encoder and its projector
};

// A tensor name of the family's checkpoints as the Llama name tapdiff reads
// (formats/safetensors_reader.cpp): `from` a prefix of the whole name, or of the part after the
// layer's prefix, replaced by `to`.
struct HfRename {
  std::string_view from;
  std::string_view to;
};

// How a family's checkpoints hold the experts' matrices (formats/hf_experts.h).
enum class HfExpertLayout : std::uint8_t {
  // one tensor per expert and projection, or transformers' fused mlp.experts.gate_up_proj [experts,
  // 2 ffn, dim] and down_proj [experts, dim, ffn]
  per_expert,
  // gpt-oss's: mlp.experts.gate_up_proj [experts, dim, 2 ffn], gate and up in alternate columns,
  // down_proj [experts, ffn, dim], and their biases gate_up_proj_bias [experts, 2 ffn] (alternating)
  // and down_proj_bias [experts, dim]
  transposed_alternating,
  // Llama 4's: gate_up_proj [experts, dim, 2 ffn], gate's columns then up's; down_proj [experts, ffn, dim]
  transposed_halves,
};

// The family in a Hugging Face folder: config.json's model_type for it, and how its keys are read.
struct HfRecipe {
  std::vector<std::string_view> model_types = {};  // none: tapdiff reads no Hugging Face folder of it
  // The keys that are the family's own (beyond the sizes, RoPE and tokens every family reads):
  // read into c, or refused by name.
  void (*read)(KeyReader& k, model::ModelConfig& c) = nullptr;
  // The family's names of the keys every family reads, where they differ (GPT-2: n_embd for hidden_size).
  std::vector<HfRename> keys = {};
  std::string_view eps_key = "rms_norm_eps";  // the norms' epsilon
  double eps = 0;                 // the norms' epsilon of a family without a key for it (eps_key empty; OPT: 1e-5)
  int ffn_multiple = 0;           // > 0: intermediate_size, where absent or null, this many hidden_size (GPT-2: 4)
  bool conv1d = false;            // the layers' matrices stored [in, out] (GPT-2's Conv1D): transposed as they load
  bool weightless_norms = false;  // LayerNorms without weight or bias (OLMo): weights of ones stand in
  int head_dim = 0;               // head_dim when the config leaves it out; 0: hidden_size / heads
  model::RopeStyle rope_style = model::RopeStyle::rotate_half;
  double partial_rotary_factor = 1.0;  // the share of each head RoPE rotates when the config leaves it out
  // 4.x's top-level keys for RoPE's base and share of each head (GPT-NeoX: rotary_emb_base, rotary_pct)
  std::string_view rope_theta_key = "rope_theta";
  std::string_view partial_rotary_key = "partial_rotary_factor";
  std::vector<HfRename> names = {};        // whole names (embedding, final norm, layers' prefix)
  std::vector<HfRename> layer_names = {};  // names inside a layer ("mlp.c_fc." -> "mlp.up_proj.")
  bool tied_by_default = false;            // tie_word_embeddings when the config leaves it out
  bool embedding_module_scales = false;    // embed_tokens itself scales (transformers' Gemma: ScaledWordEmbedding)
  double rope_theta = 10000.0;             // rope_theta when the config leaves it out
  double sliding_rope_theta = 0;           // > 0: the sliding layers have their own RoPE, of this base by default
  std::string_view sliding_rope_theta_key = {};  // a 4.x key that gives the sliding layers' base (Gemma 3)
  // The RoPE object's llama_4_scaling_beta: q's temperature over its original_max_position_embeddings
  // (Ministral 3; model::QueryTemperature), both required.
  bool llama_4_scaling = false;
  bool rope_required = false;  // rope_parameters (4.x: rope_scaling) stated: the config class's default is scaled
  // RoPE "dynamic" with an alpha (Hunyuan's NTK-alpha): the base times alpha^(d / (d - 2)), d the
  // head's width, the same at every length; its factor is not used.
  bool ntk_alpha = false;
  HfExpertLayout experts = HfExpertLayout::per_expert;
  std::vector<HfComposite> composites = {};
  // transformers' TOKENIZER_MAPPING_NAMES for it ("" where it has none), and whether the family is
  // in MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS (the registered class overrides the folder's).
  std::string_view tokenizer_class = {};
  bool tokenizer_overrides_folder = false;
};

// The family in a GGUF file, as llama.cpp builds it (src/models/<arch>.cpp) and its converter
// writes it: the RoPE layout, the block, and the "<arch>." keys it reads beside the ones every
// family has. q/k/v biases come from the tensors present; the other biases only where the
// family's graph adds them.
struct GgufRecipe {
  std::vector<std::string_view> architectures = {};  // general.architecture; none: tapdiff reads no GGUF of it
  model::RopeStyle rope_style = model::RopeStyle::interleaved;
  std::vector<std::string_view> keys = {};  // its own keys, read by `read`
  void (*read)(const GgufFile& f, const std::string& prefix, model::ModelConfig& c) = nullptr;
  // Keys other families read that this one's graph computes nothing with: refused when present.
  std::vector<std::string_view> unread = {};
  bool gate_up_in_ffn_up = false;  // ffn_up holds the gate's rows, then up's
  bool longrope = false;           // LongRoPE: rope_factors_long/short.weight, picked by the run's context
  bool partial_rotary = false;     // rope.dimension_count may be below the head's width: its leading channels rotate
  bool yarn = false;               // rope.scaling.type yarn read as llama.cpp computes it (read_rope_scaling)
  bool weightless_norms = false;   // no norm tensors (OLMo): weights of ones stand in
  bool output_required = false;    // output.weight with no fallback to token_embd.weight (llama.cpp fails without it)
  // attention.head_count_kv and feed_forward_length may hold a value per layer (llama.cpp's
  // get_key_or_arr): the widths go to ModelConfig::ffn_dims, the heads are the family's to read.
  bool layer_arrays = false;
  // The family's name of a tensor in a layer ("post_attention_norm.weight") as the one tapdiff
  // reads ("ffn_norm.weight" for Seed-OSS, whose FFN norm has that name); the config as read.
  std::string_view (*layer_name)(std::string_view name, const model::ModelConfig& c) = nullptr;
};

// Where llama.cpp's graph of the family computes otherwise than the others.
struct LlamaCppGraph {
  bool gemma = false;              // the embedding scaled after "embd" (inp_scaled), Q scaled first
  bool scales_q_first = false;     // Q scaled by the attention scale before the attention rounds it
  bool fused_projections = false;  // q, k, v as one matrix (wqkv), gate and up as one (ffn_up)
  // The llama.cpp name map (dumps/name_map.h) holds the names its graph gives values
  // (tests/conformance/test_llama_cpp_taps.py reads it through them).
  bool names_mapped = false;
  // The router's top k logits softmaxed (LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT: gpt-oss): its
  // biased logits are named ffn_moe_probs, the chosen ones ffn_moe_weights, their softmax
  // ffn_moe_weights_softmax.
  bool softmax_weight_gating = false;
  // Its graph names the attention's output again "ffn_norm" in a mixture's layers (Llama 4's), and
  // leaves the FFN norm's output there unnamed.
  bool moe_layers_misname_ffn_norm = false;
  // Its graph leaves q and k unnamed once turned: Qcur and Kcur are their products, Qcur_normed and
  // Kcur_normed their norms before RoPE (Gemma 4's).
  bool qk_named_before_rope = false;
  // Its "attn_out" is the stream after the attention's residual add, and "attn_post_norm" the
  // attention's post-norm (Gemma 4's).
  bool attn_out_after_residual = false;
};

// How `tapdiff synth` writes a random model of the family (formats/synth.h), as its GGUF: the block
// llama.cpp's graph of it has beyond Block{} (RoPE is the GGUF recipe's). None: synth writes none.
struct SynthRecipe {
  void (*block)(model::ModelConfig& c) = nullptr;
  bool experts = false;                    // a mixture of experts: written with an experts shape only
  bool latent = false;                     // latent attention: written with a latent shape only (tiny-mla)
  std::string_view ffn_norm = "ffn_norm";  // the FFN norm's tensor in a layer, as llama.cpp's loader names it
  double expert_gain = 1;  // the experts' gate and up weights times this, down's divided (gpt-oss: past its clamp)
};

struct FamilySpec {
  Family family;
  HfRecipe hf = {};
  GgufRecipe gguf = {};
  LlamaCppGraph llama_cpp = {};
  SynthRecipe synth = {};
};

// The family's file.
const FamilySpec& family_spec(Family f);

// A tensor or module name of the family's checkpoints as Llama's ("transformer.h.3.attn.c_attn." as
// "model.layers.3.self_attn.qkv_proj."): the first of `hf.names` whose `from` begins it, then in a
// layer the first of `hf.layer_names` that begins the rest; any other name as it is.
std::string hf_llama_name(std::string name, const HfRecipe& hf);

// The layer number and the rest of a Llama name "model.layers.<L>.<rest>"; nullopt for another.
std::optional<std::pair<int, std::string_view>> llama_layer_name(std::string_view name);
// Every family, in the table's order.
std::span<const FamilySpec* const> all_families();

// The family a name stands for: its own name, a Hugging Face model_type or a llama.cpp
// general.architecture of it ("qwen3moe", "gemma3_text"); nullopt for any other.
std::optional<Family> family_named(std::string_view name);
// The family whose Hugging Face model_type, or a multimodal checkpoint's of it, is `model_type`.
const FamilySpec* hf_family(std::string_view model_type);
// The GGUF architectures `tapdiff synth` writes: "llama, qwen2 or qwen3moe".
std::string synth_architectures();

}  // namespace tapdiff::formats
