#pragma once
// A SPIR-V module written word by word, for kernels that Debian 12's glslang (12.0) has no GLSL
// for (gpu/matmul_coop2.h). Instructions go into the module's sections in the order the
// specification's logical layout requires; ids are handed out in order. Nothing is checked here:
// the generator knows its instructions (tests/test_spirv_module.cpp walks the result).
#include <array>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string_view>
#include <vector>

namespace tapdiff::gpu::spirv {

using Id = std::uint32_t;

enum class Section : std::uint8_t {
  capabilities,
  extensions,
  imports,
  memory_model,
  entry_points,
  execution_modes,
  decorations,
  globals,  // types, constants, global variables
  functions,
};

inline constexpr std::uint32_t kMagic = 0x07230203;
inline constexpr std::uint32_t kVersion1_5 = 0x00010500;
inline constexpr std::uint32_t kVersion1_6 = 0x00010600;

class Module {
 public:
  Id id() { return next_id_++; }
  // One instruction: its opcode and operand words (ids and literals alike).
  void add(Section section, std::uint16_t opcode, std::initializer_list<std::uint32_t> operands);
  void add(Section section, std::uint16_t opcode, const std::vector<std::uint32_t>& operands);
  // `result` = an instruction that defines it, of type `type` (in the functions section unless
  // told): returns `result`.
  Id def(std::uint16_t opcode, Id type, Id result, std::initializer_list<std::uint32_t> operands,
         Section section = Section::functions);
  // A new id defined by the instruction.
  Id op(std::uint16_t opcode, Id type, std::initializer_list<std::uint32_t> operands) {
    return def(opcode, type, id(), operands);
  }
  // A global that defines a new id without a result type (a type): returns the id.
  Id type(std::uint16_t opcode, std::initializer_list<std::uint32_t> operands);
  // A global of type `type` (a constant, a variable): returns its new id.
  Id global(std::uint16_t opcode, Id type, std::initializer_list<std::uint32_t> operands) {
    return def(opcode, type, id(), operands, Section::globals);
  }
  void decorate(Id target, std::initializer_list<std::uint32_t> decoration);
  // An instruction of a function body without a result.
  void code(std::uint16_t opcode, std::initializer_list<std::uint32_t> operands) {
    add(Section::functions, opcode, operands);
  }
  // Starts block `block`: returns it.
  Id label(Id block);
  // 32-bit unsigned integer constant of the module's uint type (declared on first use, once).
  Id u32(std::uint32_t value);
  void set_uint_type(Id type) { uint_type_ = type; }

  // The module: header (version, bound) and the sections in order.
  std::vector<std::uint32_t> words(std::uint32_t version) const;

 private:
  std::array<std::vector<std::uint32_t>, 9> sections_;
  std::map<std::uint32_t, Id> u32_;
  Id uint_type_ = 0;
  Id next_id_ = 1;
};

// A literal string's words: UTF-8 bytes, nul-terminated, padded with nuls to whole words.
std::vector<std::uint32_t> string_words(std::string_view text);

}  // namespace tapdiff::gpu::spirv
