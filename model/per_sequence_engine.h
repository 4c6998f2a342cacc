#pragma once
// A ragged batch run as each sequence alone: one engine per sequence, every pass split into its
// parts, each part a chunk of its own sequence's engine. How an engine that runs one sequence (the
// reference) takes part in a batched comparison: its outputs are what each sequence gives alone.
#include <functional>
#include <memory>
#include <vector>

#include "model/engine.h"

namespace tapdiff::model {

class PerSequenceEngine final : public Engine {
 public:
  // One engine per sequence, all of one kind and model (at least one).
  explicit PerSequenceEngine(std::vector<std::unique_ptr<Engine>> engines);

  std::string name() const override { return engines_.front()->name(); }
  std::string device() const override { return engines_.front()->device(); }
  std::string compute_dtype() const override { return engines_.front()->compute_dtype(); }
  std::string kernel(Op op) const override { return engines_.front()->kernel(op); }
  Scalar scalar() const override { return engines_.front()->scalar(); }

  void reset() override;
  void begin_chunk(std::span<const std::int32_t> tokens, const ChunkInfo& chunk) override;
  void execute(const Step& step, const Deliver& deliver) override;
  void end_chunk() override;
  HostTensor read(const TensorId& id) override;
  HostTensor read_rows(const TensorId& id, std::int64_t first, std::int64_t count) override;
  void write(const TensorId& id, const HostTensor& value) override;
  HostTensor read_kv(int layer, bool value) override { return engines_.front()->read_kv(layer, value); }
  void write_kv(int layer, bool value, const HostTensor& rows) override {
    engines_.front()->write_kv(layer, value, rows);
  }

  bool runs_batches() const override { return true; }
  // UsageError for more sequences than engines.
  void set_sequences(int n) override;
  void begin_batch(int index, std::span<const BatchPart> parts) override;

 private:
  Engine& engine_of(const BatchPart& part) { return *engines_[static_cast<std::size_t>(part.sequence)]; }

  std::vector<std::unique_ptr<Engine>> engines_;
  int sequences_ = 1;
  std::vector<int> next_chunk_;   // per sequence: its next chunk's index
  std::vector<BatchPart> parts_;  // the current pass
};

// The engine for a run of `sequences` sequences, from a maker of engines that run one: the one
// engine itself for a single sequence, else a PerSequenceEngine of one per sequence.
std::unique_ptr<Engine> engine_per_sequence(std::size_t sequences,
                                            const std::function<std::unique_ptr<Engine>()>& make);

}  // namespace tapdiff::model
