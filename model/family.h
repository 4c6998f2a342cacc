#pragma once
// The families of decoders tapdiff computes, as a value (model/families.def). Everything tapdiff
// knows of each is its file, formats/families/<family>.cpp (formats/family_spec.h). Inside the code
// a family is a Family; its names are read and written only where files and messages are: dumps'
// model_config.arch (family_name), Hugging Face's model_type and llama.cpp's general.architecture
// (formats::family_named).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tapdiff::model {

enum class Family : std::uint8_t {
#define TAPDIFF_FAMILY(id, name) id,
#include "model/families.def"
#undef TAPDIFF_FAMILY
};

// How many families there are.
inline constexpr std::size_t kFamilyCount = 0
#define TAPDIFF_FAMILY(id, name) +1
#include "model/families.def"
#undef TAPDIFF_FAMILY
    ;

// The name dumps write: "qwen3_moe".
std::string_view family_name(Family f);
// Every family's name, in the table's order: "llama, mistral, ...".
std::string family_names();

}  // namespace tapdiff::model
