#pragma once
// The Vulkan instance, optionally with the Khronos validation layer and a debug-utils messenger
// that collects every warning and error it reports (tests fail on any).
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpu/vk_api.h"

namespace tapdiff::gpu {

struct InstanceOptions {
  bool validation = false;      // VK_LAYER_KHRONOS_validation with synchronization validation
  bool print_messages = false;  // also print each validation message to stderr as it arrives
};

// Whether TAPDIFF_VK_VALIDATION=1 is set in the environment.
bool validation_requested_by_environment();

// Validation messages (warnings and errors), collected from the layer's callback thread.
class MessageLog {
 public:
  explicit MessageLog(bool print) : print_(print) {}
  void add(std::string message);
  std::vector<std::string> messages(std::size_t from = 0) const;  // those after the first `from`
  std::size_t count() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> messages_;
  bool print_;
};

class Instance {
 public:
  // EnvironmentError when there is no loader, the loader offers less than Vulkan 1.2, or
  // validation was asked for and the layer is not installed.
  explicit Instance(const InstanceOptions& options);
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  VkInstance handle() const { return instance_; }
  bool validation() const { return messenger_ != VK_NULL_HANDLE; }
  std::vector<VkPhysicalDevice> physical_devices() const;
  // Validation messages so far, after the first `from` of them (see message_count).
  std::vector<std::string> messages(std::size_t from = 0) const { return log_->messages(from); }
  std::size_t message_count() const { return log_->count(); }

 private:
  void create_instance(bool validation);
  void create_messenger();

  std::unique_ptr<MessageLog> log_;  // its address is the messenger's user data
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger_ = nullptr;
};

// The process's instance for these options, made on first use and never destroyed (the process's
// end releases it); engines share it. NVIDIA's driver refuses vkCreateInstance with
// VK_ERROR_INCOMPATIBLE_DRIVER once a process has made 28 instances, destroyed or not, so an
// instance per engine would end long test runs and any tool that makes engines one after another.
// Validation messages of every user of the instance go to its one log.
std::shared_ptr<const Instance> shared_instance(const InstanceOptions& options);

}  // namespace tapdiff::gpu
