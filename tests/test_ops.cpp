#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/errors.h"
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
  EXPECT_EQ(g.width({Op::k_proj, 0}), 8);
  EXPECT_EQ(g.width({Op::logits, 0}), 50);
}

// OLMo 2's block: no norm before the attention or the FFN, one after each, q/k normed as a whole.
TEST(Graph, IsBuiltFromTheBlock) {
  ModelConfig c;
  c.n_layers = 2, c.dim = 16, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 4, c.ffn_dim = 40, c.vocab = 50;
  c.block.pre_norms = false, c.block.post_norms = true, c.block.qk_norm = QkNorm::whole;
  const Graph g(c);
  ASSERT_EQ(g.steps().size(), 1u + 2u * 17u + 2u);
  std::vector<Op> layer0;
  for (const Step& s : g.steps())
    if (s.layer == 0) layer0.push_back(s.op);
  EXPECT_EQ(layer0, (std::vector<Op>{Op::q_proj, Op::k_proj, Op::v_proj, Op::q_norm, Op::k_norm, Op::rope_q, Op::rope_k,
                                     Op::attn, Op::o_proj, Op::attn_post_norm, Op::attn_residual, Op::ffn_gate,
                                     Op::ffn_up, Op::ffn_act, Op::ffn_down, Op::ffn_post_norm, Op::ffn_residual}));
  const Step& q1 = g.steps()[1 + 17];  // layer 1's q_proj reads layer 0's output itself
  EXPECT_EQ(q1.op, Op::q_proj);
  EXPECT_EQ(q1.inputs, (std::vector<TensorId>{{Op::ffn_residual, 0}}));
  const Step& residual = g.steps()[1 + 10];
  EXPECT_EQ(residual.inputs, (std::vector<TensorId>{{Op::embed, -1}, {Op::attn_post_norm, 0}}));
  // What an engine may fuse: only the final norm reads a residual add's output alone here.
  EXPECT_EQ(g.norm_of({Op::attn_residual, 0}), std::nullopt);
  EXPECT_EQ(g.norm_of({Op::ffn_residual, 1}), (TensorId{Op::final_norm, 2}));
  ModelConfig llama = c;
  llama.block = {};
  EXPECT_EQ(Graph(llama).norm_of({Op::attn_residual, 0}), (TensorId{Op::ffn_norm, 0}));
}

// A parallel block (GPT-NeoX's, with its own FFN norm) with a plain FFN: the FFN reads the layer's
// input, not the attention's residual add, and the second add sums onto the first.
TEST(Graph, RunsAParallelBlockWithAPlainFfn) {
  ModelConfig c;
  c.n_layers = 2, c.dim = 16, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 4, c.ffn_dim = 40, c.vocab = 50;
  c.block.norm = NormKind::layer, c.block.parallel = Parallel::own_norm, c.block.ffn = Ffn::plain;
  const Graph g(c);
  std::vector<Step> layer1;
  for (const Step& s : g.steps())
    if (s.layer == 1) layer1.push_back(s);
  std::vector<Op> ops;
  for (const Step& s : layer1) ops.push_back(s.op);
  EXPECT_EQ(ops, (std::vector<Op>{Op::attn_norm, Op::q_proj, Op::k_proj, Op::v_proj, Op::rope_q, Op::rope_k, Op::attn,
                                  Op::o_proj, Op::attn_residual, Op::ffn_norm, Op::ffn_up, Op::ffn_act, Op::ffn_down,
                                  Op::ffn_residual}));
  const auto step = [&](Op op) { return *std::ranges::find(layer1, op, &Step::op); };
  EXPECT_EQ(step(Op::ffn_norm).inputs, (std::vector<TensorId>{{Op::ffn_residual, 0}}));
  EXPECT_EQ(step(Op::ffn_act).inputs, (std::vector<TensorId>{{Op::ffn_up, 1}}));
  EXPECT_EQ(step(Op::ffn_residual).inputs, (std::vector<TensorId>{{Op::attn_residual, 1}, {Op::ffn_down, 1}}));
  c.block.parallel = Parallel::shared_norm;  // GPT-J's: one norm feeds both
  const Graph shared(c);
  const auto up =
      std::ranges::find_if(shared.steps(), [](const Step& s) { return s.op == Op::ffn_up && s.layer == 1; });
  EXPECT_EQ(up->inputs, (std::vector<TensorId>{{Op::attn_norm, 1}}));
  EXPECT_EQ(shared.position({Op::ffn_norm, 1}), shared.steps().size());
}

