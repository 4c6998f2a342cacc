#pragma once
// What B's values of the first failing op look like when they are not A's own: A's values of a
// neighbouring layer or op (an index off by one, hidden states taken one step early or late), or
// A's values in another order within each row (a head order, a channel order such as the GGUF
// q/k row permutation). Reads a few rows of both runs, from the first bad row on.
#include <vector>

#include "bisect/compare/comparator.h"
#include "bisect/judge/diagnosis.h"

namespace tapdiff::bisect {

// Diagnoses "neighbour" and "permuted" (docs/tolerances.md); empty on a match or when neither holds.
std::vector<Diagnosis> lookalikes(const CompareResult& result, const TensorSource& a, const TensorSource& b);

}  // namespace tapdiff::bisect
