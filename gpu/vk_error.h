#pragma once
// Every VkResult is checked: a failure throws EnvironmentError naming the call, the result and
// what was being done ("vkAllocateMemory: VK_ERROR_OUT_OF_DEVICE_MEMORY while allocating ...").
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "gpu/vk_api.h"

namespace tapdiff::gpu {

std::string_view result_name(VkResult result);  // "VK_ERROR_OUT_OF_DEVICE_MEMORY"

[[noreturn]] void throw_vk_error(VkResult result, std::string_view call, std::string_view what);

// Throws unless result is VK_SUCCESS.
inline void check(VkResult result, std::string_view call) {
  if (result != VK_SUCCESS) throw_vk_error(result, call, {});
}

// The same with a description of what was being done, built only on failure.
template <typename Describe>
requires std::is_invocable_r_v<std::string, Describe>
void check(VkResult result, std::string_view call, Describe&& describe) {
  if (result != VK_SUCCESS) throw_vk_error(result, call, std::forward<Describe>(describe)());
}

// "1.2 GiB", "640 KiB": byte counts in messages.
std::string format_bytes(double bytes);

}  // namespace tapdiff::gpu
