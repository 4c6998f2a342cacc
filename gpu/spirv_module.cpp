#include "gpu/spirv_module.h"

#include "gpu/spirv_ops.h"
#include "model/errors.h"

namespace tapdiff::gpu::spirv {

namespace {

std::vector<std::uint32_t>& append(std::vector<std::uint32_t>& to, std::uint16_t opcode, const std::uint32_t* operands,
                                   std::size_t count) {
  TAPDIFF_ASSERT(count < 0xFFFF, "SPIR-V instruction {} with {} operands", opcode, count);
  to.push_back(static_cast<std::uint32_t>(count + 1) << 16 | opcode);
  to.insert(to.end(), operands, operands + count);
  return to;
}

}  // namespace

void Module::add(Section section, std::uint16_t opcode, std::initializer_list<std::uint32_t> operands) {
  append(sections_[static_cast<std::size_t>(section)], opcode, operands.begin(), operands.size());
}

void Module::add(Section section, std::uint16_t opcode, const std::vector<std::uint32_t>& operands) {
  append(sections_[static_cast<std::size_t>(section)], opcode, operands.data(), operands.size());
}

Id Module::def(std::uint16_t opcode, Id type, Id result, std::initializer_list<std::uint32_t> operands,
               Section section) {
  std::vector<std::uint32_t> all{type, result};
  all.insert(all.end(), operands);
  add(section, opcode, all);
  return result;
}

Id Module::type(std::uint16_t opcode, std::initializer_list<std::uint32_t> operands) {
  const Id result = id();
  std::vector<std::uint32_t> all{result};
  all.insert(all.end(), operands);
  add(Section::globals, opcode, all);
  return result;
}

void Module::decorate(Id target, std::initializer_list<std::uint32_t> decoration) {
  std::vector<std::uint32_t> all{target};
  all.insert(all.end(), decoration);
  add(Section::decorations, OpDecorate, all);
}

Id Module::label(Id block) {
  code(OpLabel, {block});
  return block;
}

Id Module::u32(std::uint32_t value) {
  TAPDIFF_ASSERT(uint_type_ != 0, "SPIR-V constant {} before the uint type", value);
  const auto [it, inserted] = u32_.try_emplace(value, 0);
  if (inserted) {
    it->second = id();
    add(Section::globals, OpConstant, {uint_type_, it->second, value});
  }
  return it->second;
}

std::vector<std::uint32_t> Module::words(std::uint32_t version) const {
  std::vector<std::uint32_t> out{kMagic, version, 0, next_id_, 0};
  for (const auto& s : sections_) out.insert(out.end(), s.begin(), s.end());
  return out;
}

std::vector<std::uint32_t> string_words(std::string_view text) {
  std::vector<std::uint32_t> words(text.size() / 4 + 1, 0);
  for (std::size_t i = 0; i < text.size(); ++i)
    words[i / 4] |= static_cast<std::uint32_t>(static_cast<unsigned char>(text[i])) << (8 * (i % 4));
  return words;
}

}  // namespace tapdiff::gpu::spirv
