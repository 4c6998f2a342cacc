// The C API (dumps/tapdiff.h) over DumpWriter and DumpReader: every argument checked before it
// reaches them (their own checks are assertions), every exception turned into a message.
#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "dumps/dump_reader.h"
#include "dumps/dump_writer.h"
#include "dumps/tapdiff.h"
#include "formats/load_model.h"
#include "model/graph.h"
#include "model/precision.h"
#include "model/weights.h"

using namespace tapdiff;

struct tapdiff_writer {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<model::Graph> graph;
  std::unique_ptr<dumps::DumpWriter> writer;
  std::string error;
  bool chunk_open = false;
  model::ChunkInfo chunk;
  std::vector<std::int32_t> tokens;
  std::set<std::pair<int, int>> recorded;  // (layer, op) of the open chunk
  int next_position = 0;
  int chunks = 0;
  bool wide = false;  // stored as f64
};

struct tapdiff_dump {
  std::unique_ptr<dumps::DumpReader> reader;
  std::vector<std::string> op_names;
  std::string error;
};

namespace {

void copy_error(const std::string& message, char* error, std::size_t size) {
  if (error == nullptr || size == 0) return;
  const std::size_t n = std::min(message.size(), size - 1);
  std::memcpy(error, message.data(), n);
  error[n] = '\0';
}

// Runs f; 0, or 1 with the exception's message kept in `error`.
template <class F>
int guarded(std::string& error, F&& f) {
  try {
    error.clear();
    f();
    return 0;
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "unknown error";
  }
  return 1;
}

[[noreturn]] void fail(const std::string& message) { throw std::invalid_argument(message); }

template <class T>
int record(tapdiff_writer* w, int layer, const char* op_name, const T* values, std::int64_t rows, std::int64_t width) {
  if (w == nullptr) return 1;
  return guarded(w->error, [&] {
    if (!w->chunk_open) fail("record: no chunk is open (tapdiff_chunk_begin first)");
    const std::optional<model::Op> op = model::op_from_name(op_name != nullptr ? op_name : "");
    if (!op) fail(fmt::format("record: '{}' is not an op name (docs/dump-format.md)", op_name ? op_name : "(null)"));
    const model::TensorId id{*op, layer};
    const auto& steps = w->graph->steps();
    if (std::none_of(steps.begin(), steps.end(), [&](const model::Step& s) { return s.output() == id; }))
      fail(fmt::format("record: {} is not an op of this model at that layer", model::to_string(id)));
    const int expected = w->graph->width(id);
    if (rows != w->chunk.rows || width != expected || values == nullptr)
      fail(fmt::format("record: {}: expected [{}, {}] (the chunk's rows, the op's width), found [{}, {}]{}",
                       model::to_string(id), w->chunk.rows, expected, rows, width, values ? "" : " of NULL"));
    if (!w->recorded.insert({layer, static_cast<int>(*op)}).second)
      fail(fmt::format("record: {} recorded twice in one chunk", model::to_string(id)));
    model::HostTensor t(w->wide ? model::Scalar::f64 : model::Scalar::f32, rows, width);
    const auto n = static_cast<std::size_t>(rows * width);
    if (w->wide)
      std::copy(values, values + n, t.f64().begin());
    else
      std::transform(values, values + n, t.f32().begin(), [](T v) { return static_cast<float>(v); });
    w->writer->record({id, w->chunk}, t);
  });
}

}  // namespace