// HunYuan's q/k norms after RoPE: the attention reads the norms.
TEST(Graph, PutsTheQkNormsAfterRopeWhereTheBlockSays) {
  ModelConfig c;
  c.n_layers = 1, c.dim = 16, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 4, c.ffn_dim = 40, c.vocab = 50;
  c.block.qk_norm = QkNorm::per_head, c.block.qk_norm_after_rope = true;
  const Graph g(c);
  EXPECT_LT(g.position({Op::rope_q, 0}), g.position({Op::q_norm, 0}));
  const auto attn = std::ranges::find_if(g.steps(), [](const Step& s) { return s.op == Op::attn; });
  EXPECT_EQ(attn->inputs, (std::vector<TensorId>{{Op::q_norm, 0}, {Op::k_norm, 0}, {Op::v_proj, 0}}));
}

// Gemma 4: a full layer of its own wider heads and fewer KV heads, the values normed per head.
TEST(Graph, GivesEachLayerItsOwnHeadsAndNormsTheValues) {
  ModelConfig c;
  c.n_layers = 2, c.dim = 16, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 8, c.ffn_dim = 40, c.vocab = 50;
  c.block.v_norm = true;
  c.layer_shapes = {{2, 8}, {1, 12}};
  c.validate("c");
  const Graph g(c);
  const auto attn = std::ranges::find_if(g.steps(), [](const Step& s) { return s.op == Op::attn; });
  EXPECT_EQ(attn->inputs, (std::vector<TensorId>{{Op::rope_q, 0}, {Op::rope_k, 0}, {Op::v_norm, 0}}));
  EXPECT_EQ(g.width({Op::q_proj, 0}), 32);
  EXPECT_EQ(g.width({Op::q_proj, 1}), 48);
  EXPECT_EQ(g.width({Op::k_proj, 1}), 12);
  EXPECT_EQ(g.width({Op::v_norm, 1}), 12);
  EXPECT_EQ(g.width({Op::attn, 1}), 48);
  EXPECT_EQ(g.max_width(Op::attn), 48);
  EXPECT_EQ(head_layout({Op::v_norm, 1}, c).heads, 1);
  EXPECT_EQ(head_layout({Op::rope_q, 1}, c).head_dim, 12);
  EXPECT_EQ(head_layout({Op::rope_q, 0}, c).head_dim, 8);
  c.layer_shapes = {{3, 8}, {1, 12}};  // 3 KV heads cannot share 4 query heads
  EXPECT_THROW(c.validate("c"), FormatError);
  c.layer_shapes = {{2, 8}};  // a shape for every layer, or none
  EXPECT_THROW(c.validate("c"), FormatError);
  c.layer_shapes = {{2, 8}, {1, 12}};
  c.block.norm_offset = 1;  // the values' norm has no weight for an offset to scale
  EXPECT_THROW(c.validate("c"), FormatError);
}

// Gemma 4's per-layer inputs end each layer: made from the embedding, gated by the FFN's residual.
TEST(Graph, EndsEachLayerWithItsPerLayerInput) {
  ModelConfig c;
  c.n_layers = 2, c.dim = 16, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 8, c.ffn_dim = 40, c.vocab = 50;
  c.layer_inputs = {.dim = 6, .vocab = 30};
  c.validate("c");
  const Graph g(c);
  std::vector<Op> tail;
  for (const Step& s : g.steps())
    if (s.layer == 1 && g.position(s.output()) > g.position({Op::ffn_down, 1})) tail.push_back(s.op);
  EXPECT_EQ(tail, (std::vector<Op>{Op::ffn_residual, Op::ple_input, Op::ple_gate, Op::ple_act, Op::ple_proj,
                                   Op::ple_norm, Op::ple_residual}));
  const auto input = std::ranges::find_if(g.steps(), [](const Step& s) { return s.op == Op::ple_input; });
  EXPECT_EQ(input->inputs, (std::vector<TensorId>{{Op::embed, -1}}));
  const auto attn_norm = std::ranges::find_if(g.steps(), [](const Step& s) {
    return s.output() == TensorId{Op::attn_norm, 1};
  });
  EXPECT_EQ(attn_norm->inputs, (std::vector<TensorId>{{Op::ple_residual, 0}}));
  EXPECT_EQ(g.width({Op::ple_act, 1}), 6);
  EXPECT_EQ(g.width({Op::ple_norm, 1}), 16);
  EXPECT_EQ(last_residual(c), Op::ple_residual);
  c.layer_inputs.vocab = 0;  // a table of no rows
  EXPECT_THROW(c.validate("c"), FormatError);
}

