#include "gpu/instance.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>

#include <fmt/core.h>

#include "gpu/vk_error.h"
#include "model/errors.h"

namespace tapdiff::gpu {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  const char* level = (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) != 0 ? "error" : "warning";
  static_cast<MessageLog*>(user)->add(fmt::format("validation {}: {}", level, data->pMessage ? data->pMessage : ""));
  return VK_FALSE;
}

VkDebugUtilsMessengerCreateInfoEXT messenger_info(MessageLog* log) {
  VkDebugUtilsMessengerCreateInfoEXT info{};
  info.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
  info.messageSeverity =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  info.pfnUserCallback = on_message;
  info.pUserData = log;
  return info;
}

bool layer_present(const char* name) {
  std::uint32_t n = 0;
  check(vkEnumerateInstanceLayerProperties(&n, nullptr), "vkEnumerateInstanceLayerProperties");
  std::vector<VkLayerProperties> layers(n);
  check(vkEnumerateInstanceLayerProperties(&n, layers.data()), "vkEnumerateInstanceLayerProperties");
  for (const auto& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

void require_instance_version() {
  std::uint32_t version = VK_API_VERSION_1_0;
  check(vkEnumerateInstanceVersion(&version), "vkEnumerateInstanceVersion");
  if (version < VK_API_VERSION_1_2)
    throw EnvironmentError(fmt::format("Vulkan: tapdiff needs a Vulkan 1.2 loader; the installed one offers {}.{}",
                                       VK_API_VERSION_MAJOR(version), VK_API_VERSION_MINOR(version)));
}

}  // namespace

bool validation_requested_by_environment() {
  const char* v = std::getenv("TAPDIFF_VK_VALIDATION");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

void MessageLog::add(std::string message) {
  std::lock_guard lock(mutex_);
  if (print_) std::fprintf(stderr, "tapdiff: vulkan %s\n", message.c_str());
  messages_.push_back(std::move(message));
}

std::vector<std::string> MessageLog::messages(std::size_t from) const {
  std::lock_guard lock(mutex_);
  return {messages_.begin() + static_cast<std::ptrdiff_t>(std::min(from, messages_.size())), messages_.end()};
}

std::size_t MessageLog::count() const {
  std::lock_guard lock(mutex_);
  return messages_.size();
}

Instance::Instance(const InstanceOptions& options) : log_(std::make_unique<MessageLog>(options.print_messages)) {
  load_vulkan();
  require_instance_version();
  if (options.validation && !layer_present(kValidationLayer))
    throw EnvironmentError(
        fmt::format("Vulkan validation was requested (TAPDIFF_VK_VALIDATION=1), but the layer {} is "
                    "not installed (Debian package vulkan-validationlayers)",
                    kValidationLayer));
  create_instance(options.validation);
  if (options.validation) create_messenger();
}

void Instance::create_instance(bool validation) {
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "tapdiff";
  app.pEngineName = "tapdiff";
  app.apiVersion = VK_API_VERSION_1_2;
  // Synchronization validation checks the engine's barriers (a missing one is a hazard message).
  const VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT features{};
  features.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT;
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = enables;
  VkDebugUtilsMessengerCreateInfoEXT messenger = messenger_info(log_.get());
  messenger.pNext = &features;
  const char* layers[] = {kValidationLayer};
  const char* extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME};
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &app;
  if (validation) {
    info.pNext = &messenger;  // also reports problems of vkCreateInstance / vkDestroyInstance
    info.enabledLayerCount = 1;
    info.ppEnabledLayerNames = layers;
    info.enabledExtensionCount = 2;
    info.ppEnabledExtensionNames = extensions;
  }
  const VkResult r = vkCreateInstance(&info, nullptr, &instance_);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    throw EnvironmentError(
        "Vulkan: tapdiff needs a Vulkan 1.2 driver, and the loader found none (vkCreateInstance: "
        "VK_ERROR_INCOMPATIBLE_DRIVER); install a GPU driver, or mesa-vulkan-drivers for the CPU device lavapipe");
  check(r, "vkCreateInstance", [] { return std::string("creating a Vulkan 1.2 instance"); });
}

void Instance::create_messenger() {
  auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
      vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
  destroy_messenger_ = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
      vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
  VkResult r = VK_ERROR_EXTENSION_NOT_PRESENT;
  if (create != nullptr && destroy_messenger_ != nullptr) {
    const VkDebugUtilsMessengerCreateInfoEXT info = messenger_info(log_.get());
    r = create(instance_, &info, nullptr, &messenger_);
  }
  if (r != VK_SUCCESS) {
    vkDestroyInstance(instance_, nullptr);
    throw_vk_error(r, "vkCreateDebugUtilsMessengerEXT", "enabling Vulkan validation");
  }
}

Instance::~Instance() {
  if (messenger_ != VK_NULL_HANDLE) destroy_messenger_(instance_, messenger_, nullptr);
  if (instance_ != VK_NULL_HANDLE) vkDestroyInstance(instance_, nullptr);
}

std::vector<VkPhysicalDevice> Instance::physical_devices() const {
  std::uint32_t n = 0;
  check(vkEnumeratePhysicalDevices(instance_, &n, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> devices(n);
  if (n > 0) {
    const VkResult r = vkEnumeratePhysicalDevices(instance_, &n, devices.data());
    if (r != VK_INCOMPLETE) check(r, "vkEnumeratePhysicalDevices");
    devices.resize(n);
  }
  return devices;
}

std::shared_ptr<const Instance> shared_instance(const InstanceOptions& options) {
  static std::mutex mutex;
  // Never destroyed: vkDestroyInstance from the process's static destructors crashes NVIDIA's
  // driver (SIGSEGV at exit), whose own teardown may already have run.
  static auto* made = new std::map<std::pair<bool, bool>, std::shared_ptr<const Instance>>();
  std::lock_guard lock(mutex);
  std::shared_ptr<const Instance>& instance = (*made)[{options.validation, options.print_messages}];
  if (instance == nullptr) instance = std::make_shared<const Instance>(options);  // none kept when it throws
  return instance;
}

}  // namespace tapdiff::gpu