extern "C" {

tapdiff_writer* tapdiff_writer_open(const char* path, const char* model_path, const char* engine,
                                    const char* compute_dtype, char* error, std::size_t error_size) {
  auto w = std::make_unique<tapdiff_writer>();
  const int failed = guarded(w->error, [&] {
    if (path == nullptr || model_path == nullptr) fail("tapdiff_writer_open: path and model are required");
    using model::Precision;
    const std::string dtype = compute_dtype != nullptr ? compute_dtype : "f32";
    const std::optional<Precision> precision = model::parse_precision(dtype);
    if (precision != Precision::f32 && precision != Precision::f16 && precision != Precision::bf16 &&
        precision != Precision::f64)
      fail(fmt::format("tapdiff_writer_open: compute_dtype: expected f32, f16, bf16 or f64, found '{}'", dtype));
    w->model = formats::load_model(model_path);
    w->graph = std::make_unique<model::Graph>(w->model->config());
    w->wide = precision == Precision::f64;
    dumps::RunMetadata m;
    m.tool_version = fmt::format("tapdiff C API {}", TAPDIFF_VERSION);
    m.engine = engine != nullptr ? engine : "c";
    m.compute_dtype = dtype;
    m.model_path = w->model->path().string();
    m.model_sha256 = w->model->sha256();
    m.model_config = model::to_json(w->model->config());
    w->writer = std::make_unique<dumps::DumpWriter>(path, m, *w->graph, dumps::TapFilter("all"),
                                                    w->wide ? dumps::StorageType::f64 : dumps::StorageType::f32);
  });
  if (failed != 0) {
    copy_error(w->error, error, error_size);
    return nullptr;
  }
  return w.release();
}

int tapdiff_chunk_begin(tapdiff_writer* w, const std::int32_t* tokens, std::int64_t n, const std::int32_t* positions,
                        int decode) {
  if (w == nullptr) return 1;
  return guarded(w->error, [&] {
    if (w->chunk_open) fail("chunk_begin: a chunk is open (tapdiff_chunk_end first)");
    if (tokens == nullptr || n < 1 || n > (1 << 24))
      fail(fmt::format("chunk_begin: expected 1 or more tokens, found {}", n));
    if (decode != 0 && n != 1) fail(fmt::format("chunk_begin: a decode step feeds one token, found {}", n));
    const int first = positions != nullptr ? positions[0] : w->next_position;
    for (std::int64_t i = 0; positions != nullptr && i < n; ++i)
      if (positions[i] != first + i)
        fail(fmt::format("chunk_begin: positions within a chunk must be consecutive; token {} is at {} after {}", i,
                         positions[i], first));
    if (first < 0) fail(fmt::format("chunk_begin: position {} is negative", first));
    for (std::int64_t i = 0; i < n; ++i)
      if (tokens[i] < 0 || tokens[i] >= w->model->config().vocab)
        fail(fmt::format("chunk_begin: token {} is {}, outside the vocabulary [0, {})", i, tokens[i],
                         w->model->config().vocab));
    w->chunk = {w->chunks, first, static_cast<int>(n), decode != 0};
    w->tokens.assign(tokens, tokens + n);
    w->recorded.clear();
    w->chunk_open = true;
  });
}

int tapdiff_record_f32(tapdiff_writer* w, int layer, const char* op, const float* values, std::int64_t rows,
                       std::int64_t width) {
  return record(w, layer, op, values, rows, width);
}

int tapdiff_record_f64(tapdiff_writer* w, int layer, const char* op, const double* values, std::int64_t rows,
                       std::int64_t width) {
  return record(w, layer, op, values, rows, width);
}

int tapdiff_chunk_end(tapdiff_writer* w) {
  if (w == nullptr) return 1;
  return guarded(w->error, [&] {
    if (!w->chunk_open) fail("chunk_end: no chunk is open");
    w->writer->end_chunk(w->chunk, w->tokens);
    w->chunk_open = false;
    w->next_position = w->chunk.first_pos + w->chunk.rows;
    ++w->chunks;
  });
}

int tapdiff_writer_finish(tapdiff_writer* w, const std::int32_t* generated, std::int64_t n_generated) {
  if (w == nullptr) return 1;
  const int failed = guarded(w->error, [&] {
    if (w->chunk_open) fail("finish: a chunk is open (tapdiff_chunk_end first)");
    if (n_generated < 0 || (n_generated > 0 && generated == nullptr))
      fail(fmt::format("finish: {} generated tokens at {}", n_generated, generated ? "an address" : "NULL"));
    w->writer->finish({{"generated", std::vector<std::int32_t>(generated, generated + n_generated)}});
  });
  delete w;
  return failed;
}

void tapdiff_writer_close(tapdiff_writer* w) { delete w; }

const char* tapdiff_writer_error(const tapdiff_writer* w) { return w != nullptr ? w->error.c_str() : "no writer"; }

tapdiff_dump* tapdiff_dump_open(const char* path, char* error, std::size_t error_size) {
  auto d = std::make_unique<tapdiff_dump>();
  const int failed = guarded(d->error, [&] {
    if (path == nullptr) fail("tapdiff_dump_open: path is NULL");
    d->reader = std::make_unique<dumps::DumpReader>(path);
    for (const model::TensorId& id : d->reader->tensors()) d->op_names.emplace_back(model::op_name(id.op));
  });
  if (failed != 0) {
    copy_error(d->error, error, error_size);
    return nullptr;
  }
  return d.release();
}

std::int64_t tapdiff_dump_rows(const tapdiff_dump* d) { return d != nullptr ? d->reader->rows() : 0; }

int tapdiff_dump_row(const tapdiff_dump* d, std::int64_t row, std::int32_t* token, std::int32_t* position,
                     std::int32_t* chunk, int* decode) {
  if (d == nullptr || row < 0 || row >= d->reader->rows()) return 1;
  const auto r = static_cast<std::size_t>(row);
  if (token != nullptr) *token = d->reader->tokens()[r];
  if (position != nullptr) *position = d->reader->positions()[r];
  if (chunk != nullptr) *chunk = d->reader->chunks()[r];
  if (decode != nullptr) *decode = d->reader->decode_flags()[r];
  return 0;
}

std::int64_t tapdiff_dump_taps(const tapdiff_dump* d) {
  return d != nullptr ? static_cast<std::int64_t>(d->reader->tensors().size()) : 0;
}

int tapdiff_dump_tap(const tapdiff_dump* d, std::int64_t i, int* layer, const char** op, std::int64_t* width) {
  if (d == nullptr || i < 0 || i >= tapdiff_dump_taps(d)) return 1;
  const model::TensorId& id = d->reader->tensors()[static_cast<std::size_t>(i)];
  if (layer != nullptr) *layer = id.layer;
  if (op != nullptr) *op = d->op_names[static_cast<std::size_t>(i)].c_str();
  if (width != nullptr) *width = model::op_width(d->reader->config(), id);
  return 0;
}

int tapdiff_dump_read_f32(tapdiff_dump* d, int layer, const char* op_name, std::int64_t first_row, std::int64_t rows,
                          float* out) {
  if (d == nullptr) return 1;
  return guarded(d->error, [&] {
    const std::optional<model::Op> op = model::op_from_name(op_name != nullptr ? op_name : "");
    if (!op) fail(fmt::format("read: '{}' is not an op name", op_name ? op_name : "(null)"));
    if (out == nullptr || first_row < 0 || rows < 0 || first_row + rows > d->reader->rows())
      fail(fmt::format("read: rows [{}, {}) of {} into {}", first_row, first_row + rows, d->reader->rows(),
                       out ? "a buffer" : "NULL"));
    const model::HostTensor t = d->reader->read({*op, layer}, first_row, rows);
    for (std::int64_t r = 0; r < t.rows(); ++r)
      for (std::int64_t c = 0; c < t.cols(); ++c) out[r * t.cols() + c] = static_cast<float>(t.at(r, c));
  });
}

const char* tapdiff_dump_model_path(const tapdiff_dump* d) {
  return d != nullptr ? d->reader->metadata().model_path.c_str() : "";
}

std::int64_t tapdiff_dump_generated(const tapdiff_dump* d, std::int32_t* tokens, std::int64_t max) {
  if (d == nullptr || !d->reader->summary().is_object() || !d->reader->summary().contains("generated")) return 0;
  const nlohmann::json& g = d->reader->summary()["generated"];
  const auto n = static_cast<std::int64_t>(g.size());
  for (std::int64_t i = 0; tokens != nullptr && i < std::min(n, max); ++i)
    tokens[i] = g[static_cast<std::size_t>(i)].get<std::int32_t>();
  return n;
}

const char* tapdiff_dump_error(const tapdiff_dump* d) { return d != nullptr ? d->error.c_str() : "no dump"; }

void tapdiff_dump_close(tapdiff_dump* d) { delete d; }

}  // extern "C"