// Gemma 4's MoE block: the router and the experts read the attention's residual through norms of
// their own, the dense FFN ffn_norm's; ffn_sum adds the two branches' normed outputs.
TEST(Graph, RunsAMixtureBesideTheDenseFfn) {
  ModelConfig c;
  c.n_layers = 2, c.dim = 16, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 8, c.ffn_dim = 40, c.vocab = 50;
  c.block.post_norms = true;
  c.experts.count = 4, c.experts.active = 2, c.experts.ffn_dim = 12, c.experts.normalize = true;
  c.experts.beside_dense = c.experts.expert_scales = true;
  c.validate("c");
  const Graph g(c);
  std::vector<Op> ffn;
  for (const Step& s : g.steps())
    if (s.layer == 1 && g.position(s.output()) > g.position({Op::ffn_norm, 1})) ffn.push_back(s.op);
  EXPECT_EQ(ffn, (std::vector<Op>{Op::moe_router_norm, Op::moe_router, Op::moe_ids, Op::moe_weights, Op::moe_norm,
                                  Op::moe_out, Op::moe_post_norm, Op::ffn_gate, Op::ffn_up, Op::ffn_act, Op::ffn_down,
                                  Op::dense_post_norm, Op::ffn_sum, Op::ffn_post_norm, Op::ffn_residual}));
  const auto inputs = [&](Op op) {
    return std::ranges::find_if(g.steps(), [&](const Step& s) { return s.output() == TensorId{op, 1}; })->inputs;
  };
  EXPECT_EQ(inputs(Op::moe_router_norm), (std::vector<TensorId>{{Op::attn_residual, 1}}));
  EXPECT_EQ(inputs(Op::moe_norm), (std::vector<TensorId>{{Op::attn_residual, 1}}));
  EXPECT_EQ(inputs(Op::ffn_gate), (std::vector<TensorId>{{Op::ffn_norm, 1}}));
  EXPECT_EQ(inputs(Op::ffn_sum), (std::vector<TensorId>{{Op::dense_post_norm, 1}, {Op::moe_post_norm, 1}}));
  EXPECT_EQ(g.width({Op::moe_router_norm, 1}), 16);
  EXPECT_EQ(g.width({Op::ffn_sum, 1}), 16);
  c.experts.shared_ffn_dim = 8;  // a shared expert has no place beside the dense FFN
  EXPECT_THROW(c.validate("c"), FormatError);
}

// Gemma 4's KV-sharing layers: q alone, attn reads the source layer's cache.
TEST(Graph, ALayerSharingAnotherLayersCacheHasNoKeysOrValuesOfItsOwn) {
  ModelConfig c;
  c.n_layers = 3, c.dim = 16, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 8, c.ffn_dim = 40, c.vocab = 50;
  c.block.qk_norm = model::QkNorm::per_head;
  c.block.v_norm = true;
  c.kv_sources = {0, 1, 0};
  c.validate("c");
  const Graph g(c);
  std::vector<Op> attention;
  for (const Step& s : g.steps())
    if (s.layer == 2 && g.position(s.output()) < g.position({Op::o_proj, 2})) attention.push_back(s.op);
  EXPECT_EQ(attention, (std::vector<Op>{Op::attn_norm, Op::q_proj, Op::q_norm, Op::rope_q, Op::attn}));
  const auto attn = std::ranges::find_if(g.steps(), [](const Step& s) { return s.output() == TensorId{Op::attn, 2}; });
  EXPECT_EQ(attn->inputs, (std::vector<TensorId>{{Op::rope_q, 2}}));
  EXPECT_TRUE(model::shares_kv(c, 2));
  EXPECT_EQ(model::kv_source(c, 2), 0);
  c.kv_sources = {0, 2, 2};  // a source after the layer
  EXPECT_THROW(c.validate("c"), FormatError);
  c.kv_sources = {0, 0, 1};  // a source that shares in turn
  EXPECT_THROW(c.validate("c"), FormatError);
  c.kv_sources = {0, 1, 0};
  c.sliding_window = 4, c.sliding_layers = {true, false, false};  // a sliding layer's cache for a full one
  EXPECT_THROW(c.validate("c"), FormatError);
}

