#pragma once
// The seams between the graph, the engines and the observers (taps).
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "model/graph.h"
#include "model/host_tensor.h"

namespace tapdiff::model {

// One forward pass over a chunk of consecutive token rows of one sequence: a prefill chunk or a
// decode step (rows == 1).
struct ChunkInfo {
  int index = 0;      // 0, 1, ... over the whole run (prefill chunks, then decode steps)
  int first_pos = 0;  // position of the chunk's first row in the sequence
  int rows = 0;
  bool decode = false;
};

// One sequence's rows in a pass of a ragged batch (Engine::begin_batch).
struct BatchPart {
  int sequence = 0;
  std::span<const std::int32_t> tokens;
  int first_pos = 0;    // the rows the sequence's KV cache holds
  bool decode = false;  // a decode step (faults that act on decode steps look at it)
};

// Where an op's output lives in a run: its tensor and the chunk it was computed in.
struct TapKey {
  TensorId id;
  ChunkInfo chunk;
};

// f16 values as their bit patterns, [rows, cols] row-major: an op output as an f16 engine holds it.
struct HalfRows {
  std::span<const std::uint16_t> bits;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
};

// An observer after every step. wants() is asked first, so an engine keeps unwatched outputs
// where they are (on the GPU); record() then receives each wanted output, [chunk.rows, width].
class Tap {
 public:
  virtual ~Tap() = default;
  virtual bool wants(const TapKey& key) const = 0;
  virtual void record(const TapKey& key, const HostTensor& value) = 0;
  // Offered before record() where the engine holds the output as f16 (--dtype f16 on the GPU):
  // true when the tap took the bits as they are (a dump stored as f16 writes them unconverted);
  // false, the default, to receive the output through record() as f32 instead.
  virtual bool record_f16(const TapKey& key, const HalfRows& value) {
    (void)key;
    (void)value;
    return false;
  }
  // Called after every record() of the chunk has happened; a writer makes the chunk durable here.
  virtual void end_chunk(const ChunkInfo& chunk, std::span<const std::int32_t> tokens) {
    (void)chunk;
    (void)tokens;
  }
};

// A tap that wants nothing.
class NullTap final : public Tap {
 public:
  bool wants(const TapKey&) const override { return false; }
  void record(const TapKey&, const HostTensor&) override {}
};

// Receives a wanted op output; an engine may call it during execute() or later, but before
// end_chunk() returns. The tensor is valid during the call only (an engine may refill it for the
// next delivery): a receiver copies what it keeps.
// An engine that holds the output as f16 may offer the bits first (offer_f16, Tap::record_f16).
class Deliver {
 public:
  Deliver() = default;
  Deliver(std::nullptr_t) {}  // NOLINT(google-explicit-constructor): no delivery, as {} is
  template <typename F>
  requires std::is_invocable_v<F&, const HostTensor&> Deliver(F value)
      : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Deliver(std::function<void(const HostTensor&)> value, std::function<bool(const HalfRows&)> f16)
      : value_(std::move(value)), f16_(std::move(f16)) {}

  explicit operator bool() const { return static_cast<bool>(value_); }
  void operator()(const HostTensor& value) const { value_(value); }
  // true when the receiver took the f16 bits; otherwise the engine delivers the value widened.
  bool offer_f16(const HalfRows& value) const { return f16_ && f16_(value); }

 private:
  std::function<void(const HostTensor&)> value_;
  std::function<bool(const HalfRows&)> f16_;
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string name() const = 0;           // "ref", "vulkan"
  virtual std::string device() const = 0;         // "CPU (Eigen, 2 threads)", GPU name
  virtual std::string compute_dtype() const = 0;  // "f32", "f64", "f16"
  virtual std::string kernel(Op op) const = 0;    // the kernel variant that runs op
  virtual Scalar scalar() const = 0;              // type of tensors read() returns

  virtual void reset() = 0;  // empty KV cache
  virtual void begin_chunk(std::span<const std::int32_t> tokens, const ChunkInfo& chunk) = 0;
  // Runs one step; when deliver is set, the step's output reaches it by end_chunk().
  virtual void execute(const Step& step, const Deliver& deliver) = 0;
  virtual void end_chunk() = 0;

  // Ragged batches, for engines that run them (the others take one sequence only and throw
  // UsageError naming the engine otherwise).
  // set_sequences(n) empties the KV caches and makes room for n sequences, each with its own cache
  // and positions (1 after construction). begin_batch() starts a forward pass over the parts' rows,
  // concatenated in their order: every op output is [total rows, width] and execute() / read() /
  // write() / end_chunk() work as for a chunk. begin_chunk() is a pass over sequence 0 alone;
  // read_kv() / write_kv() address sequence 0. UsageError for a sequence out of range or named
  // twice, or a part that does not continue its sequence's cache.
  virtual bool runs_batches() const { return false; }
  virtual void set_sequences(int n);
  virtual void begin_batch(int index, std::span<const BatchPart> parts);

  // Host copy of the latest value of an op output of the current chunk ([rows, width]).
  virtual HostTensor read(const TensorId& id) = 0;
  // Rows [first, first + count) of it: what a runner needs of the logits (their last row), without
  // copying the rest (a 2048-token chunk of a 128k vocabulary is 1 GB of f32).
  virtual HostTensor read_rows(const TensorId& id, std::int64_t first, std::int64_t count) {
    return read(id).slice_rows(first, count);
  }
  // Teacher forcing: replace an op output of the current chunk.
  virtual void write(const TensorId& id, const HostTensor& value) = 0;
  // The KV cache of a layer: rows [0, n_past) of K (after RoPE) or V, [n_past, kv_dim].
  virtual HostTensor read_kv(int layer, bool value) = 0;
  virtual void write_kv(int layer, bool value, const HostTensor& rows) = 0;
};

}  // namespace tapdiff::model
