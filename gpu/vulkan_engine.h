#pragma once
// The Vulkan compute engine: the graph of model/graph.h on a GPU (or Mesa lavapipe), f32
// arithmetic, weights dequantized in the kernels, KV cache on the device, one command buffer per
// chunk. Untapped op outputs never leave the device. In f16 mode weights and activations (op
// outputs, the KV cache) are stored as f16 and every sum still accumulates in f32: the engine the
// reference's f16 emulation (reference/cpu_engine.h) bounds.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gpu/device_info.h"
#include "model/engine.h"
#include "model/weights.h"

namespace tapdiff::gpu {

struct VulkanEngineOptions {
  std::string device;              // "" = prefer a discrete GPU, then integrated, then any; "N"; or a name substring
  std::string kernels;             // overrides, "matmul=tiled|matvec,matvec=subgroup|shared" (kernels.h)
  int max_context = 0;             // KV-cache limit in positions; 0 = grow as needed
  std::optional<bool> validation;  // Khronos validation layer; default: TAPDIFF_VK_VALIDATION=1
  bool print_validation = false;   // print validation messages to stderr as they arrive
  std::string inject;              // faults to plant, "NAME[@LAYER][,...]" (gpu/faults.h); "" = none
  bool f16 = false;                // --dtype f16: f16 weights and activations (needs storageBuffer16BitAccess)
};

// One sequence's rows in a pass of a ragged batch.
struct BatchPart {
  int sequence = 0;
  std::span<const std::int32_t> tokens;
  int first_pos = 0;    // the rows the sequence's KV cache holds
  bool decode = false;  // a decode step (faults that act on decode steps look at it)
};

struct VulkanEngineStats {
  std::uint64_t submits = 0;   // command buffers submitted (weights upload included)
  std::uint64_t barriers = 0;  // memory barriers recorded
  std::uint64_t pipelines = 0;
  std::uint64_t weight_bytes = 0;  // the weights as stored on the device
};

class VulkanEngine : public model::Engine {
 public:
  // Warnings and errors the validation layer reported so far (always empty without validation).
  virtual std::vector<std::string> validation_messages() const = 0;
  virtual bool validation_enabled() const = 0;
  virtual VulkanEngineStats stats() const = 0;
  virtual const DeviceInfo& device_info() const = 0;

  // Ragged batches. set_sequences(n) empties the KV caches and makes room for n sequences, each
  // with its own cache and positions (1 after construction). begin_batch() starts a forward pass
  // over the parts' rows, concatenated in their order: every op output is [total rows, width]
  // and execute() / end_chunk() work as for a chunk. begin_chunk() is a pass over sequence 0
  // alone; read_kv() / write_kv() address sequence 0. UsageError for a sequence out of range or
  // named twice, or a part that does not continue its sequence's cache.
  virtual void set_sequences(int n) = 0;
  virtual void begin_batch(int index, std::span<const BatchPart> parts) = 0;
};

// Uploads the model's weights; the model need not outlive the engine. EnvironmentError without a
// usable Vulkan device or memory or a feature f16 needs, UsageError for a --device that names none (listing them) or an
// --inject that parse_faults refuses.
std::unique_ptr<VulkanEngine> make_vulkan_engine(const model::Model& model, const VulkanEngineOptions& options);

// Every Vulkan device on this machine, in --device index order. EnvironmentError without a loader.
std::vector<DeviceInfo> list_devices();

}  // namespace tapdiff::gpu
