"""Tiny random models made and saved by transformers itself, one per (family, RoPE type).

Each case is a config that transformers builds a model from; the weights are random (seeded) with
norm weights away from 1, so that a misread norm shows. Saved with save_pretrained in float32, in
the config format transformers 5.x writes, or rewritten as 4.x wrote it (top-level rope_theta and
rope_scaling, torch_dtype).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import transformers

from gguf_models import VOCAB as GGUF_VOCAB

SHAPE = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=3, num_attention_heads=4,
             num_key_value_heads=2, vocab_size=160)


@dataclass
class Case:
    name: str
    model_type: str  # a transformers model_type tapdiff reads (formats/hf_config.cpp)
    rope: dict | None = field(default_factory=lambda: {"rope_type": "default", "rope_theta": 10000.0})  # None: no RoPE
    extra: dict = field(default_factory=dict)
    composite: dict | None = None  # a multimodal model around the text model: its model_type and keys
    eps_key: str | None = "rms_norm_eps"  # the family's key for the norms' epsilon (None: it has none)
    layer_types_in_4x: bool = False  # the 4.x config keeps layer_types (its config class needs them)
    drop: tuple = ()  # keys of SHAPE the family's config has not (GPT-NeoX: num_key_value_heads)
    shape: dict | None = None  # the sizes under the family's own names, in place of SHAPE (GPT-2)
    since_5x: bool = False  # a family transformers 4.x never had: no 4.x config of it to write

    def config(self) -> transformers.PretrainedConfig:
        cls = transformers.CONFIG_MAPPING[self.model_type]
        shape = self.shape if self.shape is not None else \
            {k: v for k, v in {**SHAPE, **({self.eps_key: 1e-5} if self.eps_key else {})}.items()
             if k not in self.drop}
        rope = {} if self.rope is None else {"rope_parameters": dict(self.rope)}
        text = cls(**shape, **rope, **{"tie_word_embeddings": False, **self.extra})
        if self.composite is None:
            return text
        keys = dict(self.composite)
        return transformers.CONFIG_MAPPING[keys.pop("model_type")](text_config=text, **keys)


# Special tokens inside the tiny vocabulary, for the families whose defaults lie outside it.
IDS = {"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0}

# A mixture of experts' router weight (Mixtral's block_sparse_moe.gate, Qwen3-MoE's mlp.gate, Granite-MoE's
# block_sparse_moe.router, Hunyuan-MoE's mlp.gate.wg, gpt-oss's mlp.router, Llama 4's feed_forward.router,
# Gemma 4's router.proj).
ROUTER = ("mlp.gate.weight", "block_sparse_moe.gate.weight", "block_sparse_moe.router.weight", "mlp.gate.wg.weight",
          "mlp.router.weight", "feed_forward.router.weight", "router.proj.weight")

# Image encoders as small as they get, for the multimodal cases (a token-id run never uses them).
TINY_SIGLIP = dict(model_type="siglip_vision_model", hidden_size=32, intermediate_size=48, num_hidden_layers=1,
                   num_attention_heads=2, image_size=28, patch_size=14)
TINY_LLAMA4_VISION = dict(model_type="llama4_vision_model", hidden_size=32, intermediate_size=48, num_hidden_layers=1,
                          num_attention_heads=2, image_size=28, patch_size=14, vision_output_dim=32,
                          projector_input_dim=32, projector_output_dim=64)
TINY_PIXTRAL = dict(model_type="pixtral", hidden_size=32, intermediate_size=48, num_hidden_layers=1,
                    num_attention_heads=2, image_size=28, patch_size=14, head_dim=16)


# DeepSeek models for their GGUF (deepseek2), which llama.cpp's converter writes from them
# (gguf_models.write_deepseek2):
# V3's sigmoid router with its selection bias over 4 groups of 2, renormalised and scaled, beside
# two experts' worth of shared expert after a dense layer; V2's softmax router, unnormalised and
# scaled, after two dense layers. Their latent norms' epsilon is rms_norm_eps in llama.cpp and
# 1e-6 in transformers: the configs state 1e-6, as DeepSeek's do.
LATENT = {**IDS, "num_key_value_heads": 4, "vocab_size": GGUF_VOCAB, "rms_norm_eps": 1e-6}
DEEPSEEK_GGUF_CASES = {
    "deepseek-v3": Case(
        "deepseek-v3", "deepseek_v3", {"rope_type": "default", "rope_theta": 30000.0},
        {**LATENT, "q_lora_rank": 24, "kv_lora_rank": 20, "qk_rope_head_dim": 8, "qk_nope_head_dim": 12,
         "v_head_dim": 10, "n_routed_experts": 8, "num_experts_per_tok": 2, "n_group": 4, "topk_group": 2,
         "moe_intermediate_size": 24, "n_shared_experts": 2, "first_k_dense_replace": 1, "routed_scaling_factor": 1.7},
        eps_key=None, drop=("num_key_value_heads", "vocab_size")),
    # YaRN with mscale and mscale_all_dim alike (the cos and sin unscaled, the scores' scale times
    # get_mscale(factor, mscale_all_dim)^2), as DeepSeek-V3's own config has them.
    "deepseek-v3-yarn": Case(
        "deepseek-v3-yarn", "deepseek_v3", {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                                            "original_max_position_embeddings": 32, "mscale": 0.9,
                                            "mscale_all_dim": 0.9, "beta_fast": 16, "beta_slow": 2},
        {**LATENT, "q_lora_rank": 24, "kv_lora_rank": 20, "qk_rope_head_dim": 8, "qk_nope_head_dim": 12,
         "v_head_dim": 10, "n_routed_experts": 8, "num_experts_per_tok": 2, "n_group": 4, "topk_group": 2,
         "moe_intermediate_size": 24, "n_shared_experts": 2, "first_k_dense_replace": 1, "routed_scaling_factor": 1.7},
        eps_key=None, drop=("num_key_value_heads", "vocab_size")),
    "deepseek-v2": Case(
        "deepseek-v2", "deepseek_v2", {"rope_type": "default", "rope_theta": 20000.0},
        {**LATENT, "q_lora_rank": 20, "kv_lora_rank": 18, "qk_rope_head_dim": 6, "qk_nope_head_dim": 10,
         "v_head_dim": 14, "n_routed_experts": 6, "num_experts_per_tok": 3, "moe_intermediate_size": 22,
         "n_shared_experts": 2, "first_k_dense_replace": 2, "routed_scaling_factor": 1.3},
        eps_key=None, drop=("num_key_value_heads", "vocab_size")),
}


def model_class(config: transformers.PretrainedConfig):
    """The auto class that builds the model: AutoModelForImageTextToText for a multimodal model
    (AutoModelForCausalLM maps Llama 4's to its text decoder alone), else AutoModelForCausalLM."""
    if hasattr(config, "text_config") and type(config) in transformers.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING:
        return transformers.AutoModelForImageTextToText
    return transformers.AutoModelForCausalLM

# Gemma 4 models for their GGUF (gemma4), which llama.cpp's converter writes from them
# (gguf_models.write_gemma4), as llama.cpp computes them: GELU, no biases, proportional RoPE
# unscaled (the converter writes no factor). E2B's layout: per-layer inputs (a table row per
# token) and the last two layers on the caches of layers 0 and 1, their MLP twice as wide. The
# 26B-A4B's: a mixture beside every MLP, the full layers' values their keys over one KV head.
GEMMA4_GGUF = {**IDS, "vocab_size": GGUF_VOCAB, "head_dim": 16, "global_head_dim": 32}
GEMMA4_GGUF_CASES = {
    "gemma4-e2b": Case(
        "gemma4-e2b", "gemma4_text",
        {"full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.5, "rope_theta": 500000.0},
         "sliding_attention": {"rope_type": "default", "rope_theta": 20000.0}},
        {**GEMMA4_GGUF, "hidden_size_per_layer_input": 8, "vocab_size_per_layer_input": GGUF_VOCAB,
         "sliding_window": 24, "final_logit_softcapping": 30.0, "num_hidden_layers": 4, "num_kv_shared_layers": 2,
         "use_double_wide_mlp": True,
         "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"]},
        drop=("num_hidden_layers", "vocab_size"), since_5x=True),
    "gemma4-moe": Case(
        "gemma4-moe", "gemma4_text",
        {"full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 200000.0},
         "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
        {**GEMMA4_GGUF, "hidden_size_per_layer_input": 0, "sliding_window": 20, "attention_k_eq_v": True,
         "num_global_key_value_heads": 1, "enable_moe_block": True, "num_experts": 6, "top_k_experts": 2,
         "moe_intermediate_size": 40, "final_logit_softcapping": 25.0,
         "layer_types": ["sliding_attention", "sliding_attention", "full_attention"]},
        drop=("vocab_size",), since_5x=True),
}


CASES = [
    Case("llama-default", "llama"),
    Case("llama-500k", "llama", {"rope_type": "default", "rope_theta": 500000.0}),
    Case("llama-linear", "llama", {"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0}),
    Case("llama-dynamic", "llama", {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0},
         {"max_position_embeddings": 16}),
    Case("llama-yarn", "llama", {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                                 "original_max_position_embeddings": 32}),
    Case("llama-yarn-mscale", "llama", {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 8.0,
                                        "original_max_position_embeddings": 32, "mscale": 0.707,
                                        "mscale_all_dim": 0.707, "beta_fast": 16, "beta_slow": 2,
                                        "truncate": False}),
    Case("llama-llama3", "llama", {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                   "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                   "original_max_position_embeddings": 64}),
    Case("llama-longrope", "llama", {"rope_type": "longrope", "rope_theta": 10000.0,
                                     "short_factor": [1.0 + 0.1 * i for i in range(8)],
                                     "long_factor": [1.5 + 0.3 * i for i in range(8)],
                                     "original_max_position_embeddings": 16},
         {"max_position_embeddings": 64}),
    Case("mistral", "mistral", extra={"sliding_window": 8}),
    Case("mistral-head-dim", "mistral", extra={"head_dim": 32, "sliding_window": None}),
    Case("qwen2", "qwen2"),
    Case("qwen2-sliding", "qwen2", extra={"use_sliding_window": True, "sliding_window": 6,
                                          "max_window_layers": 0}),
    Case("qwen3", "qwen3", {"rope_type": "default", "rope_theta": 1000000.0}, {"head_dim": 32}),
    Case("qwen3-yarn", "qwen3", {"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 4.0,
                                 "original_max_position_embeddings": 32}),
    Case("llama-gelu-biases", "llama", extra={"hidden_act": "gelu", "mlp_bias": True, "attention_bias": True}),
    Case("llama-gelu-tanh", "llama", extra={"hidden_act": "gelu_pytorch_tanh", "tie_word_embeddings": True}),
    Case("granite", "granite", extra={"embedding_multiplier": 12.0, "residual_multiplier": 0.22,
                                      "attention_multiplier": 0.2, "logits_scaling": 8.0}),
    Case("olmo2", "olmo2", {"rope_type": "default", "rope_theta": 500000.0}, {"eos_token_id": 2}),
    Case("olmo2-bias", "olmo2", extra={"attention_bias": True, "eos_token_id": 2}),
    Case("gemma", "gemma", extra={"head_dim": 16, "tie_word_embeddings": True}),
    Case("gemma-untied-gelu", "gemma", extra={"head_dim": 32, "hidden_act": "gelu"}),
    Case("gemma2", "gemma2", extra={"head_dim": 16, "sliding_window": 6, "query_pre_attn_scalar": 24,
                                    "attn_logit_softcapping": 5.0, "final_logit_softcapping": 3.0}),
    Case("gemma2-uncapped", "gemma2", extra={"head_dim": 16, "attn_logit_softcapping": None,
                                             "final_logit_softcapping": None, "tie_word_embeddings": True,
                                             "layer_types": ["full_attention"] * 3}),
    Case("phi3", "phi3", extra={"eos_token_id": 2, "pad_token_id": 0}),
    Case("phi3-longrope-partial", "phi3", {"rope_type": "longrope", "rope_theta": 10000.0, "partial_rotary_factor": 0.5,
                                           "short_factor": [1.0 + 0.2 * i for i in range(4)],
                                           "long_factor": [2.0 + 0.5 * i for i in range(4)]},
         {"eos_token_id": 2, "pad_token_id": 0, "original_max_position_embeddings": 16,
          "max_position_embeddings": 64, "sliding_window": 6}),
    Case("smollm3", "smollm3", extra={"no_rope_layer_interval": 2, "bos_token_id": 1, "eos_token_id": 2,
                                      "pad_token_id": 0}),
    Case("smollm3-flags-sliding", "smollm3", extra={"no_rope_layers": [1, 0, 0], "use_sliding_window": True,
                                                    "sliding_window": 6, "bos_token_id": 1, "eos_token_id": 2,
                                                    "pad_token_id": 0, "tie_word_embeddings": False}),
    Case("qwen2-mixed-windows", "qwen2", extra={"use_sliding_window": True, "sliding_window": 6,
                                                "max_window_layers": 1}),
    Case("mixtral", "mixtral", {"rope_type": "default", "rope_theta": 1000000.0},
         {"num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": 8}),
    Case("qwen3-moe", "qwen3_moe", {"rope_type": "default", "rope_theta": 1000000.0},
         {"head_dim": 32, "num_experts": 8, "num_experts_per_tok": 3, "moe_intermediate_size": 40,
          "norm_topk_prob": True}),
    Case("qwen3-moe-dense-layer", "qwen3_moe",
         extra={"num_experts": 6, "num_experts_per_tok": 2, "moe_intermediate_size": 48, "norm_topk_prob": False,
                "mlp_only_layers": [1]}),
    Case("gemma3", "gemma3_text",
         {"full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1000000.0},
          "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
         {"head_dim": 16, "sliding_window": 6, "query_pre_attn_scalar": 24,
          "layer_types": ["sliding_attention", "full_attention", "sliding_attention"]}),
    Case("gemma3-pattern-capped", "gemma3_text",
         {"full_attention": {"rope_type": "default", "rope_theta": 500000.0},
          "sliding_attention": {"rope_type": "default", "rope_theta": 20000.0}},
         {"head_dim": 16, "sliding_window": 5, "sliding_window_pattern": 2, "attn_logit_softcapping": 5.0,
          "final_logit_softcapping": 3.0, "tie_word_embeddings": True}),
    Case("gemma3-multimodal", "gemma3_text",
         {"full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 1000000.0},
          "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
         {"head_dim": 16, "sliding_window": 6, "sliding_window_pattern": 2, "tie_word_embeddings": True},
         {"model_type": "gemma3", "vision_config": TINY_SIGLIP, "mm_tokens_per_image": 4,
          "image_token_index": 157, "boi_token_index": 158, "eoi_token_index": 159}),
    Case("starcoder2", "starcoder2", extra={**IDS, "sliding_window": 6, "tie_word_embeddings": True}, eps_key="norm_epsilon"),
    Case("starcoder2-no-bias-gelu", "starcoder2", {"rope_type": "default", "rope_theta": 50000.0},
         {**IDS, "use_bias": False, "hidden_act": "gelu"}, eps_key="norm_epsilon"),
    Case("arcee", "arcee", extra=IDS),
    Case("arcee-relu-biases", "arcee", extra={**IDS, "hidden_act": "relu", "attention_bias": True, "mlp_bias": True}),
    Case("nemotron", "nemotron", {"rope_type": "default", "rope_theta": 20000.0, "partial_rotary_factor": 0.25},
         {**IDS, "attention_bias": True, "mlp_bias": True}, eps_key="norm_eps"),
    Case("seed-oss", "seed_oss", extra={"head_dim": 32, "attention_out_bias": True, "mlp_bias": True}),
    Case("ernie4_5", "ernie4_5", {"rope_type": "default", "rope_theta": 500000.0},
         {"head_dim": 16, "use_bias": True, "tie_word_embeddings": True}),
    Case("helium", "helium", extra={"head_dim": 16, "attention_bias": True, "mlp_bias": True}),
    Case("ministral", "ministral", extra={"head_dim": 16, "sliding_window": 6,
                                          "layer_types": ["sliding_attention", "full_attention", "sliding_attention"]}),
    # YaRN over 4 original positions and Llama 4's query temperature stepping every 4 positions.
    Case("ministral3", "ministral3",
         {"rope_type": "yarn", "rope_theta": 200000.0, "factor": 4.0, "original_max_position_embeddings": 4,
          "max_position_embeddings": 16, "beta_fast": 16.0, "beta_slow": 2.0, "mscale": 1.0, "mscale_all_dim": 1.0,
          "llama_4_scaling_beta": 0.3},
         {"head_dim": 16, "sliding_window": 6, "max_position_embeddings": 16}),
    Case("glm", "glm", extra={**IDS, "head_dim": 16}),
    Case("glm4", "glm4", {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.75},
         {**IDS, "head_dim": 32, "attention_bias": False}),
    Case("stablelm-parallel", "stablelm", {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5},
         {"use_qkv_bias": True, "use_parallel_residual": True}, eps_key="layer_norm_eps"),
    Case("stablelm", "stablelm", eps_key="layer_norm_eps"),
    Case("phi", "phi", {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.375},
         eps_key="layer_norm_eps"),
    Case("cohere", "cohere", {"rope_type": "default", "rope_theta": 500000.0},
         {**IDS, "logit_scale": 0.25, "attention_bias": True, "tie_word_embeddings": True}, eps_key="layer_norm_eps"),
    Case("cohere2", "cohere2", extra={**IDS, "sliding_window": 6, "sliding_window_pattern": 2, "head_dim": 32,
                                      "tie_word_embeddings": True, "logit_scale": 0.5},
         eps_key="layer_norm_eps"),
    Case("olmo3", "olmo3",
         {"full_attention": {"rope_type": "yarn", "rope_theta": 500000.0, "factor": 4.0,
                             "original_max_position_embeddings": 32},
          "sliding_attention": {"rope_type": "default", "rope_theta": 20000.0}},
         {**IDS, "sliding_window": 6, "layer_types": ["sliding_attention", "full_attention", "sliding_attention"]}),
    Case("exaone4", "exaone4", extra={**IDS, "head_dim": 16, "sliding_window": 6, "sliding_window_pattern": 2}),
    Case("exaone4-full", "exaone4", {"rope_type": "default", "rope_theta": 40000.0},
         {**IDS, "head_dim": 16, "sliding_window": None, "layer_types": ["full_attention"] * 3},
         layer_types_in_4x=True),
    Case("hunyuan", "hunyuan_v1_dense", extra={**IDS, "head_dim": 16, "attention_bias": True}),
    Case("gpt-neox", "gpt_neox", {"rope_type": "default", "rope_theta": 20000.0, "partial_rotary_factor": 0.5},
         IDS, eps_key="layer_norm_eps", drop=("num_key_value_heads",)),
    Case("gpt-neox-sequential-tanh", "gpt_neox", extra={**IDS, "use_parallel_residual": False,
                                                        "hidden_act": "gelu_new", "attention_bias": False},
         eps_key="layer_norm_eps", drop=("num_key_value_heads",)),
    Case("gpt2", "gpt2", None, {**IDS, "tie_word_embeddings": True},
         shape=dict(n_embd=64, n_inner=96, n_layer=3, n_head=4, vocab_size=160, n_positions=64,
                    layer_norm_epsilon=2e-5)),
    Case("gpt2-unscaled-relu", "gpt2", None, {**IDS, "tie_word_embeddings": True, "scale_attn_weights": False,
                                              "activation_function": "relu"},
         shape=dict(n_embd=64, n_inner=None, n_layer=2, n_head=4, vocab_size=160, n_positions=48)),
    Case("opt", "opt", None, {**IDS, "tie_word_embeddings": True, "word_embed_proj_dim": 64},
         shape=dict(hidden_size=64, ffn_dim=96, num_hidden_layers=3, num_attention_heads=4, vocab_size=160,
                    max_position_embeddings=64)),
    Case("falcon-new", "falcon", extra={**IDS, "new_decoder_architecture": True, "bias": True},
         shape=dict(hidden_size=64, ffn_hidden_size=96, num_hidden_layers=3, num_attention_heads=4, num_kv_heads=2,
                    vocab_size=160, layer_norm_epsilon=2e-5)),
    Case("falcon-new-one-norm", "falcon", {"rope_type": "default", "rope_theta": 30000.0},
         {**IDS, "new_decoder_architecture": True, "num_ln_in_parallel_attn": 1, "activation": "gelu_new"},
         shape=dict(hidden_size=64, ffn_hidden_size=96, num_hidden_layers=2, num_attention_heads=4, num_kv_heads=1,
                    vocab_size=160)),
    Case("falcon-multi-query", "falcon", extra={**IDS, "tie_word_embeddings": True},
         shape=dict(hidden_size=64, num_hidden_layers=3, num_attention_heads=4, vocab_size=160)),
    Case("falcon-rw", "falcon", extra={**IDS, "multi_query": False, "parallel_attn": False, "bias": True},
         shape=dict(hidden_size=64, ffn_hidden_size=96, num_hidden_layers=3, num_attention_heads=4, vocab_size=160)),
    Case("olmo", "olmo", extra={**IDS, "clip_qkv": 0.3, "attention_bias": True}, eps_key=None),
    Case("olmo-unclipped", "olmo", {"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0},
         {**IDS, "tie_word_embeddings": True}, eps_key=None),
    # OLMoE: q and k normed over the whole projection, every layer a mixture (renormalised or not).
    Case("olmoe", "olmoe", {"rope_type": "default", "rope_theta": 50000.0},
         {**IDS, "num_experts": 6, "num_experts_per_tok": 2, "norm_topk_prob": True, "attention_bias": True}),
    Case("olmoe-unnormalised", "olmoe", extra={**IDS, "num_experts": 5, "num_experts_per_tok": 3}),
    # Qwen2-MoE: a shared expert, scaled by its sigmoid gate, beside the mixture; layer 0 slides.
    Case("qwen2-moe", "qwen2_moe", {"rope_type": "default", "rope_theta": 1000000.0},
         {**IDS, "num_experts": 6, "num_experts_per_tok": 2, "moe_intermediate_size": 40,
          "shared_expert_intermediate_size": 56, "use_sliding_window": True, "sliding_window": 6,
          "max_window_layers": 2}),
    # Granite-MoE: Granite's four scalars around a mixture; and with a shared expert, no gate.
    Case("granitemoe", "granitemoe", {"rope_type": "default", "rope_theta": 20000.0},
         {**IDS, "num_local_experts": 5, "num_experts_per_tok": 2, "embedding_multiplier": 6.0,
          "residual_multiplier": 0.3, "attention_multiplier": 0.2, "logits_scaling": 4.0, "attention_bias": True}),
    Case("granitemoeshared", "granitemoeshared", extra={**IDS, "num_local_experts": 4, "num_experts_per_tok": 3,
                                                       "shared_intermediate_size": 40, "embedding_multiplier": 3.0,
                                                       "residual_multiplier": 0.5, "logits_scaling": 2.0}),
    # GLM-4.5: a dense first layer, then DeepSeek-V3's router (sigmoid scores with a selection bias,
    # 2 of 4 groups, renormalised, scaled) beside a shared expert; q/k norms, a quarter of each head rotated.
    Case("glm4-moe", "glm4_moe", {"rope_type": "default", "rope_theta": 1000000.0, "partial_rotary_factor": 0.25},
         {**IDS, "n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 40, "n_group": 4,
          "topk_group": 2, "routed_scaling_factor": 2.5, "n_shared_experts": 1, "first_k_dense_replace": 1,
          "use_qk_norm": True, "attention_bias": True}),
    # dots1: Qwen3's attention with biases, GLM-4.5's router without groups, unnormalised; a sliding layer.
    Case("dots1", "dots1", {"rope_type": "default", "rope_theta": 500000.0},
         {**IDS, "n_routed_experts": 6, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
          "n_shared_experts": 2, "first_k_dense_replace": 1, "routed_scaling_factor": 1.5, "attention_bias": True,
          "sliding_window": 6, "max_window_layers": 2}),
    # MiniMax-M2: whole-projection q/k norms, half of each 16-channel head rotated, a sigmoid router
    # with its block's selection bias.
    Case("minimax-m2", "minimax_m2", {"rope_type": "default", "rope_theta": 5000000.0, "partial_rotary_factor": 0.5},
         {**IDS, "head_dim": 16, "num_local_experts": 6, "num_experts_per_tok": 3}),
    # ERNIE 4.5 MoE: the softmax router's choice moved by a selection bias, two shared experts' width,
    # layer 0 dense (moe_layer_start_index 1), tied.
    Case("ernie4_5-moe", "ernie4_5_moe", {"rope_type": "default", "rope_theta": 500000.0},
         {**IDS, "head_dim": 16, "moe_num_experts": 6, "moe_k": 2, "moe_intermediate_size": 32,
          "moe_num_shared_experts": 2, "moe_layer_start_index": 1}),
    # Hunyuan-MoE: q/k norms after RoPE, its NTK-alpha RoPE (the base stretched by alpha), a
    # renormalised mixture beside an ungated shared MLP as wide as each expert.
    Case("hunyuan-moe", "hunyuan_v1_moe", {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 1.0, "alpha": 50.0},
         {**IDS, "head_dim": 16, "num_experts": 6, "moe_topk": 2, "attention_bias": True}),
    # Cohere 2 MoE: the parallel block; a dense first layer (its own width, rotated), then the top 2
    # logits' softmax beside two experts' worth of shared MLP, averaged in; layer 1 attends fully, unrotated.
    Case("cohere2-moe", "cohere2_moe", extra={**IDS, "head_dim": 16, "num_experts": 6, "num_experts_per_tok": 2,
                                              "num_shared_experts": 2, "prefix_dense_intermediate_size": 80,
                                              "mlp_layer_types": ["dense", "sparse", "sparse"], "sliding_window": 6,
                                              "sliding_window_pattern": 2, "logit_scale": 0.5},
         eps_key="layer_norm_eps"),
    # With RMSNorms, sigmoid routing left unnormalised, and the shared MLP summed in.
    Case("cohere2-moe-sigmoid", "cohere2_moe", {"rope_type": "default", "rope_theta": 50000.0},
         {**IDS, "head_dim": 16, "num_experts": 5, "num_experts_per_tok": 3, "num_shared_experts": 1,
          "expert_selection_fn": "sigmoid", "norm_topk_prob": False, "shared_expert_combination_strategy": "sum",
          "rms_norm_eps": 2e-5, "mlp_layer_types": ["sparse", "dense", "sparse"], "sliding_window": 6,
          "layer_types": ["sliding_attention", "sliding_attention", "full_attention"]},
         eps_key="layer_norm_eps"),
    # PhiMoE: LayerNorms with biases, biases on q/k/v/o and the logits, a window; the sparsemixer
    # with a threshold wide enough (2 x 0.3) that the weights' softmaxes take in more than one expert.
    Case("phimoe", "phimoe", extra={**IDS, "num_local_experts": 5, "num_experts_per_tok": 2, "attention_bias": True,
                                    "lm_head_bias": True, "router_jitter_noise": 0.3, "sliding_window": 8}),
    # Every other layer a mixture (decoder_sparse_step 2), renormalised, no q/k/v biases.
    Case("qwen2-moe-sparse-step", "qwen2_moe",
         extra={**IDS, "num_experts": 5, "num_experts_per_tok": 3, "moe_intermediate_size": 32,
                "shared_expert_intermediate_size": 48, "decoder_sparse_step": 2, "norm_topk_prob": True,
                "qkv_bias": False}),
    # gpt-oss: sinks, q/k/v/o biases, the even layers sliding, YaRN unclamped (truncate false), the
    # experts' clamp tight enough to bite (limit 0.2 on gates of spread ~0.3) at a gain of its own.
    Case("gpt-oss", "gpt_oss", {"rope_type": "yarn", "rope_theta": 150000.0, "factor": 8.0, "beta_fast": 16.0,
                                "beta_slow": 2.0, "truncate": False, "original_max_position_embeddings": 16},
         {**IDS, "head_dim": 16, "num_local_experts": 6, "num_experts_per_tok": 3, "sliding_window": 6,
          "swiglu_alpha": 1.3, "swiglu_limit": 0.2}),
    # Without attention biases, its layers' types stated (the first full), YaRN truncated (its default).
    # (A config without RoPE parameters, or with null, is YaRN's defaults to transformers: refused.)
    Case("gpt-oss-full-first", "gpt_oss", {"rope_type": "yarn", "rope_theta": 50000.0, "factor": 2.0,
                                           "original_max_position_embeddings": 32},
         {**IDS, "head_dim": 16, "num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": 5,
          "attention_bias": False, "layer_types": ["full_attention", "sliding_attention", "full_attention"]},
         layer_types_in_4x=True),
    # Llama 4: layer 1 without RoPE (its q under the temperature, stepping at positions 2, 5, ...; not
    # under YaRN's attention factor, which scales the turned layers' cos and sin), the others rotated
    # in interleaved pairs, q/k normed after RoPE, attending in chunks of 5; layers 0 and 1 mixtures
    # (the top 2 of 4 experts, each reading its input times its sigmoid, beside a shared expert),
    # layer 2 dense and wider.
    Case("llama4", "llama4_text", {"rope_type": "yarn", "rope_theta": 500000.0, "factor": 4.0,
                                   "original_max_position_embeddings": 16},
         {**IDS, "head_dim": 16, "intermediate_size_mlp": 80, "num_local_experts": 4, "num_experts_per_tok": 2,
          "moe_layers": [0, 1], "no_rope_layer_interval": 2, "attention_chunk_size": 5, "floor_scale": 3,
          "attn_scale": 0.3}),
    # Without q/k norms, temperature or chunks: every other layer a mixture of one expert per token,
    # biases on q/k/v/o, Llama 3's RoPE scaling, layer 2 without RoPE by its flags.
    Case("llama4-plain", "llama4_text", {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                         "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                         "original_max_position_embeddings": 16},
         {**IDS, "head_dim": 16, "intermediate_size_mlp": 72, "num_local_experts": 3, "num_experts_per_tok": 1,
          "interleave_moe_layer_step": 2, "no_rope_layers": [1, 1, 0], "use_qk_norm": False,
          "attn_temperature_tuning": False, "attention_chunk_size": None, "attention_bias": True}),
    # DeepSeek-V3: latent attention with a low-rank q (ranks 24 and 20; heads of 12 no-RoPE and 8
    # RoPE channels, values of 10), YaRN with mscale and mscale_all_dim apart (the scores' scale
    # times the latter's square); layer 0 dense, then 2 of 8 experts in 4 groups of which 2 are
    # eligible, biased sigmoid choice, routed scale 1.7, two experts' worth of shared expert.
    Case("deepseek-v3", "deepseek_v3", {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                                        "original_max_position_embeddings": 32, "mscale": 0.8,
                                        "mscale_all_dim": 0.9, "beta_fast": 16, "beta_slow": 2},
         {**IDS, "num_key_value_heads": 4, "q_lora_rank": 24, "kv_lora_rank": 20, "qk_rope_head_dim": 8,
          "qk_nope_head_dim": 12, "v_head_dim": 10, "n_routed_experts": 8, "num_experts_per_tok": 2, "n_group": 4,
          "topk_group": 2, "moe_intermediate_size": 24, "n_shared_experts": 2, "first_k_dense_replace": 1,
          "routed_scaling_factor": 1.7}, drop=("num_key_value_heads",)),
    # q straight from q_proj (q_lora_rank null), RoPE rotate-half (rope_interleave false), biases on
    # q_a, kv_a and o, every layer a mixture without groups, unnormalised.
    Case("deepseek-v3-plain-q", "deepseek_v3", {"rope_type": "default", "rope_theta": 50000.0},
         {**IDS, "num_key_value_heads": 4, "q_lora_rank": None, "kv_lora_rank": 16, "qk_rope_head_dim": 4,
          "qk_nope_head_dim": 6, "v_head_dim": 12, "n_routed_experts": 6, "num_experts_per_tok": 2, "n_group": 1,
          "topk_group": 1, "moe_intermediate_size": 20, "n_shared_experts": 1, "first_k_dense_replace": 0,
          "norm_topk_prob": False, "rope_interleave": False, "attention_bias": True},
         drop=("num_key_value_heads",)),
    # DeepSeek-V2: latent attention with a low-rank q and YaRN (mscale_all_dim alone), RoPE by its
    # complex rotation; layers 0 and 1 dense, then the softmax router's top 3 of 6, scaled by 1.3,
    # beside two experts' worth of shared expert.
    Case("deepseek-v2", "deepseek_v2", {"rope_type": "yarn", "rope_theta": 20000.0, "factor": 2.0,
                                        "original_max_position_embeddings": 32, "mscale_all_dim": 0.7},
         {**IDS, "num_key_value_heads": 4, "q_lora_rank": 20, "kv_lora_rank": 18, "qk_rope_head_dim": 6,
          "qk_nope_head_dim": 10, "v_head_dim": 14, "n_routed_experts": 6, "num_experts_per_tok": 3,
          "moe_intermediate_size": 22, "n_shared_experts": 2, "first_k_dense_replace": 2,
          "routed_scaling_factor": 1.3}, drop=("num_key_value_heads",)),
    # group_limited_greedy: 2 of 8 experts within the 2 of 4 groups whose best expert scores highest;
    # q from q_proj, RoPE unscaled, one shared expert, every layer a mixture.
    Case("deepseek-v2-groups", "deepseek_v2", {"rope_type": "default", "rope_theta": 40000.0},
         {**IDS, "num_key_value_heads": 4, "q_lora_rank": None, "kv_lora_rank": 12, "qk_rope_head_dim": 4,
          "qk_nope_head_dim": 8, "v_head_dim": 8, "n_routed_experts": 8, "num_experts_per_tok": 2,
          "topk_method": "group_limited_greedy", "n_group": 4, "topk_group": 2, "moe_intermediate_size": 18,
          "n_shared_experts": 1, "first_k_dense_replace": 0, "routed_scaling_factor": 0.8},
         drop=("num_key_value_heads",)),
    # DeepSeek-V3.2: DeepSeek-V3's layers whose attention keeps the 7 positions its indexer (6 heads
    # of 12 channels, the leading 8 turned rotate-half) scores best, with YaRN (mscale_all_dim);
    # layer 0 dense, then 2 of 8 experts in 4 groups of which 2 are eligible.
    Case("deepseek-v32", "deepseek_v32", {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                                          "original_max_position_embeddings": 32, "mscale": 1.0,
                                          "mscale_all_dim": 0.8, "beta_fast": 16, "beta_slow": 2},
         {**IDS, "num_key_value_heads": 4, "q_lora_rank": 24, "kv_lora_rank": 20, "qk_rope_head_dim": 8,
          "qk_nope_head_dim": 12, "v_head_dim": 10, "n_routed_experts": 8, "num_experts_per_tok": 2, "n_group": 4,
          "topk_group": 2, "moe_intermediate_size": 24, "n_shared_experts": 1, "first_k_dense_replace": 1,
          "routed_scaling_factor": 1.7, "index_n_heads": 6, "index_head_dim": 12, "index_topk": 7},
         drop=("num_key_value_heads",), since_5x=True),
    # Its layers' mixtures by mlp_layer_types (layer 1 dense between two mixtures), an indexer of 16
    # heads whose channels RoPE turns all, keeping 12 positions; RoPE unscaled.
    Case("deepseek-v32-mlp-types", "deepseek_v32", {"rope_type": "default", "rope_theta": 30000.0},
         {**IDS, "num_key_value_heads": 4, "q_lora_rank": 16, "kv_lora_rank": 12, "qk_rope_head_dim": 4,
          "qk_nope_head_dim": 8, "v_head_dim": 8, "n_routed_experts": 6, "num_experts_per_tok": 2, "n_group": 1,
          "topk_group": 1, "moe_intermediate_size": 20, "n_shared_experts": 1,
          "mlp_layer_types": ["sparse", "dense", "sparse"], "index_n_heads": 16, "index_head_dim": 4,
          "index_topk": 12}, drop=("num_key_value_heads",), since_5x=True),
    Case("apertus", "apertus", {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                                "high_freq_factor": 4.0, "original_max_position_embeddings": 16},
         {**IDS, "head_dim": 16, "attention_bias": True}),
    # Llama 4's multimodal checkpoint (Llama 4 Scout's and Maverick's layout) around a decoder with a
    # layer without RoPE and a mixture.
    Case("llama4-multimodal", "llama4_text", {"rope_type": "default", "rope_theta": 500000.0},
         {**IDS, "head_dim": 16, "intermediate_size_mlp": 72, "num_local_experts": 3, "num_experts_per_tok": 1,
          "interleave_moe_layer_step": 2, "no_rope_layers": [1, 0, 1], "attention_chunk_size": 4},
         {"model_type": "llama4", "vision_config": TINY_LLAMA4_VISION, "image_token_index": 157,
          "boi_token_index": 158, "eoi_token_index": 159, "tie_word_embeddings": False}),
    # Mistral-Small-3.1's layout: Mistral (head_dim apart from hidden / heads) under a Pixtral
    # encoder, the output untied at both levels (Mistral3Config's own default ties it).
    Case("mistral3-multimodal", "mistral", {"rope_type": "default", "rope_theta": 1000000000.0},
         {"head_dim": 32, "sliding_window": None},
         {"model_type": "mistral3", "vision_config": TINY_PIXTRAL, "image_token_index": 157,
          "tie_word_embeddings": False}),
    # Gemma 4's dense text model, per-layer inputs off: full layers of wider heads (global_head_dim)
    # whose values are their keys (attention_k_eq_v, one KV head), their RoPE proportional over a
    # quarter of the pairs; layer_types ends sliding, which Gemma4TextConfig makes full.
    Case("gemma4", "gemma4_text",
         {"full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0},
          "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
         {**IDS, "head_dim": 16, "global_head_dim": 32, "num_global_key_value_heads": 1, "attention_k_eq_v": True,
          "hidden_size_per_layer_input": 0, "sliding_window": 5, "attention_bias": True,
          "final_logit_softcapping": 30.0,
          "layer_types": ["sliding_attention", "full_attention", "sliding_attention"]}, since_5x=True),
    # Gemma 4 E2B's layout: per-layer inputs (8 channels a layer, their own table) and the last two
    # layers attending over the caches of the last earlier sliding and full layers, their MLP twice
    # as wide; the full layers' own values and KV heads, proportional RoPE scaled.
    Case("gemma4-layer-inputs", "gemma4_text",
         {"full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.5, "factor": 2.0,
                             "rope_theta": 500000.0},
          "sliding_attention": {"rope_type": "default", "rope_theta": 20000.0}},
         {**IDS, "head_dim": 16, "global_head_dim": 24, "hidden_size_per_layer_input": 8,
          "vocab_size_per_layer_input": 160, "sliding_window": 4, "hidden_activation": "silu",
          "tie_word_embeddings": True, "num_hidden_layers": 4, "num_kv_shared_layers": 2, "use_double_wide_mlp": True,
          "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"]},
         drop=("num_hidden_layers",), since_5x=True),
    # Gemma 4 26B-A4B's layout: every layer's mixture (6 experts, 2 a token, their own width) beside
    # its MLP, the router's scale and the experts' weight scales learned; full layers' own heads.
    Case("gemma4-moe", "gemma4_text",
         {"full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 200000.0},
          "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
         {**IDS, "head_dim": 16, "global_head_dim": 32, "hidden_size_per_layer_input": 0, "sliding_window": 6,
          "enable_moe_block": True, "num_experts": 6, "top_k_experts": 2, "moe_intermediate_size": 40,
          "final_logit_softcapping": 25.0,
          "layer_types": ["sliding_attention", "full_attention", "sliding_attention"]}, since_5x=True),
]


def load_float64(folder: Path):
    """transformers' model of the folder in float64, eager attention and experts (the grouped
    kernels refuse float64 on the CPU), in eval mode: the module that runs a text-only forward, a
    multimodal model's language model where its own forward cannot (transformers 5.24's
    Llama4ForConditionalGeneration reads image_outputs its language model does not return)."""
    model = model_class(transformers.AutoConfig.from_pretrained(folder)).from_pretrained(
        folder, dtype=torch.float64, attn_implementation="eager", experts_implementation="eager")
    model.eval()
    return model.language_model if type(model).__name__ == "Llama4ForConditionalGeneration" else model


def make_model(case: Case, folder: Path, style: str, seed: int = 0) -> None:
    """Builds the case's model with random weights and saves it to folder (style "5.x" or "4.x")."""
    torch.manual_seed(seed)
    config = case.config()
    model = model_class(config).from_config(config, dtype=torch.float32)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("act_fn.alpha_p", "act_fn.alpha_n")):  # xIELU's learned scalars away from their init
                p.copy_(p + 0.5 * torch.randn_like(p))
            elif name.endswith(("norm.weight", "norm_1.weight", "norm_2.weight", "router.scale",
                                "router.per_expert_scale")):  # Gemma 4's router scales too
                p.copy_(1.0 + 0.3 * torch.randn_like(p))
            elif name.endswith((".bias", "_proj_bias")):  # gpt-oss's experts' biases end in _bias
                p.copy_(0.1 * torch.randn_like(p))
            elif name.endswith("self_attn.sinks"):  # gpt-oss's sinks, as large as the scores they compete with
                p.copy_(torch.randn_like(p))
            elif name.endswith(ROUTER):  # decisive routing: logits apart by more than f16's noise, mostly
                p.copy_(torch.randn_like(p))
            elif name.endswith("e_score_correction_bias"):  # ERNIE's selection bias is a parameter
                p.copy_(0.1 * torch.randn_like(p))
            elif name.endswith("shared_expert_gate.weight"):  # its sigmoid away from a constant 1/2
                p.copy_(torch.randn_like(p) / p.shape[-1] ** 0.5)
            elif name.endswith(("indexer.wq_b.weight", "indexer.wk.weight", "indexer.weights_proj.weight")):
                p.copy_(torch.randn_like(p) / p.shape[-1] ** 0.5)  # DeepSeek-V3.2's indexer: scores far apart
        for name, b in model.named_buffers():
            if name.endswith("e_score_correction_bias"):  # a selection bias that moves the choice
                b.copy_(0.1 * torch.randn_like(b))
            elif name.endswith("layer_scalar"):  # Gemma 4's layer output scale, away from its 1
                b.copy_(1.0 + 0.3 * torch.randn_like(b))
    model.save_pretrained(folder)
    if style == "4.x":
        as_4x_config(folder / "config.json", case.layer_types_in_4x)


def as_4x_config(path: Path, layer_types: bool = False) -> None:
    """Rewrites a 5.x config.json as transformers 4.x wrote it."""
    config = json.loads(path.read_text())
    as_4x_text_config(config.get("text_config", config), layer_types)
    path.write_text(json.dumps(config, indent=2))


def as_4x_text_config(config: dict, layer_types: bool = False) -> None:
    if "rope_parameters" not in config:  # a family without RoPE (GPT-2, OPT)
        config.pop("dtype", None)
        return
    rope = dict(config.pop("rope_parameters", None) or {})
    if "full_attention" in rope:  # rope_scaling is the full layers'
        if config.get("model_type") == "gemma3_text":  # the sliding ones have their own base
            config["rope_local_base_freq"] = rope["sliding_attention"]["rope_theta"]
            config["sliding_window_pattern"] = config.pop("_sliding_window_pattern")
        rope = dict(rope["full_attention"])
    config["rope_theta"] = rope.pop("rope_theta", 10000.0)
    if "partial_rotary_factor" in rope:  # 4.x kept it beside rope_theta
        config["partial_rotary_factor"] = rope.pop("partial_rotary_factor")
    if config.get("model_type") == "gpt_neox":  # its 4.x names
        config["rotary_emb_base"] = config.pop("rope_theta")
        config["rotary_pct"] = config.pop("partial_rotary_factor", 0.25)
    config["rope_scaling"] = rope if rope.get("rope_type", "default") != "default" else None
    if "dtype" in config:
        config["torch_dtype"] = config.pop("dtype")
    if config.get("model_type") == "qwen3_moe":  # 4.x's Qwen3MoeConfig named its experts num_experts
        config["num_experts"] = config.pop("num_local_experts")
    if not layer_types:
        config.pop("layer_types", None)


def to_mxfp4_checkpoint(folder: Path) -> None:
    """Rewrites the gpt-oss model saved in `folder` as its released checkpoints hold it: each
    layer's experts in MXFP4 (quantized by the gguf package, llama.cpp's own quantizer, then laid
    out as OpenAI's: mlp.experts.gate_up_proj_blocks [experts, 2 ffn, dim / 32, 16] of two E2M1
    values a byte, the block's first value in the low nibble of its first byte, and _scales
    [experts, 2 ffn, dim / 32] of E8M0 exponents; down_proj over ffn alike), quantization_config
    mxfp4 in config.json."""
    import gguf
    from safetensors.numpy import load_file, save_file
    tensors = load_file(folder / "model.safetensors")
    for name in [n for n in tensors if n.endswith(("mlp.experts.gate_up_proj", "mlp.experts.down_proj"))]:
        rows = np.ascontiguousarray(tensors.pop(name).transpose(0, 2, 1))  # [experts, out, in]
        packed = gguf.quants.quantize(rows, gguf.GGMLQuantizationType.MXFP4)
        ggml = packed.reshape(*rows.shape[:2], rows.shape[2] // 32, 17)  # ggml's blocks: exponent, 16 bytes
        low, high = ggml[..., 1:] & 0x0F, ggml[..., 1:] >> 4  # values 0-15, then 16-31
        values = np.concatenate([low, high], axis=-1)
        tensors[name + "_blocks"] = (values[..., 0::2] | (values[..., 1::2] << 4)).astype(np.uint8)
        tensors[name + "_scales"] = np.ascontiguousarray(ggml[..., 0])
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    config = json.loads((folder / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
    (folder / "config.json").write_text(json.dumps(config, indent=2))
