#include "dumps/schema.h"

#include <algorithm>
#include <ctime>

#include <fmt/core.h>

#include "dumps/h5.h"
#include "formats/family_spec.h"
#include "model/errors.h"
#include "model/json_input.h"

namespace tapdiff::dumps {

std::string_view storage_name(StorageType type) {
  switch (type) {
    case StorageType::f32: return "f32";
    case StorageType::f64: return "f64";
    case StorageType::f16: return "f16";
  }
  return "?";
}

std::optional<StorageType> storage_from_name(std::string_view name) {
  for (StorageType type : {StorageType::f32, StorageType::f64, StorageType::f16})
    if (storage_name(type) == name) return type;
  return std::nullopt;
}

std::size_t stored_value_bytes(std::string_view storage_dtype) {
  if (storage_dtype == "bf16") return 2;
  switch (storage_from_name(storage_dtype).value_or(StorageType::f32)) {
    case StorageType::f16: return 2;
    case StorageType::f64: return 8;
    case StorageType::f32: break;
  }
  return 4;
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32] = {};
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string tap_path(const model::TensorId& id) {
  return fmt::format("/{}/{}/{}", names::kTaps, id.layer, model::op_name(id.op));
}

model::ModelConfig config_from_json(const nlohmann::json& config, const std::string& source) {
  if (!config.is_object())
    throw FormatError(
        fmt::format("{}: model_config: expected a JSON object, found '{}'", source, model::json_excerpt(config)));
  auto field = [&](const char* key, int fallback) {
    if (!config.contains(key)) {
      if (fallback > 0) return fallback;
      throw FormatError(fmt::format("{}: model_config: missing '{}'", source, key));
    }
    const nlohmann::json& value = config.at(key);
    if (!value.is_number_integer() || value.get<std::int64_t>() < 1 || value.get<std::int64_t>() > INT32_MAX)
      throw FormatError(fmt::format("{}: model_config.{}: expected a positive integer, found {}", source, key,
                                    model::json_excerpt(value)));
    return value.get<int>();
  };
  // A positive integer under `key` of the object `o`, model_config.<where> in messages.
  auto positive = [&](const nlohmann::json& o, std::string_view where, const char* key) {
    const nlohmann::json* v = o.is_object() && o.contains(key) ? &o.at(key) : nullptr;
    if (v == nullptr || !v->is_number_integer() || v->get<std::int64_t>() < 1 || v->get<std::int64_t>() > INT32_MAX)
      throw FormatError(fmt::format("{}: model_config.{}.{}: expected a positive integer, found {}", source, where, key,
                                    v != nullptr ? model::json_excerpt(*v) : "none"));
    return v->get<int>();
  };
  model::ModelConfig out;
  out.n_layers = field("n_layers", 0);
  // A flag per layer (sliding_layers, experts.layers, ...).
  const auto layer_flags = [&](const nlohmann::json& flags, std::string_view key) {
    if (!flags.is_array() || std::ssize(flags) != out.n_layers ||
        !std::all_of(flags.begin(), flags.end(), [](const nlohmann::json& f) { return f.is_boolean(); }))
      throw FormatError(fmt::format("{}: model_config.{}: expected {} flags true or false, found {}", source, key,
                                    out.n_layers, model::json_excerpt(flags)));
    std::vector<bool> out_flags;
    for (const nlohmann::json& f : flags) out_flags.push_back(f.get<bool>());
    return out_flags;
  };
  out.dim = field("dim", 0);
  out.n_heads = field("n_heads", 0);
  out.n_kv_heads = field("n_kv_heads", out.n_heads);
  out.head_dim = field("head_dim", out.dim / out.n_heads);
  out.ffn_dim = field("ffn_dim", 0);
  out.vocab = field("vocab", 0);
  if (config.contains("arch")) {
    const nlohmann::json& arch = config.at("arch");
    const auto family = arch.is_string() ? formats::family_named(arch.get<std::string>()) : std::nullopt;
    if (!family)
      throw FormatError(fmt::format("{}: model_config.arch: expected one of {}, found {}", source,
                                    model::family_names(), model::json_excerpt(arch)));
    out.family = *family;
  }
  if (config.contains("block")) out.block = model::block_from_json(config.at("block"), source);
  if (config.contains("rope_style") && config.at("rope_style") == model::rope_style_name(model::RopeStyle::rotate_half))
    out.rope_style = model::RopeStyle::rotate_half;
  if (config.contains("experts")) {
    const nlohmann::json& e = config.at("experts");
    if (!e.is_object())
      throw FormatError(
          fmt::format("{}: model_config.experts: expected an object, found {}", source, model::json_excerpt(e)));
    const auto count = [&](const char* key) { return positive(e, "experts", key); };
    out.experts.count = count("count");
    out.experts.active = count("active");
    out.experts.ffn_dim = count("ffn_dim");
    const auto flag = [&](const char* key) {
      if (!e.contains(key)) return false;
      if (!e.at(key).is_boolean())
        throw FormatError(fmt::format("{}: model_config.experts.{}: expected true or false, found {}", source, key,
                                      model::json_excerpt(e.at(key))));
      return e.at(key).get<bool>();
    };
    out.experts.normalize = flag("normalize");
    if (e.contains("shared_ffn_dim")) out.experts.shared_ffn_dim = count("shared_ffn_dim");
    out.experts.shared_gate = flag("shared_gate");
    out.experts.shared_average = flag("shared_average");
    if (e.contains("score")) {
      if (e.at("score") != "sigmoid" && e.at("score") != "softmax")
        throw FormatError(fmt::format("{}: model_config.experts.score: expected softmax or sigmoid, found {}", source,
                                      model::json_excerpt(e.at("score"))));
      out.experts.score = e.at("score") == "sigmoid" ? model::RouterScore::sigmoid : model::RouterScore::softmax;
    }
    out.experts.selection_bias = flag("selection_bias");
    out.experts.router_bias = flag("router_bias");
    out.experts.biases = flag("biases");
    out.experts.choice_on_logits = flag("choice_on_logits");
    out.experts.weights_scale_input = flag("weights_scale_input");
    out.experts.beside_dense = flag("beside_dense");
    out.experts.expert_scales = flag("expert_scales");
    if (e.contains("groups")) out.experts.groups = count("groups");
    if (e.contains("top_groups")) out.experts.top_groups = count("top_groups");
    if (e.contains("group_best")) out.experts.group_best = count("group_best");
    if (e.contains("scale")) {
      if (!e.at("scale").is_number())
        throw FormatError(fmt::format("{}: model_config.experts.scale: expected a number, found {}", source,
                                      model::json_excerpt(e.at("scale"))));
      out.experts.scale = e.at("scale").get<double>();
    }
    if (e.contains("sparsemixer_eps")) {
      if (!e.at("sparsemixer_eps").is_number())
        throw FormatError(fmt::format("{}: model_config.experts.sparsemixer_eps: expected a number, found {}", source,
                                      model::json_excerpt(e.at("sparsemixer_eps"))));
      out.experts.sparsemixer = true;
      out.experts.mixer_eps = e.at("sparsemixer_eps").get<double>();
    }
    if (e.contains("layers")) out.experts.layers = layer_flags(e.at("layers"), "experts.layers");
  }
  for (const auto& [key, flags] :
       {std::pair{"sliding_layers", &out.sliding_layers}, std::pair{"chunked_layers", &out.chunked_layers},
        std::pair{"rope_layers", &out.rope_layers}, std::pair{"values_from_keys", &out.values_from_keys}})
    if (config.contains(key)) *flags = layer_flags(config.at(key), key);
  if (config.contains("layer_shapes")) {
    const nlohmann::json& shapes = config.at("layer_shapes");
    if (!shapes.is_array())
      throw FormatError(fmt::format("{}: model_config.layer_shapes: expected an array, found {}", source,
                                    model::json_excerpt(shapes)));
    for (const nlohmann::json& s : shapes)
      out.layer_shapes.push_back(
          {positive(s, "layer_shapes[]", "n_kv_heads"), positive(s, "layer_shapes[]", "head_dim")});
  }
  // An array of integers in [0, 2^31) under `key`, each `what`.
  const auto integers = [&](const char* key, std::string_view what) {
    const nlohmann::json& s = config.at(key);
    const bool ok = s.is_array() && std::all_of(s.begin(), s.end(), [](const nlohmann::json& l) {
                      return l.is_number_integer() && l.get<std::int64_t>() >= 0 && l.get<std::int64_t>() <= INT32_MAX;
                    });
    if (!ok)
      throw FormatError(fmt::format("{}: model_config.{}: expected an array of {}, found {}", source, key, what,
                                    model::json_excerpt(s)));
    return s.get<std::vector<int>>();
  };
  if (config.contains("kv_sources")) out.kv_sources = integers("kv_sources", "layer numbers");
  if (config.contains("ffn_dims")) out.ffn_dims = integers("ffn_dims", "widths");
  if (config.contains("layer_inputs")) {
    const nlohmann::json& p = config.at("layer_inputs");
    out.layer_inputs = {.dim = positive(p, "layer_inputs", "dim"), .vocab = positive(p, "layer_inputs", "vocab")};
  }
  if (config.contains("sliding_window") && config.at("sliding_window") != 0)
    out.sliding_window = field("sliding_window", 0);
  if (config.contains("attention_chunk")) out.attention_chunk = field("attention_chunk", 0);
  if (config.contains("query_temperature")) {
    const nlohmann::json& t = config.at("query_temperature");
    const auto small = [&](const char* key) {
      return t.contains(key) && t.at(key).is_number_integer() && std::abs(t.at(key).get<std::int64_t>()) <= INT32_MAX;
    };
    if (!t.is_object() || !t.contains("beta") || !t.at("beta").is_number() || !small("length") || !small("offset") ||
        !t.contains("nope_layers") || !t.at("nope_layers").is_boolean())
      throw FormatError(
          fmt::format("{}: model_config.query_temperature: expected beta, length, offset and "
                      "nope_layers, found {}",
                      source, model::json_excerpt(t)));
    out.query_temperature = {.beta = t.at("beta").get<double>(),
                             .length = t.at("length").get<int>(),
                             .offset = t.at("offset").get<int>(),
                             .nope_layers = t.at("nope_layers").get<bool>()};
  }
  if (config.contains("mla")) {
    const nlohmann::json& a = config.at("mla");
    if (!a.is_object() || !a.contains("biases") || !a.at("biases").is_boolean() || !a.contains("norm_eps") ||
        !a.at("norm_eps").is_number() || !(a.at("norm_eps").get<double>() > 0 && a.at("norm_eps").get<double>() < 1))
      throw FormatError(
          fmt::format("{}: model_config.mla: expected an object with biases (true or false) and "
                      "norm_eps (0 < eps < 1), found {}",
                      source, model::json_excerpt(a)));
    const auto size = [&](const char* key) {
      const nlohmann::json* v = a.contains(key) ? &a.at(key) : nullptr;
      if (v == nullptr || !v->is_number_integer() || v->get<std::int64_t>() < 0 || v->get<std::int64_t>() > INT32_MAX)
        throw FormatError(fmt::format("{}: model_config.mla.{}: expected an integer >= 0, found {}", source, key,
                                      v != nullptr ? model::json_excerpt(*v) : "none"));
      return v->get<int>();
    };
    out.mla = {.q_rank = size("q_rank"),
               .kv_rank = size("kv_rank"),
               .nope_dim = size("nope_dim"),
               .rope_dim = size("rope_dim"),
               .v_dim = size("v_dim"),
               .biases = a.at("biases").get<bool>(),
               .norm_eps = a.at("norm_eps").get<double>()};
  }
  if (config.contains("indexer")) {
    const nlohmann::json& x = config.at("indexer");
    const auto size = [&](const char* key) {
      const nlohmann::json* v = x.is_object() && x.contains(key) ? &x.at(key) : nullptr;
      if (v == nullptr || !v->is_number_integer() || v->get<std::int64_t>() < 1 || v->get<std::int64_t>() > INT32_MAX)
        throw FormatError(fmt::format("{}: model_config.indexer.{}: expected an integer >= 1, found {}", source, key,
                                      v != nullptr ? model::json_excerpt(*v) : "none"));
      return v->get<int>();
    };
    out.indexer = {.heads = size("heads"), .head_dim = size("head_dim"), .top_k = size("top_k")};
  }
  if (config.contains("rotary_dim")) {
    const int rotary = field("rotary_dim", 0);
    out.rotary_dim = rotary == out.head_dim ? 0 : rotary;
  }
  out.validate(source);  // also keeps every width an int
  return out;
}

void write_metadata(const h5::Group& root, const RunMetadata& m) {
  root.set_int(names::kSchemaVersion, kSchemaVersion);
  root.set_string("tool_version", m.tool_version);
  root.set_string("engine", m.engine);
  root.set_string("device", m.device);
  root.set_string("compute_dtype", m.compute_dtype);
  root.set_string("kernels", nlohmann::json(m.kernels).dump());
  root.set_string("model_path", m.model_path);
  root.set_string("model_sha256", m.model_sha256);
  root.set_string(names::kModelConfig, m.model_config.dump());
  root.set_int("chunk_size", m.chunk_size);
  root.set_string("command_line", m.command_line);
  root.set_string("created", m.created);
  root.set_string(names::kStorageDtype, m.storage_dtype);
  if (!m.compression.empty()) root.set_string(names::kCompression, m.compression);
  const h5::DataSet prompt =
      root.create_dataset(names::kPromptTokens, h5::Type::i32, h5::Layout::fixed({m.prompt_tokens.size()}));
  prompt.write_rows(0, m.prompt_tokens.size(), h5::memory_type(h5::Type::i32), m.prompt_tokens.data());
}

namespace {

std::string optional_string(const h5::Group& root, const char* name) {
  return root.has_attribute(name) ? root.get_string(name) : std::string();
}

nlohmann::json parse_json_attribute(const h5::Group& root, const char* name) {
  return model::parse_json_text(root.get_string(name), fmt::format("{}: attribute '{}'", root.file(), name),
                                "an object");
}

std::map<std::string, std::string> read_kernels(const h5::Group& root) {
  std::map<std::string, std::string> kernels;
  if (!root.has_attribute("kernels")) return kernels;
  const nlohmann::json json = parse_json_attribute(root, "kernels");
  if (!json.is_object())
    throw FormatError(fmt::format("{}: attribute 'kernels': expected a JSON object, found {}", root.file(),
                                  model::json_excerpt(json)));
  for (const auto& [op, variant] : json.items())
    kernels[op] = variant.is_string() ? variant.get<std::string>() : model::json_excerpt(variant);
  return kernels;
}

}  // namespace

RunMetadata read_metadata(const h5::Group& root) {
  RunMetadata m;
  m.tool_version = optional_string(root, "tool_version");
  m.engine = optional_string(root, "engine");
  m.device = optional_string(root, "device");
  m.compute_dtype = optional_string(root, "compute_dtype");
  m.kernels = read_kernels(root);
  m.model_path = optional_string(root, "model_path");
  m.model_sha256 = optional_string(root, "model_sha256");
  m.model_config = parse_json_attribute(root, names::kModelConfig);
  m.chunk_size = root.has_attribute("chunk_size") ? static_cast<int>(root.get_int("chunk_size")) : 0;
  m.command_line = optional_string(root, "command_line");
  m.created = optional_string(root, "created");
  m.storage_dtype = optional_string(root, names::kStorageDtype);
  m.compression = optional_string(root, names::kCompression);
  if (root.contains(names::kPromptTokens)) {
    const h5::DataSet prompt = root.open_dataset(names::kPromptTokens);
    const std::vector<hsize_t> extent = prompt.extent();
    if (extent.size() != 1)
      throw FormatError(fmt::format("{}: /{}: expected a 1-D dataset, found rank {}", root.file(), names::kPromptTokens,
                                    extent.size()));
    prompt.require_storable(extent[0], sizeof(std::int32_t));
    m.prompt_tokens.resize(extent[0]);
    prompt.read_rows(0, extent[0], h5::memory_type(h5::Type::i32), m.prompt_tokens.data());
  }
  return m;
}

}  // namespace tapdiff::dumps
