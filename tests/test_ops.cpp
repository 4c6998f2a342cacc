#include <gtest/gtest.h>

#include "model/graph.h"
#include "model/ops.h"

namespace tapdiff::model {

TEST(Ops, NamesRoundTripThroughTheTable) {
  for (Op op : kAllOps) EXPECT_EQ(op_from_name(op_name(op)), op);
  EXPECT_EQ(op_name(Op::rope_k), "rope_k");
  EXPECT_EQ(op_class(Op::rope_k), OpClass::rope);
  EXPECT_EQ(op_class_name(op_class(Op::logits)), "gemm");
  EXPECT_FALSE(op_from_name("rope_z").has_value());
}

TEST(Graph, HasEveryOpOfEveryLayerInOrder) {
  ModelConfig c;
  c.n_layers = 3, c.dim = 16, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 4, c.ffn_dim = 40, c.vocab = 50;
  const Graph g(c);
  ASSERT_EQ(g.steps().size(), 1u + 3u * 15u + 2u);
  EXPECT_EQ(g.steps().front().op, Op::embed);
  EXPECT_EQ(g.steps().front().layer, -1);
  EXPECT_EQ(g.steps().back().op, Op::logits);
  EXPECT_EQ(g.steps().back().layer, 3);
  // Layer 1's attention norm reads layer 0's output.
  const Step& norm1 = g.steps()[1 + 15];
  EXPECT_EQ(norm1.op, Op::attn_norm);
  ASSERT_EQ(norm1.inputs.size(), 1u);
  EXPECT_EQ(norm1.inputs[0], (TensorId{Op::ffn_residual, 0}));
  EXPECT_EQ(g.width(Op::k_proj), 8);
  EXPECT_EQ(g.width(Op::logits), 50);
}

}  // namespace tapdiff::model