// DeepSeek-V3's latent attention: q through its low-rank pair, keys and values from the normed
// latent, the shared RoPE key part from kv_a_proj; attn reads all four.
TEST(Graph, RunsLatentAttention) {
  ModelConfig c;
  c.n_layers = 1, c.dim = 16, c.n_heads = 4, c.n_kv_heads = 4, c.head_dim = 12, c.ffn_dim = 40, c.vocab = 50;
  c.rotary_dim = 4;
  c.mla = {.q_rank = 6, .kv_rank = 5, .nope_dim = 8, .rope_dim = 4, .v_dim = 3};
  c.validate("c");
  const Graph g(c);
  std::vector<Op> ops;
  for (const Step& s : g.steps())
    if (s.layer == 0) ops.push_back(s.op);
  EXPECT_EQ(ops,
            (std::vector<Op>{Op::attn_norm, Op::q_a_proj, Op::q_a_norm, Op::q_proj, Op::rope_q, Op::kv_a_proj,
                             Op::kv_a_norm, Op::k_proj, Op::v_proj, Op::rope_k, Op::attn, Op::o_proj, Op::attn_residual,
                             Op::ffn_norm, Op::ffn_gate, Op::ffn_up, Op::ffn_act, Op::ffn_down, Op::ffn_residual}));
  const auto attn = std::ranges::find_if(g.steps(), [](const Step& s) { return s.op == Op::attn; });
  EXPECT_EQ(attn->inputs, (std::vector<TensorId>{{Op::rope_q, 0}, {Op::k_proj, 0}, {Op::v_proj, 0}, {Op::rope_k, 0}}));
  const auto rope_k = std::ranges::find_if(g.steps(), [](const Step& s) { return s.op == Op::rope_k; });
  EXPECT_EQ(rope_k->inputs, (std::vector<TensorId>{{Op::kv_a_proj, 0}}));
  EXPECT_EQ(g.width({Op::q_a_norm, 0}), 6);
  EXPECT_EQ(g.width({Op::kv_a_proj, 0}), 9);
  EXPECT_EQ(g.width({Op::kv_a_norm, 0}), 5);
  EXPECT_EQ(g.width({Op::q_proj, 0}), 48);
  EXPECT_EQ(g.width({Op::k_proj, 0}), 32);
  EXPECT_EQ(g.width({Op::v_proj, 0}), 12);
  EXPECT_EQ(g.width({Op::rope_k, 0}), 4);
  EXPECT_EQ(g.width({Op::attn, 0}), 12);
  EXPECT_EQ(norm_eps(c, Op::kv_a_norm), 1e-6);
  EXPECT_EQ(norm_eps(c, Op::ffn_norm), c.norm_eps);
  c.mla.q_rank = 0;  // q_proj from attn_norm
  const Graph plain(c);
  EXPECT_EQ(plain.position({Op::q_a_proj, 0}), plain.steps().size());
  c.n_kv_heads = 2;
  EXPECT_THROW(c.validate("c"), FormatError);
}

// A dump's model_config.block gives the graph its model ran (the comparator's neighbours).
TEST(Block, RoundTripsThroughJsonAndRefusesUnknownNames) {
  Block b;
  b.pre_norms = false, b.post_norms = true, b.qk_norm = QkNorm::whole, b.activation = Activation::gelu_tanh;
  b.norm_offset = 1, b.embed_scale = 8, b.residual_scale = 0.22, b.logit_scale = 0.125, b.mlp_bias = true;
  EXPECT_EQ(block_from_json(to_json(b), "d.h5"), b);
  Block parallel;
  parallel.norm = NormKind::layer, parallel.norm_bias = true, parallel.ffn = Ffn::plain;
  parallel.activation = Activation::relu2, parallel.parallel = Parallel::own_norm, parallel.output_bias = true;
  parallel.qk_norm = QkNorm::per_head, parallel.qk_norm_after_rope = true;
  EXPECT_EQ(block_from_json(to_json(parallel), "d.h5"), parallel);
  Block oai;  // gpt-oss's: sinks, the clamped SwiGLU with its constants
  oai.attention_sinks = true, oai.activation = Activation::swiglu_oai, oai.swiglu = {.alpha = 1.3, .limit = 0.2};
  oai.qkv_bias = oai.o_bias = true;
  EXPECT_EQ(block_from_json(to_json(oai), "d.h5"), oai);
  EXPECT_EQ(block_from_json(nlohmann::json::object(), "d.h5"), Block{});
  nlohmann::json j = to_json(b);
  j["activation"] = "swish";
  try {
    block_from_json(j, "d.h5");
    FAIL() << "swish was accepted";
  } catch (const FormatError& e) {
    EXPECT_STREQ(e.what(),
                 "d.h5: model_config.block.activation: expected one of silu, gelu, gelu_tanh, relu, relu2, xielu, "
                 "swiglu_oai, found "
                 "\"swish\"");
  }
  j = to_json(b);
  j["pre_norms"] = 1;
  EXPECT_THROW(block_from_json(j, "d.h5"), FormatError);
}

}  // namespace tapdiff::model
