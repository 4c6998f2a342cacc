#pragma once
// The Vulkan compute engine: the graph of model/graph.h on a GPU (or Mesa lavapipe), f32
// arithmetic, weights dequantized in the kernels, KV cache on the device, command buffers of
// layers 1, 2-3, 4-7, ..., each submitted as soon as it is recorded. Untapped op outputs never leave the device. In f16
// mode weights and activations (op outputs, the KV cache) are stored as f16 and every sum still accumulates in f32: the
// engine the reference's f16 emulation (reference/cpu_engine.h) bounds. In llama.cpp's precision it
// rounds as the reference's llama.cpp emulation does (formats/llama_cpp_precision.h).
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "formats/llama_cpp_precision.h"
#include "gpu/device_info.h"
#include "gpu/pipelines.h"
#include "model/engine.h"
#include "model/weights.h"

namespace tapdiff::gpu {

struct VulkanEngineOptions {
  std::string device;              // "" = prefer a discrete GPU, then integrated, then any; "N"; or a name substring
  std::string kernels;             // overrides, "matmul=...,matvec=...,attention=..." (kernels.h)
  int max_context = 0;             // KV-cache limit in positions; 0 = grow as needed
  std::optional<bool> validation;  // Khronos validation layer; default: TAPDIFF_VK_VALIDATION=1
  bool print_validation = false;   // print validation messages to stderr as they arrive
  std::string inject;              // faults to plant, "NAME[@LAYER][,...]" (gpu/faults.h); "" = none
  bool f16 = false;                // --dtype f16: f16 weights and activations (needs storageBuffer16BitAccess)
  bool bf16 = false;               // --dtype bf16: bf16 weights and activations, held in f32 words
  // --dtype llama.cpp: f32, rounded where llama.cpp's CPU backend rounds (gpu/kernels.h; needs
  // shaderFloat64): Llama-family dense models only (formats::require_llama_cpp_precision), no faults
  bool llama_cpp = false;
  bool pipeline_statistics = false;  // capture the driver's statistics of each kernel, where offered
};

struct VulkanEngineStats {
  std::uint64_t submits = 0;   // command buffers submitted (weights upload included)
  std::uint64_t barriers = 0;  // memory barriers recorded
  std::uint64_t pipelines = 0;
  std::uint64_t weight_bytes = 0;  // the weights as stored on the device
  // While profiling (VulkanEngine::set_profiling): per op (model::Op), the device seconds from the end of the
  // op before it to its own end, summed over layers and chunks (idle time waiting for the host to
  // submit counts to the op after it: the first of each layer). Zeros otherwise.
  std::array<double, model::kOpCount> op_seconds{};
};

class VulkanEngine : public model::Engine {
 public:
  // Warnings and errors the validation layer reported since the engine was made (always empty
  // without validation). The instance is the process's (gpu::shared_instance): while two engines
  // live at once, each also sees the other's.
  virtual std::vector<std::string> validation_messages() const = 0;
  virtual bool validation_enabled() const = 0;
  virtual VulkanEngineStats stats() const = 0;
  // Device timestamps after every op from the next chunk on (VulkanEngineStats::op_seconds); they
  // keep the device from overlapping independent ops, so profiled runs are a little slower.
  // UsageError naming the device where its queue keeps no timestamps.
  virtual void set_profiling(bool on) = 0;
  virtual const DeviceInfo& device_info() const = 0;
  // The driver's statistics of each kernel made so far (registers, code size, ... as the driver
  // names them), with VulkanEngineOptions::pipeline_statistics on a device that offers
  // VK_KHR_pipeline_executable_properties; empty otherwise.
  virtual std::vector<PipelineStatistics> pipeline_statistics() const = 0;
};

// Uploads the model's weights; the model need not outlive the engine. EnvironmentError without a
// usable Vulkan device or memory or a feature f16 needs, UsageError for a --device that names none (listing them) or an
// --inject that parse_faults refuses.
std::unique_ptr<VulkanEngine> make_vulkan_engine(const model::Model& model, const VulkanEngineOptions& options);

// Every Vulkan device on this machine, in --device index order. EnvironmentError without a loader.
std::vector<DeviceInfo> list_devices();

}  // namespace tapdiff::gpu
