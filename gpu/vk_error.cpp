#include "gpu/vk_error.h"

#include <fmt/core.h>

#include "model/errors.h"

namespace tapdiff::gpu {

std::string_view result_name(VkResult result) {
  switch (result) {
#define TAPDIFF_VK_RESULT(r) \
  case r: return #r;
    TAPDIFF_VK_RESULT(VK_SUCCESS)
    TAPDIFF_VK_RESULT(VK_NOT_READY)
    TAPDIFF_VK_RESULT(VK_TIMEOUT)
    TAPDIFF_VK_RESULT(VK_EVENT_SET)
    TAPDIFF_VK_RESULT(VK_EVENT_RESET)
    TAPDIFF_VK_RESULT(VK_INCOMPLETE)
    TAPDIFF_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    TAPDIFF_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    TAPDIFF_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    TAPDIFF_VK_RESULT(VK_ERROR_DEVICE_LOST)
    TAPDIFF_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    TAPDIFF_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    TAPDIFF_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    TAPDIFF_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    TAPDIFF_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    TAPDIFF_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    TAPDIFF_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    TAPDIFF_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
    TAPDIFF_VK_RESULT(VK_ERROR_UNKNOWN)
    TAPDIFF_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    TAPDIFF_VK_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    TAPDIFF_VK_RESULT(VK_ERROR_FRAGMENTATION)
    TAPDIFF_VK_RESULT(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    TAPDIFF_VK_RESULT(VK_PIPELINE_COMPILE_REQUIRED)
    TAPDIFF_VK_RESULT(VK_ERROR_VALIDATION_FAILED_EXT)
#undef TAPDIFF_VK_RESULT
    default: return "VK_RESULT_UNKNOWN";  // VkResult is open-ended: drivers may return newer codes
  }
}

void throw_vk_error(VkResult result, std::string_view call, std::string_view what) {
  std::string message = fmt::format("{}: {}", call, result_name(result));
  if (result_name(result) == "VK_RESULT_UNKNOWN") message += fmt::format(" ({})", static_cast<int>(result));
  if (!what.empty()) message += fmt::format(" while {}", what);
  throw EnvironmentError(message);
}

std::string format_bytes(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) bytes /= 1024.0, ++u;
  return u == 0 ? fmt::format("{:.0f} {}", bytes, units[u]) : fmt::format("{:.1f} {}", bytes, units[u]);
}

}  // namespace tapdiff::gpu
