#pragma once
// What an engine computes in, read from what it wrote, for a dump that does not say (a safetensors
// or .npz dump of an outside engine): the name map it was imported through (llama.cpp's names: a
// run of llama.cpp's CPU backend), else the values of its computed ops. Every element an f16 or
// bf16 engine keeps between ops is an f16 or bf16 value, which a value computed in f32 is once in
// 2^13 or 2^16; so 64 non-zero values of one op all of one such type are evidence, and values no
// f16 or bf16 holds say f32. The embedding is not looked at: it is the checkpoint's own values,
// whatever B computes in.
#include "bisect/compare/comparator.h"
#include "dumps/dump_reader.h"

namespace tapdiff::bisect {

// From inferred, with the evidence in words; From unknown (value f32) when nothing tells.
PrecisionOfB infer_precision(const dumps::DumpReader& b);
// B's precision as its dump states it (compute_dtype), else infer_precision.
PrecisionOfB precision_of(const dumps::DumpReader& b);

}  // namespace tapdiff::bisect
