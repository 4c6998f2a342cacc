#pragma once
// DeepSeek-V3.2's sparse attention indexer (model/config.h SparseIndexer): its scores of the cached
// positions for each query of a chunk, and the positions each query keeps.
#include "model/config.h"
#include "reference/eigen_types.h"

namespace tapdiff::reference {

// Row t (position first_pos + t) of q [T, heads * head_dim] (after RoPE) and w [T, heads] against
// each cached key [>= first_pos + T, head_dim]: sum_h w[t,h] heads^-1/2 relu(q[t,h] . k[p]
// head_dim^-1/2) for p <= first_pos + t, -inf after. -> [T, first_pos + T]
template <typename S>
Mat<S> index_scores(const Mat<S>& q, const Mat<S>& keys, const Mat<S>& w, int first_pos,
                    const model::SparseIndexer& indexer);

// Each row's kept positions: the top_k best scores of its own positions and earlier ones (on equal
// scores the earlier position), ascending, then -1 where the row has fewer. -> [T, top_k]
template <typename S>
void kept_positions(const Mat<S>& scores, int first_pos, int top_k, Mat<S>& out);

// Each row's kept scores descending, then the best score of a position not kept; 0 in the places
// past the row's positions (the best not kept of a row that keeps them all). -> [T, top_k + 1]
template <typename S>
void kept_scores(const Mat<S>& scores, int first_pos, int top_k, Mat<S>& out);

}  // namespace tapdiff::reference
