#!/usr/bin/env python3
"""Writes tiny Hugging Face checkpoints, and float64 references, for the checkpoint loader's tests.

    /usr/bin/python3 tests/make_hf_checkpoints.py           # write, then check what was written
    /usr/bin/python3 tests/make_hf_checkpoints.py --check   # only check the committed files
                                                            # Debian: python3-torch, python3-numpy

Each checkpoint is laid out as save_pretrained writes it, in tests/data/hf/<name>/:
  config.json              json.dumps(config, indent=2, sort_keys=True) + "\\n", as PretrainedConfig
  model.safetensors        one file; or, for qwen2, model-00001-of-00002.safetensors,
                           model-00002-of-00002.safetensors and model.safetensors.index.json
                           ({"metadata": {"total_size": bytes of tensor data}, "weight_map": {...}})
  reference/X.npy          float32 (T, d_model): T = 5 tokens, shared by both layers
  reference/Y_layer<i>.npy float64 (T, d_model): layer i's feed-forward block applied to X, in float64,
                           from the weights as stored (16-bit values widened exactly)
Two layers each, vocabulary 100, d_model 24 (16 for gpt2_bf16; at 64 the MLPs alone came to 1.7 MB);
every layer also holds its attention and norm tensors, beside the embeddings, final norm and head
(where the real model saves them), with random values:

  name         dtype  names as saved by              block, activation                    d_ff
  bert         F32    BertForMaskedLM (bert.)        post-norm LayerNorm, hidden_act gelu   96
  bert_legacy  F32    BertModel, LayerNorm.gamma/.beta  (bert-base-uncased's own names)     96
  roberta      F16    RobertaForMaskedLM (roberta.)  post-norm LayerNorm, gelu              96
  gpt2         F32    GPT2LMHeadModel (transformer.) pre-norm LayerNorm, gelu_new; Conv1D   96
  gpt2_bf16    BF16   GPT2Model (h.), n_inner null   pre-norm, gelu_new, n_embd 16    64 = 4*16
  llama        BF16   LlamaForCausalLM               RMSNorm, silu (SwiGLU)                 60
  llama_f32    F32    LlamaForCausalLM               RMSNorm, silu                          60
  mistral      F16    MistralForCausalLM             RMSNorm, silu                          60
  qwen2        BF16   Qwen2ForCausalLM, 2 shards     RMSNorm, silu; q/k/v biases            60
  gemma        BF16   GemmaForCausalLM               RMSNorm (1 + weight), hidden_act gelu  60
                      (Gemma 1.0's config: no hidden_activation; the model runs the tanh GELU)

The second round (new_models) adds more families and mixtures of experts; their layer counts, widths
and stacks vary (below). A model of several stacks writes reference/X_<stack>.npy (float32 (T, d) of
that stack) and Y_<stack>_layer<i>.npy; a single-stack one X.npy and Y_layer<i>.npy as above. T = 5,
but T = 17 for the MoE models, whose sparse layers also have
  reference/experts_layer<i>.npy  int64 (T, k): the experts Transformers' routing picks, in the order
                                  torch.topk returns them (descending score; DeepSeek asks for
                                  sorted=False, an unspecified order: compare them as sets)
  reference/weights_layer<i>.npy  float64 (T, k): their routing weights, as applied
(dense layers of MoE models: Y_layer<i>.npy only). The routing is computed with Transformers' dtype
steps from a float32 input: float32 router logits from the float32 normalised tokens and the stored
router weight (Mixtral, Qwen-MoE and OLMoE compute them in the model dtype, bf16 for the BF16 ones,
and cast the weights back to it; DeepSeek upcasts to float32 as here), float32 softmax/sigmoid, top-k,
renormalisation and scaling; the rest in float64. Each MoE model was drawn again (seed + 1000) until
every token of every sparse layer has a relative gap > 1e-3 between its k-th and (k+1)-th selection
scores (and between its topk_group-th and next group score), every expert has >= 2 tokens, and, for
DeepSeek-V3, the k-th biased score is > 1e-3 (Transformers masks with 0.0, DeepSeek's code with -inf:
both pick the same), and the group masking and the bias each change some token's experts.

  name              dtype  names as saved by                  block                                 d_ff
  gemma2            BF16   Gemma2ForCausalLM                  x + N_post(GeGLU(N_pre(x))), N: RMSNorm     48
                           pre_/post_feedforward_layernorm (1 + w); gelu_pytorch_tanh (hidden_activation)
  gemma3_text       F32    Gemma3ForCausalLM                  as gemma2; q_norm/k_norm in attention       40
  gemma3            BF16   Gemma3ForConditionalGeneration, 4.50 names: language_model.model.layers.N.,
                           vision_tower.vision_model.encoder.layers.N.; stacks text (d 24, 2 layers,
                           as gemma2, d_ff 48) and vision (SigLIP: d 16, 2 layers, pre-norm layer_norm2,
                           mlp.fc1/fc2, biases, d_ff 40); text_config without rms_norm_eps and
                           hidden_activation, vision_config without hidden_act and layer_norm_eps:
                           the defaults apply (1e-6, gelu_pytorch_tanh for both)
  gemma3_new_names  BF16   the same, 4.52+ names (model.language_model.layers.N.,
                           model.vision_tower.vision_model...), 2 shards cut inside the last text
                           layer's MLP; text d_ff 40, vision 3 layers, d_ff 24
  phi3              BF16   Phi3ForCausalLM                    RMSNorm, SwiGLU from the fused               40
                           mlp.gate_up_proj (2 d_ff, d): gate rows first
  qwen3             BF16   Qwen3ForCausalLM, tied: no lm_head  RMSNorm, silu; q_norm/k_norm, head_dim 8   56
  t5                F32    T5ForConditionalGeneration         v1.1: feed_forward_proj "gated-gelu" =       40
                           gelu_new (tanh), wo(act(wi_0 h) * wi_1 h), T5LayerNorm (RMS, no bias), d 16;
                           stacks encoder (encoder.block.N.layer.1., 3 layers) and decoder
                           (decoder.block.N.layer.2., num_decoder_layers 2); t5-v1_1's keys (no
                           dense_act_fn, no torch_dtype)
  mt5               BF16   MT5ForConditionalGeneration        as t5; 2 + 2 layers                           24
  umt5              F32    UMT5ForConditionalGeneration       as t5, config with the derived dense_act_fn  32
                           and is_gated_act; relative_attention_bias in every layer; 2 + 2 layers
  t5_relu           F32    T5ForConditionalGeneration         t5-small's keys: no feed_forward_proj        32
                           (default "relu": DenseReluDense.wi/wo), no num_decoder_layers (= num_layers),
                           tied (no lm_head). To be refused: no reference directory
  vit               F32    ViTForImageClassification (vit.)   pre-norm layernorm_after, intermediate.dense, 48
                           output.dense, biases, gelu (exact), layer_norm_eps 1e-12
  clip              F16    CLIPModel                          stacks text (text_model.encoder.layers.N.,  40/56
                           d 16) and vision (vision_model..., d 24): pre-norm layer_norm2, mlp.fc1/fc2,
                           quick_gelu x*sigmoid(1.702x), eps 1e-5; named in text_config, left to the
                           defaults in vision_config; int64 position_ids and a 0-d logit_scale in the file
  whisper           F16    WhisperForConditionalGeneration    stacks encoder (model.encoder.layers.N., 2  40/24
                           layers, encoder_ffn_dim 40) and decoder (model.decoder.layers.N., 3 layers,
                           decoder_ffn_dim 24): pre-norm final_layer_norm (eps 1e-5, fixed in code),
                           fc1/fc2, gelu; d_model 16; num_hidden_layers (2) is the encoder's
  gpt_neox          F16    GPTNeoXForCausalLM (gpt_neox.)     use_parallel_residual: x + MLP(LN(x)),        96
                           post_attention_layernorm, mlp.dense_h_to_4h/dense_4h_to_h, gelu (exact)
  mixture of experts (T = 17; 8 experts, k = 2 but DeepSeek-V3's k = 3; N = post_attention_layernorm):
  mixtral           BF16   MixtralForCausalLM: block_sparse_moe.gate, experts.J.w1/w3/w2 (gate/up/down);  16
                           softmax, top-2, renormalised; d 24, 2 layers
  mixtral_f32       F32    as mixtral; d 16, 2 layers                                                     24
  mixtral_stacked   F32    Transformers 5's in-memory layout: mlp.gate, mlp.experts.gate_up_proj          12
                           (E, 2 d_ff, d; each expert's gate rows first), mlp.experts.down_proj (E, d, d_ff);
                           config with dtype and rope_parameters as 5.x writes; d 16, 2 layers
  qwen2_moe         BF16   Qwen2MoeForCausalLM, 2 shards cut inside layer 2's experts: mlp.gate,        12
                           mlp.experts.J.gate_proj/up_proj/down_proj, mlp.shared_expert (d_ff 20) times
                           sigmoid(mlp.shared_expert_gate (1, d)); norm_topk_prob false; 3 layers,
                           mlp_only_layers [1]: layer 1 a dense SwiGLU of intermediate_size 32
  qwen3_moe         F32    Qwen3MoeForCausalLM, norm_topk_prob true, no shared expert; 4 layers,         12
                           decoder_sparse_step 2: layers 1, 3 sparse, 0, 2 dense (d_ff 32); d 16
  olmoe             BF16   OlmoeForCausalLM, norm_topk_prob false, experts of intermediate_size; 2 layers 16
  deepseek_v2       BF16   DeepseekV2ForCausalLM (V2-Lite-like): topk_method greedy, softmax, weights    8
                           x routed_scaling_factor 1.5, never renormalised; n_shared_experts 2
                           (mlp.shared_experts, d_ff 16, ungated); first_k_dense_replace 1 of 3 layers
                           (layer 0 dense, d_ff 40)
  deepseek_v3       BF16   DeepseekV3ForCausalLM: noaux_tc: sigmoid + e_score_correction_bias (F32 in    8
                           the file), 4 groups of 2 ranked by their top-2 sum, topk_group 2, k = 3,
                           norm_topk_prob, x 2.5; 1 shared expert; first_k_dense_replace 1 of 3 layers;
                           the file also holds the MTP layer (model.layers.3.*, num_nextn_predict_layers 1)
  deepseek_v3_fp8   BF16   as deepseek_v3 (k = 2, d 20, 2 layers), as released: every attention and MLP 12
                           *_proj weight F8_E4M3 (E4M3FN) with weight_scale_inv F32 (ceil(out/8),
                           ceil(in/8)); quantization_config weight_block_size [8, 8] (128 x 128 in the
                           release; 8 gives several blocks, partial ones too); W = code * scale of its
                           block. The reference is the dequantised model
  deepseek_v3_fp8_  BF16   as deepseek_v3_fp8, weight_block_size [4, 8] (blocks not square)             12
  blocks

The third round (after the second's seeds): Phi-1/1.5/2, BERT's post-norm block under other names, StarCoder2.

  name              dtype  names as saved by                  block                                 d_ff
  phi               F16    PhiForCausalLM (model.layers.N.)   x + MLP(input_layernorm(x)), the MLP's     96
                           part of the parallel block; mlp.fc1/fc2, biases, gelu_new, eps 1e-5
  distilbert        F32    DistilBertForMaskedLM              LayerNorm(x + ffn.lin2(gelu(ffn.lin1(x))))  96
                           (distilbert.transformer.layer.N.), output_layer_norm; its own keys (dim,
                           hidden_dim, n_layers, activation), eps 1e-12 fixed in its code; 3 layers
  mpnet             F32    MPNetModel, no prefix (encoder.layer.N., as all-mpnet-base-v2): BERT's     96
                           names and block; layer_norm_eps 1e-5 from config.json (MPNetConfig: 1e-12)
  electra           BF16   ElectraForPreTraining (electra.): BERT's names and block; config without  64
                           hidden_act and layer_norm_eps: ElectraConfig's defaults (gelu, 1e-12); d 16
  starcoder2        BF16   Starcoder2ForCausalLM, tied      x + c_proj(gelu_tanh(c_fc(LN(x)))),         96
                           post_attention_layernorm, biases, norm_epsilon 1e-5; GQA q/k/v/o with biases
  distilbert_model  F16    DistilBertModel (no prefix: transformer.layer.N., as sentence-transformers  64
                           saves it), d 16, 2 layers
  deberta_v2        F32    DebertaV2ForSequenceClassification (deberta.), model_type deberta-v2:      96
                           BERT's MLP names and block, layer_norm_eps 1e-7

Then Granite's mixtures of experts (T = 17; 8 experts, k = 2; d 24, 2 layers, tied embeddings; experts
stacked: block_sparse_moe.input_linear (E, 2 d_ff, d; each expert's gate rows first) and output_linear
(E, d, d_ff), router block_sparse_moe.router.layer; JetMoE's gating: softmax of the top-k logits; the
shared MLP shared_mlp.input_linear (2 d_ff, d; gate rows first), output_linear; the MLP's output, routed and
shared, times residual_multiplier before the residual):

  name                    dtype  config                                                              d_ff
  granitemoe              BF16   granite-3.1-1b-a400m's keys; residual_multiplier 0.22                 16
  granitemoehybrid        BF16   granite-4.0-h-tiny's keys: layer_types [mamba, attention] (layer 0   16
                                 holds Mamba-2's tensors, mamba.*), shared_intermediate_size 20,
                                 residual_multiplier 0.246, rms_norm_eps 1e-5
  granitemoehybrid_dense  BF16   granite-4.0-micro's layout: num_local_experts 0, every layer the     32
                                 shared MLP alone (shared_intermediate_size 32), times 0.246

Then Phi-3.5-MoE (T = 17, 8 experts):

  phimoe                  BF16   Phi-3.5-MoE-instruct's keys; Mixtral's names (block_sparse_moe.gate, 16
                                 experts.J.w1/w3/w2); post_attention_layernorm an nn.LayerNorm with bias
                                 (eps rms_norm_eps 1e-5); the sparsemixer at inference (two experts, each
                                 the best logit left, weighed by the softmax over the logits left within a
                                 relative 2 router_jitter_noise of it), router_jitter_noise 0.25 (the
                                 release's 0.01 keeps one expert a step for almost every token); drawn so
                                 that no logit is within 1e-3 (relative) of a threshold and each step keeps
                                 one expert for some tokens and several for others

Then Llama 4 (llama4, llama4_text), Jamba (jamba), DBRX (dbrx), DeepSeek-V3's FP8 blocks (deepseek_v3_fp8_blocks),
each described at its spec in new_models(), and gpt-oss (T = 17):

  name                    dtype  config                                                              d_ff
  gpt_oss                 BF16   gpt-oss-20b's keys without quantization_config; 8 experts, k = 2, d   16
                                 24; the router with a bias, the softmax of the top-k logits; experts
                                 mlp.experts.gate_up_proj (E, d, 2 d_ff; gate and up columns
                                 alternating) and down_proj (E, d_ff, d) with their biases; the clamped
                                 SwiGLU (drawn so that both clamps act on routed tokens)
  gpt_oss_mxfp4           BF16   as released: quant_method "mxfp4", the experts' gate_up_proj_blocks   64
                                 and _scales, down_proj's, U8 (two E2M1 codes a byte, an E8M0 scale a
                                 32), quantised by the MX rule; 4 experts, k = 2, d 64. The reference is
                                 the dequantised model

The safetensors files are written here from the format's specification (no safetensors package):
8-byte little-endian header length N, N bytes of compact JSON ("__metadata__": {"format": "pt"} first,
then the tensors in the order of their data), padded with spaces to a multiple of 8, then the
tensors' little-endian C-order bytes, contiguous from offset 0; ordered as the reference writer orders
them: by descending dtype rank (I64, F32, BF16, F16, F8_E4M3), then by name (by name alone when a file
has one dtype, as the first ten). --check re-reads every file with a separate parser (numpy only)
and recomputes every reference from the tensors read back, which must give the same bits; for the
second round it also reads every block's settings from config.json as a loader must (sub-configs,
the config classes' defaults), and recomputes the routing and the blocks in numpy (float64).
The outputs are committed; CI does not need PyTorch.
"""
import json
import math
import pathlib
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

D_MODEL, D_FF_GATED, D_FF_LN, LAYERS, VOCAB, TOKENS = 24, 60, 96, 2, 100, 5
D_GPT2_SMALL = 16  # gpt2_bf16's n_embd; n_inner null: d_ff = 4 * n_embd
HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE / "data" / "hf"

# The safetensors dtype names and torch dtypes written here, with config.json's torch_dtype.
ST_DTYPE = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64",
            torch.int64: "I64", torch.uint8: "U8"}
TORCH_DTYPE = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}

# Activations by their Hugging Face names (transformers.activations.ACT2FN). gelu_new is
# NewGELUActivation's explicit tanh formula, the same function as PyTorch's tanh form.
ACT = {
    "gelu": F.gelu,
    "gelu_new": lambda v: F.gelu(v, approximate="tanh"),
    "gelu_pytorch_tanh": lambda v: F.gelu(v, approximate="tanh"),
    "silu": F.silu,
}


# ---- random tensors

def linear(out_features, in_features, scale=1.0):
    """An nn.Linear-style weight (out, in), uniform in +-1/sqrt(in), times scale."""
    bound = 1 / math.sqrt(in_features)
    return (torch.rand(out_features, in_features) * 2 - 1) * bound * scale


def bias(n, fan_in):
    return (torch.rand(n) * 2 - 1) / math.sqrt(fan_in)


def norm_weight(n):
    return 1 + 0.1 * torch.randn(n)


def small(*shape):
    """Embeddings and the like: values the blocks never read."""
    return 0.02 * torch.randn(*shape)


# ---- the models' tensors, in state-dict order

def bert_tensors(prefix, d_ff, legacy=False, head=None):
    """BertModel's (or RobertaModel's) parameters under prefix; head: "bert" (cls.predictions),
    "roberta" (lm_head) or "pooler". legacy: LayerNorm.gamma/.beta, as old TF-converted checkpoints."""
    g, b = ("gamma", "beta") if legacy else ("weight", "bias")
    d, t = D_MODEL, {}

    def layer_norm(name):
        t[f"{name}.LayerNorm.{g}"], t[f"{name}.LayerNorm.{b}"] = norm_weight(d), 0.1 * torch.randn(d)

    def dense(name, n_out, n_in, scale=1.0):
        t[f"{name}.weight"], t[f"{name}.bias"] = linear(n_out, n_in, scale), bias(n_out, n_in)

    e = f"{prefix}embeddings"
    t[f"{e}.word_embeddings.weight"] = small(VOCAB, d)
    t[f"{e}.position_embeddings.weight"] = small(34 if head == "roberta" else 32, d)
    t[f"{e}.token_type_embeddings.weight"] = small(1 if head == "roberta" else 2, d)
    layer_norm(e)
    for i in range(LAYERS):
        p = f"{prefix}encoder.layer.{i}"
        for q in ("query", "key", "value"):
            dense(f"{p}.attention.self.{q}", d, d)
        dense(f"{p}.attention.output.dense", d, d)
        layer_norm(f"{p}.attention.output")
        dense(f"{p}.intermediate.dense", d_ff, d, scale=3)  # x3: GELU's negative tail is reached
        dense(f"{p}.output.dense", d, d_ff)
        layer_norm(f"{p}.output")
    if head == "pooler":
        dense("pooler.dense", d, d)
    elif head == "bert":  # cls.predictions.decoder is tied to the word embeddings: not saved
        t["cls.predictions.bias"] = small(VOCAB)
        dense("cls.predictions.transform.dense", d, d)
        layer_norm("cls.predictions.transform")
    elif head == "roberta":  # lm_head.decoder likewise
        t["lm_head.bias"] = small(VOCAB)
        dense("lm_head.dense", d, d)
        t["lm_head.layer_norm.weight"], t["lm_head.layer_norm.bias"] = norm_weight(d), 0.1 * torch.randn(d)
    return t


def gpt2_tensors(prefix, d, d_ff):
    """GPT2Model's parameters under prefix. Conv1D weights are (in, out), nn.Linear's transpose.
    lm_head is tied to wte: not saved; attn.bias (the causal mask) is a non-persistent buffer."""
    t = {f"{prefix}wte.weight": small(VOCAB, d), f"{prefix}wpe.weight": small(32, d)}

    def ln(name):
        t[f"{name}.weight"], t[f"{name}.bias"] = norm_weight(d), 0.1 * torch.randn(d)

    def conv1d(name, n_in, n_out, scale=1.0):
        t[f"{name}.weight"], t[f"{name}.bias"] = linear(n_out, n_in, scale).T.contiguous(), bias(n_out, n_in)

    for i in range(LAYERS):
        p = f"{prefix}h.{i}"
        ln(f"{p}.ln_1")
        conv1d(f"{p}.attn.c_attn", d, 3 * d)
        conv1d(f"{p}.attn.c_proj", d, d)
        ln(f"{p}.ln_2")
        conv1d(f"{p}.mlp.c_fc", d, d_ff, scale=3)
        conv1d(f"{p}.mlp.c_proj", d_ff, d)
    ln(f"{prefix}ln_f")
    return t


def llama_tensors(heads, kv_heads, qkv_bias=False, lm_head=True, gemma=False, head_dim=None):
    """LlamaForCausalLM's parameters (Mistral's, Qwen2's, Gemma's: the same names). Gemma's head_dim
    is its own: heads * head_dim need not be hidden_size (gemma-7b: 16 * 256 = 4096, hidden 3072)."""
    d, d_ff, head_dim = D_MODEL, D_FF_GATED, head_dim or D_MODEL // heads
    # Gemma's RMSNorm multiplies by (1 + weight): its checkpoints hold weights around 0.
    rms = (lambda: 0.1 * torch.randn(d)) if gemma else (lambda: norm_weight(d))
    t = {"model.embed_tokens.weight": small(VOCAB, d)}
    for i in range(LAYERS):
        p = f"model.layers.{i}"
        for name, n_out in (("q", heads * head_dim), ("k", kv_heads * head_dim), ("v", kv_heads * head_dim)):
            t[f"{p}.self_attn.{name}_proj.weight"] = linear(n_out, d)
            if qkv_bias:
                t[f"{p}.self_attn.{name}_proj.bias"] = bias(n_out, d)
        t[f"{p}.self_attn.o_proj.weight"] = linear(d, heads * head_dim)
        t[f"{p}.mlp.gate_proj.weight"] = linear(d_ff, d, scale=3)  # x3: the negative tail is reached
        t[f"{p}.mlp.up_proj.weight"] = linear(d_ff, d)
        t[f"{p}.mlp.down_proj.weight"] = linear(d, d_ff)
        t[f"{p}.input_layernorm.weight"] = rms()
        t[f"{p}.post_attention_layernorm.weight"] = rms()
    t["model.norm.weight"] = rms()
    if lm_head:
        t["lm_head.weight"] = small(VOCAB, d)
    return t


# ---- config.json, as each *Config.to_dict() writes it

def bert_config(architecture, dtype, model_type="bert", eps=1e-12):
    c = {
        "architectures": [architecture], "attention_probs_dropout_prob": 0.1, "classifier_dropout": None,
        "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": D_MODEL, "initializer_range": 0.02,
        "intermediate_size": D_FF_LN, "layer_norm_eps": eps, "max_position_embeddings": 32,
        "model_type": model_type, "num_attention_heads": 4, "num_hidden_layers": LAYERS, "pad_token_id": 0,
        "position_embedding_type": "absolute", "torch_dtype": TORCH_DTYPE[dtype],
        "transformers_version": "4.44.2", "type_vocab_size": 2, "use_cache": True, "vocab_size": VOCAB,
    }
    if model_type == "roberta":
        c.update(bos_token_id=0, eos_token_id=2, pad_token_id=1, max_position_embeddings=34, type_vocab_size=1)
    return c


def gpt2_config(architecture, dtype, n_embd, n_inner):
    return {
        "activation_function": "gelu_new", "architectures": [architecture], "attn_pdrop": 0.1,
        "bos_token_id": VOCAB - 1, "embd_pdrop": 0.1, "eos_token_id": VOCAB - 1,
        "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 32,
        "n_embd": n_embd, "n_head": 4, "n_inner": n_inner, "n_layer": LAYERS, "n_positions": 32,
        "reorder_and_upcast_attn": False, "resid_pdrop": 0.1, "scale_attn_by_inverse_layer_idx": False,
        "scale_attn_weights": True, "summary_activation": None, "summary_first_dropout": 0.1,
        "summary_proj_to_labels": True, "summary_type": "cls_index", "summary_use_proj": True,
        "torch_dtype": TORCH_DTYPE[dtype], "transformers_version": "4.44.2", "use_cache": True,
        "vocab_size": VOCAB,
    }


def llama_config(model_type, architecture, dtype, heads, kv_heads, eps, **extra):
    c = {
        "architectures": [architecture], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2,
        "hidden_act": "silu", "hidden_size": D_MODEL, "initializer_range": 0.02,
        "intermediate_size": D_FF_GATED, "max_position_embeddings": 128, "model_type": model_type,
        "num_attention_heads": heads, "num_hidden_layers": LAYERS, "num_key_value_heads": kv_heads,
        "rms_norm_eps": eps, "rope_theta": 10000.0, "tie_word_embeddings": False,
        "torch_dtype": TORCH_DTYPE[dtype], "transformers_version": "4.44.2", "use_cache": True,
        "vocab_size": VOCAB,
    }
    c.update(extra)  # None for tie_word_embeddings: the key left out (Gemma's default, True)
    if c["tie_word_embeddings"] is None:
        del c["tie_word_embeddings"]
    return c


def llama_extra():
    return dict(attention_bias=False, mlp_bias=False, pretraining_tp=1, rope_scaling=None)


# ---- the blocks, written from transformers' modeling code

def bert_block(x, p, act, eps):
    """BertIntermediate then BertOutput (RobertaIntermediate/RobertaOutput are copies):
    LayerNorm(dense(act(dense(x))) + x), dropout being the identity at inference."""
    h = ACT[act](F.linear(x, p["intermediate.dense.weight"], p["intermediate.dense.bias"]))
    h = F.linear(h, p["output.dense.weight"], p["output.dense.bias"])
    return F.layer_norm(h + x, (x.shape[-1],), p["output.LayerNorm.weight"], p["output.LayerNorm.bias"], eps)


def conv1d(x, weight, b):
    """transformers.pytorch_utils.Conv1D.forward: addmm(bias, x, weight), weight (in, out)."""
    return torch.addmm(b, x, weight)


def gpt2_block(x, p, act, eps):
    """GPT2Block's second half: residual + GPT2MLP(ln_2(x)), GPT2MLP = c_proj(act(c_fc(.)))."""
    h = F.layer_norm(x, (x.shape[-1],), p["ln_2.weight"], p["ln_2.bias"], eps)
    h = conv1d(ACT[act](conv1d(h, p["mlp.c_fc.weight"], p["mlp.c_fc.bias"])),
               p["mlp.c_proj.weight"], p["mlp.c_proj.bias"])
    return x + h


def rms_norm(x, factor, eps):
    """LlamaRMSNorm.forward: weight * (x * rsqrt(mean(x^2) + eps)); GemmaRMSNorm: factor = 1 + weight.
    (Both upcast to float32 first; here everything is float64 already.)"""
    variance = x.pow(2).mean(-1, keepdim=True)
    return factor * (x * torch.rsqrt(variance + eps))


def gated_block(x, p, act, eps, gemma=False):
    """LlamaDecoderLayer's second half: residual + LlamaMLP(post_attention_layernorm(x)),
    LlamaMLP = down_proj(act(gate_proj(.)) * up_proj(.)); GemmaMLP and GemmaRMSNorm likewise."""
    w = p["post_attention_layernorm.weight"]
    h = rms_norm(x, (1.0 + w) if gemma else w, eps)
    h = F.linear(ACT[act](F.linear(h, p["mlp.gate_proj.weight"])) * F.linear(h, p["mlp.up_proj.weight"]),
                 p["mlp.down_proj.weight"])
    return x + h


# ---- the checkpoints

def models():
    """name -> dict(dtype, tensors (thunk), config, layer prefix, block, shards); the second round's
    (new_models) describe their stacks instead."""
    def bert_like(tensors, config, prefix, legacy=False):
        return dict(tensors=tensors, config=config, layer=prefix + "encoder.layer.{}.", legacy=legacy,
                    block=lambda x, p, c: bert_block(x, p, c["hidden_act"], c["layer_norm_eps"]))

    def gpt2_like(tensors, config, prefix):
        return dict(tensors=tensors, config=config, layer=prefix + "h.{}.",
                    block=lambda x, p, c: gpt2_block(x, p, c["activation_function"], c["layer_norm_epsilon"]))

    def gated(tensors, config, gemma=False):
        # Gemma 1.0's configs say hidden_act "gelu"; GemmaMLP runs gelu_pytorch_tanh regardless
        # (and warns) unless hidden_activation is given.
        def act(c):
            return (c.get("hidden_activation") or "gelu_pytorch_tanh") if gemma else c["hidden_act"]

        return dict(tensors=tensors, config=config, layer="model.layers.{}.",
                    block=lambda x, p, c: gated_block(x, p, act(c), c["rms_norm_eps"], gemma))

    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    specs = {
        "bert": dict(dtype=f32, **bert_like(
            lambda: bert_tensors("bert.", D_FF_LN, head="bert"),
            bert_config("BertForMaskedLM", f32), "bert.")),
        "bert_legacy": dict(dtype=f32, **bert_like(
            lambda: bert_tensors("", D_FF_LN, legacy=True, head="pooler"),
            bert_config("BertModel", f32), "", legacy=True)),
        "roberta": dict(dtype=f16, **bert_like(
            lambda: bert_tensors("roberta.", D_FF_LN, head="roberta"),
            bert_config("RobertaForMaskedLM", f16, "roberta", 1e-05), "roberta.")),
        "gpt2": dict(dtype=f32, **gpt2_like(
            lambda: gpt2_tensors("transformer.", D_MODEL, D_FF_LN),
            gpt2_config("GPT2LMHeadModel", f32, D_MODEL, D_FF_LN), "transformer.")),
        "gpt2_bf16": dict(dtype=bf16, **gpt2_like(
            lambda: gpt2_tensors("", D_GPT2_SMALL, 4 * D_GPT2_SMALL),
            gpt2_config("GPT2Model", bf16, D_GPT2_SMALL, None), "")),
        "llama": dict(dtype=bf16, **gated(
            lambda: llama_tensors(4, 2),
            llama_config("llama", "LlamaForCausalLM", bf16, 4, 2, 1e-05, **llama_extra()))),
        "llama_f32": dict(dtype=f32, **gated(
            lambda: llama_tensors(4, 4),
            llama_config("llama", "LlamaForCausalLM", f32, 4, 4, 1e-05, **llama_extra()))),
        "mistral": dict(dtype=f16, **gated(
            lambda: llama_tensors(4, 2),
            llama_config("mistral", "MistralForCausalLM", f16, 4, 2, 1e-05, sliding_window=64))),
        "qwen2": dict(dtype=bf16, shards=2, **gated(
            lambda: llama_tensors(4, 2, qkv_bias=True),
            llama_config("qwen2", "Qwen2ForCausalLM", bf16, 4, 2, 1e-06, bos_token_id=VOCAB - 1,
                         eos_token_id=VOCAB - 1, max_window_layers=LAYERS, rope_theta=1000000.0,
                         sliding_window=128, use_sliding_window=False))),
        "gemma": dict(dtype=bf16, **gated(
            lambda: llama_tensors(4, 1, lm_head=False, gemma=True, head_dim=8),
            llama_config("gemma", "GemmaForCausalLM", bf16, 4, 1, 1e-06, hidden_act="gelu", head_dim=8,
                         attention_bias=False, bos_token_id=2, eos_token_id=1, pad_token_id=0,
                         rope_scaling=None, tie_word_embeddings=None,
                         transformers_version="4.38.0.dev0"), gemma=True)),
    }
    specs.update(new_models())  # appended: the first ten keep their seeds
    return specs


# ---- the checkpoints added for the loader's second round: more dense families, mixtures of experts
#
# A new spec lists its "stacks": the stacks of layers a loader builds blocks from. Each has a name (None
# for a single stack: reference/X.npy and Y_layer<i>.npy as above; else X_<name>.npy, Y_<name>_layer<i>.npy),
# its layer prefix, its layer count, the block's kind and the settings Transformers runs it with, written
# out here by hand; --check reads them again from config.json as a loader must (class defaults for the
# keys a config leaves out) and compares.

T_MOE = 17  # tokens for the mixtures of experts: with k = 2 of 8 experts, about four tokens an expert
NEAR_TIE = 1e-3  # relative gap wanted between the k-th and (k+1)-th routing scores of every token


class Tensors(dict):
    """A state dict being drawn, with helpers that add one module's parameters."""

    def lin(self, name, n_out, n_in, scale=1.0, with_bias=False):
        self[f"{name}.weight"] = linear(n_out, n_in, scale)
        if with_bias:
            self[f"{name}.bias"] = bias(n_out, n_in)

    def layer_norm(self, name, n):
        self[f"{name}.weight"], self[f"{name}.bias"] = norm_weight(n), 0.1 * torch.randn(n)

    def rms(self, name, n, gemma=False):  # Gemma's RMSNorm multiplies by (1 + weight): weights around 0
        self[f"{name}.weight"] = 0.1 * torch.randn(n) if gemma else norm_weight(n)

    def fused_mlp(self, prefix, d, d_ff):  # Granite's shared MLP: the gate's rows, then the up's
        self[f"{prefix}input_linear.weight"] = torch.cat([linear(d_ff, d, scale=3), linear(d_ff, d)])
        self.lin(f"{prefix}output_linear", d, d_ff)

    def swiglu(self, name, d, d_ff, names=("gate_proj", "up_proj", "down_proj")):
        gate, up, down = names
        self.lin(f"{name}.{gate}", d_ff, d, scale=3)  # x3: the activation's negative tail is reached
        self.lin(f"{name}.{up}", d_ff, d)
        self.lin(f"{name}.{down}", d, d_ff)

    def attention(self, name, d, heads, kv_heads, head_dim, qkv_bias=False, qk_norm=None, gemma=False):
        """LlamaAttention's projections; qk_norm "head" (Qwen3, Gemma 3: (head_dim,)) or "full" (OLMoE)."""
        for proj, n in (("q", heads * head_dim), ("k", kv_heads * head_dim), ("v", kv_heads * head_dim)):
            self.lin(f"{name}.{proj}_proj", n, d, with_bias=qkv_bias)
        self.lin(f"{name}.o_proj", d, heads * head_dim)
        if qk_norm:
            full = qk_norm == "full"
            self.rms(f"{name}.q_norm", heads * head_dim if full else head_dim, gemma)
            self.rms(f"{name}.k_norm", kv_heads * head_dim if full else head_dim, gemma)

    def mla(self, name, d, heads, q_rank, kv_rank, nope, rope, v):
        """DeepSeek's multi-head latent attention; q_rank None: q_proj (V2-Lite), else q_a/q_b (V3)."""
        if q_rank is None:
            self.lin(f"{name}.q_proj", heads * (nope + rope), d)
        else:
            self.lin(f"{name}.q_a_proj", q_rank, d)
            self.rms(f"{name}.q_a_layernorm", q_rank)
            self.lin(f"{name}.q_b_proj", heads * (nope + rope), q_rank)
        self.lin(f"{name}.kv_a_proj_with_mqa", kv_rank + rope, d)
        self.rms(f"{name}.kv_a_layernorm", kv_rank)
        self.lin(f"{name}.kv_b_proj", heads * (nope + v), kv_rank)
        self.lin(f"{name}.o_proj", d, heads * v)

    def encoder_layer(self, p, d, d_ff, attention="self_attn", projs=("k_proj", "v_proj", "q_proj", "out_proj"),
                      norms=("layer_norm1", "layer_norm2"), mlp=("mlp.fc1", "mlp.fc2")):
        """An encoder layer's parameters in this order: the attention's projections, the first norm, the MLP,
        the second norm; by default CLIPEncoderLayer's (SiglipEncoderLayer's) names."""
        for proj in projs:
            self.lin(f"{p}.{attention}.{proj}", d, d, with_bias=True)
        self.layer_norm(f"{p}.{norms[0]}", d)
        self.lin(f"{p}.{mlp[0]}", d_ff, d, scale=3, with_bias=True)
        self.lin(f"{p}.{mlp[1]}", d, d_ff, with_bias=True)
        self.layer_norm(f"{p}.{norms[1]}", d)


def gemma_decoder(t, prefix, layers, d, d_ff, heads, kv_heads, head_dim, qk_norm):
    """Gemma2Model's / Gemma3TextModel's parameters under prefix (lm_head is tied: not saved)."""
    t[f"{prefix}embed_tokens.weight"] = small(VOCAB, d)
    for i in range(layers):
        p = f"{prefix}layers.{i}"
        t.attention(f"{p}.self_attn", d, heads, kv_heads, head_dim, qk_norm="head" if qk_norm else None, gemma=True)
        t.swiglu(f"{p}.mlp", d, d_ff)
        for norm in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                     "post_feedforward_layernorm"):
            t.rms(f"{p}.{norm}", d, gemma=True)
    t.rms(f"{prefix}norm", d, gemma=True)
    return t


def siglip_vision(t, prefix, layers, d, d_ff, patch, positions):
    """SiglipVisionTransformer's parameters under prefix, without the pooling head (vision_use_head false)."""
    t[f"{prefix}embeddings.patch_embedding.weight"] = small(d, 3, patch, patch)
    t[f"{prefix}embeddings.patch_embedding.bias"] = small(d)
    t[f"{prefix}embeddings.position_embedding.weight"] = small(positions, d)
    for i in range(layers):
        t.encoder_layer(f"{prefix}encoder.layers.{i}", d, d_ff)
    t.layer_norm(f"{prefix}post_layernorm", d)
    return t


def gemma3_tensors(names, text, vision):
    """Gemma3ForConditionalGeneration's: vision tower, projector, language model (their order in __init__)."""
    t = Tensors()
    siglip_vision(t, names["vision"], **vision)
    t[f"{names['projector']}mm_input_projection_weight"] = linear(text["d"], vision["d"]).T.contiguous()
    t.rms(f"{names['projector']}mm_soft_emb_norm", vision["d"], gemma=True)
    return gemma_decoder(t, names["text"], text["layers"], text["d"], text["d_ff"], 4, 1, 8, qk_norm=True)


def phi3_tensors(d, d_ff, layers, heads):
    t = Tensors({"model.embed_tokens.weight": small(VOCAB, d)})
    for i in range(layers):
        p = f"model.layers.{i}"
        t.lin(f"{p}.self_attn.o_proj", d, d)
        t.lin(f"{p}.self_attn.qkv_proj", 3 * d, d)  # heads == kv heads here: q, k, v of d rows each
        # gate_up_proj: the gate's d_ff rows, then the up projection's (chunk(2, dim=-1) in Phi3MLP)
        t[f"{p}.mlp.gate_up_proj.weight"] = torch.cat([linear(d_ff, d, scale=3), linear(d_ff, d)])
        t.lin(f"{p}.mlp.down_proj", d, d_ff)
        t.rms(f"{p}.input_layernorm", d)
        t.rms(f"{p}.post_attention_layernorm", d)
    t.rms("model.norm", d)
    t["lm_head.weight"] = small(VOCAB, d)
    return t


def qwen3_tensors(d, d_ff, layers, heads, kv_heads, head_dim):
    """Qwen3ForCausalLM's, tie_word_embeddings true (as Qwen3-0.6B to 4B): no lm_head.weight."""
    t = Tensors({"model.embed_tokens.weight": small(VOCAB, d)})
    for i in range(layers):
        p = f"model.layers.{i}"
        t.attention(f"{p}.self_attn", d, heads, kv_heads, head_dim, qk_norm="head")
        t.swiglu(f"{p}.mlp", d, d_ff)
        t.rms(f"{p}.input_layernorm", d)
        t.rms(f"{p}.post_attention_layernorm", d)
    t.rms("model.norm", d)
    return t


def t5_tensors(d, d_ff, heads, d_kv, layers, gated, every_layer_bias=False, lm_head=True):
    """T5ForConditionalGeneration's (MT5's, UMT5's). The shared embedding is saved once, as shared.weight;
    lm_head.weight only when untied (v1.1, mT5). relative_attention_bias: block 0's self-attention only
    (T5, mT5), every block's self-attention (UMT5). layers: {"encoder": n, "decoder": m}."""
    t, inner = Tensors({"shared.weight": small(VOCAB, d)}), heads * d_kv

    def attention(name, relative):
        for q in "qkv":
            t.lin(f"{name}.{q}", inner, d)
        t.lin(f"{name}.o", d, inner)
        if relative:
            t[f"{name}.relative_attention_bias.weight"] = small(32, heads)

    def feed_forward(name):
        if gated:
            t.lin(f"{name}.DenseReluDense.wi_0", d_ff, d, scale=3)
            t.lin(f"{name}.DenseReluDense.wi_1", d_ff, d)
        else:
            t.lin(f"{name}.DenseReluDense.wi", d_ff, d, scale=3)
        t.lin(f"{name}.DenseReluDense.wo", d, d_ff)
        t.rms(f"{name}.layer_norm", d)

    for stack in ("encoder", "decoder"):
        for i in range(layers[stack]):
            b = f"{stack}.block.{i}.layer"
            attention(f"{b}.0.SelfAttention", i == 0 or every_layer_bias)
            t.rms(f"{b}.0.layer_norm", d)
            if stack == "decoder":
                attention(f"{b}.1.EncDecAttention", False)
                t.rms(f"{b}.1.layer_norm", d)
            feed_forward(f"{b}.{2 if stack == 'decoder' else 1}")
        t.rms(f"{stack}.final_layer_norm", d)
    if lm_head:
        t["lm_head.weight"] = small(VOCAB, d)
    return t


def vit_tensors(d, d_ff, layers, patch, positions, labels):
    """ViTForImageClassification's (no pooler)."""
    t = Tensors()
    t["vit.embeddings.cls_token"] = small(1, 1, d)
    t["vit.embeddings.position_embeddings"] = small(1, positions, d)
    t["vit.embeddings.patch_embeddings.projection.weight"] = small(d, 3, patch, patch)
    t["vit.embeddings.patch_embeddings.projection.bias"] = small(d)
    for i in range(layers):
        p = f"vit.encoder.layer.{i}"
        for q in ("query", "key", "value"):
            t.lin(f"{p}.attention.attention.{q}", d, d, with_bias=True)
        t.lin(f"{p}.attention.output.dense", d, d, with_bias=True)
        t.lin(f"{p}.intermediate.dense", d_ff, d, scale=3, with_bias=True)
        t.lin(f"{p}.output.dense", d, d_ff, with_bias=True)
        t.layer_norm(f"{p}.layernorm_before", d)
        t.layer_norm(f"{p}.layernorm_after", d)
    t.layer_norm("vit.layernorm", d)
    t.lin("classifier", labels, d, with_bias=True)
    return t


def clip_tensors(text, vision, projection, text_positions, patch):
    """CLIPModel's, with the int64 position_ids buffers older conversions (openai/clip-vit-*) still hold,
    and logit_scale, a 0-d tensor."""
    t, dt, dv = Tensors(), text["d"], vision["d"]
    vision_positions = (vision["image"] // patch) ** 2 + 1
    t["text_model.embeddings.token_embedding.weight"] = small(VOCAB, dt)
    t["text_model.embeddings.position_embedding.weight"] = small(text_positions, dt)
    t["text_model.embeddings.position_ids"] = torch.arange(text_positions).unsqueeze(0)
    for i in range(text["layers"]):
        t.encoder_layer(f"text_model.encoder.layers.{i}", dt, text["d_ff"])
    t.layer_norm("text_model.final_layer_norm", dt)
    t["vision_model.embeddings.class_embedding"] = small(dv)
    t["vision_model.embeddings.patch_embedding.weight"] = small(dv, 3, patch, patch)
    t["vision_model.embeddings.position_embedding.weight"] = small(vision_positions, dv)
    t["vision_model.embeddings.position_ids"] = torch.arange(vision_positions).unsqueeze(0)
    t.layer_norm("vision_model.pre_layrnorm", dv)  # sic
    for i in range(vision["layers"]):
        t.encoder_layer(f"vision_model.encoder.layers.{i}", dv, vision["d_ff"])
    t.layer_norm("vision_model.post_layernorm", dv)
    t["visual_projection.weight"] = linear(projection, dv)
    t["text_projection.weight"] = linear(projection, dt)
    t["logit_scale"] = torch.tensor(2.6592)
    return t


def whisper_tensors(d, stacks, mels, source_positions, target_positions):
    """WhisperForConditionalGeneration's (proj_out is tied to the decoder's embed_tokens: not saved).
    k_proj has no bias. stacks: {"encoder": (layers, ffn), "decoder": (layers, ffn)}."""
    t = Tensors()

    def attention(name):
        t.lin(f"{name}.k_proj", d, d)
        for proj in ("v_proj", "q_proj", "out_proj"):
            t.lin(f"{name}.{proj}", d, d, with_bias=True)

    t["model.encoder.conv1.weight"], t["model.encoder.conv1.bias"] = small(d, mels, 3), small(d)
    t["model.encoder.conv2.weight"], t["model.encoder.conv2.bias"] = small(d, d, 3), small(d)
    t["model.encoder.embed_positions.weight"] = small(source_positions, d)
    for stack in ("encoder", "decoder"):
        layers, ffn = stacks[stack]
        if stack == "decoder":
            t["model.decoder.embed_tokens.weight"] = small(VOCAB, d)
            t["model.decoder.embed_positions.weight"] = small(target_positions, d)
        for i in range(layers):
            p = f"model.{stack}.layers.{i}"
            attention(f"{p}.self_attn")
            t.layer_norm(f"{p}.self_attn_layer_norm", d)
            if stack == "decoder":
                attention(f"{p}.encoder_attn")
                t.layer_norm(f"{p}.encoder_attn_layer_norm", d)
            t.lin(f"{p}.fc1", ffn, d, scale=3, with_bias=True)
            t.lin(f"{p}.fc2", d, ffn, with_bias=True)
            t.layer_norm(f"{p}.final_layer_norm", d)
        t.layer_norm(f"model.{stack}.layer_norm", d)
    return t


def gpt_neox_tensors(d, d_ff, layers):
    """GPTNeoXForCausalLM's (Pythia's names)."""
    t = Tensors({"gpt_neox.embed_in.weight": small(VOCAB, d)})
    for i in range(layers):
        p = f"gpt_neox.layers.{i}"
        t.layer_norm(f"{p}.input_layernorm", d)
        t.layer_norm(f"{p}.post_attention_layernorm", d)
        t.lin(f"{p}.attention.query_key_value", 3 * d, d, with_bias=True)
        t.lin(f"{p}.attention.dense", d, d, with_bias=True)
        t.lin(f"{p}.mlp.dense_h_to_4h", d_ff, d, scale=3, with_bias=True)
        t.lin(f"{p}.mlp.dense_4h_to_h", d, d_ff, with_bias=True)
    t.layer_norm("gpt_neox.final_layer_norm", d)
    t["embed_out.weight"] = small(VOCAB, d)
    return t


def phi_tensors(d, d_ff, layers):
    """PhiForCausalLM's (Phi-1, 1.5, 2): one input_layernorm that attention and MLP both read."""
    t = Tensors({"model.embed_tokens.weight": small(VOCAB, d)})
    for i in range(layers):
        p = f"model.layers.{i}"
        t.layer_norm(f"{p}.input_layernorm", d)
        for proj in ("q_proj", "k_proj", "v_proj", "dense"):
            t.lin(f"{p}.self_attn.{proj}", d, d, with_bias=True)
        t.lin(f"{p}.mlp.fc1", d_ff, d, scale=3, with_bias=True)
        t.lin(f"{p}.mlp.fc2", d, d_ff, with_bias=True)
    t.layer_norm("model.final_layernorm", d)
    t.lin("lm_head", VOCAB, d, with_bias=True)
    return t


def starcoder2_tensors(d, d_ff, layers, heads, kv_heads, head_dim):
    """Starcoder2ForCausalLM's, tied (no lm_head): LayerNorms and linear layers with biases."""
    t = Tensors({"model.embed_tokens.weight": small(VOCAB, d)})
    for i in range(layers):
        p = f"model.layers.{i}"
        t.layer_norm(f"{p}.input_layernorm", d)
        t.attention(f"{p}.self_attn", d, heads, kv_heads, head_dim, qkv_bias=True)
        t[f"{p}.self_attn.o_proj.bias"] = bias(d, heads * head_dim)
        t.layer_norm(f"{p}.post_attention_layernorm", d)
        t.lin(f"{p}.mlp.c_fc", d_ff, d, scale=3, with_bias=True)
        t.lin(f"{p}.mlp.c_proj", d, d_ff, with_bias=True)
    t.layer_norm("model.norm", d)
    return t


def gptj_tensors(d, layers):
    """GPTJForCausalLM's: transformer.h.N.{ln_1, attn.{q,k,v,out}_proj (no biases), mlp.fc_in/fc_out
    (4 d, biases)}, transformer.ln_f, lm_head with a bias."""
    t = Tensors({"transformer.wte.weight": small(VOCAB, d)})
    for i in range(layers):
        p = f"transformer.h.{i}"
        t.layer_norm(f"{p}.ln_1", d)
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            t.lin(f"{p}.attn.{proj}", d, d)
        t.lin(f"{p}.mlp.fc_in", 4 * d, d, scale=3, with_bias=True)
        t.lin(f"{p}.mlp.fc_out", d, 4 * d, with_bias=True)
    t.layer_norm("transformer.ln_f", d)
    t.lin("lm_head", VOCAB, d, with_bias=True)
    return t


def gpt_bigcode_tensors(d, d_ff, layers, head_dim):
    """GPTBigCodeForCausalLM's, tied, multi-query attention (c_attn: d + 2 head_dim rows): nn.Linear
    weights (out, in), not GPT-2's Conv1D."""
    t = Tensors({"transformer.wte.weight": small(VOCAB, d), "transformer.wpe.weight": small(64, d)})
    for i in range(layers):
        p = f"transformer.h.{i}"
        t.layer_norm(f"{p}.ln_1", d)
        t.lin(f"{p}.attn.c_attn", d + 2 * head_dim, d, with_bias=True)
        t.lin(f"{p}.attn.c_proj", d, d, with_bias=True)
        t.layer_norm(f"{p}.ln_2", d)
        t.lin(f"{p}.mlp.c_fc", d_ff, d, scale=3, with_bias=True)
        t.lin(f"{p}.mlp.c_proj", d, d_ff, with_bias=True)
    t.layer_norm("transformer.ln_f", d)
    return t


def bloom_tensors(d, layers):
    """BloomModel's (no prefix: h.N., as bigscience/bloom saves it): word_embeddings(_layernorm),
    input_layernorm, self_attention.query_key_value/dense, post_attention_layernorm,
    mlp.dense_h_to_4h/dense_4h_to_h (4 d), all with biases; ln_f."""
    t = Tensors({"word_embeddings.weight": small(VOCAB, d)})
    t.layer_norm("word_embeddings_layernorm", d)
    for i in range(layers):
        p = f"h.{i}"
        t.layer_norm(f"{p}.input_layernorm", d)
        t.lin(f"{p}.self_attention.query_key_value", 3 * d, d, with_bias=True)
        t.lin(f"{p}.self_attention.dense", d, d, with_bias=True)
        t.layer_norm(f"{p}.post_attention_layernorm", d)
        t.lin(f"{p}.mlp.dense_h_to_4h", 4 * d, d, scale=3, with_bias=True)
        t.lin(f"{p}.mlp.dense_4h_to_h", d, 4 * d, with_bias=True)
    t.layer_norm("ln_f", d)
    return t


def falcon_tensors(d, d_ff, layers, heads, kv_heads, norms, with_bias):
    """FalconForCausalLM's: transformer.h.N.{the layer's LayerNorms, self_attention.query_key_value
    (grouped: heads + 2 kv_heads heads), self_attention.dense, mlp.dense_h_to_4h/dense_4h_to_h}, biases on
    the linear layers only if `bias`; transformer.ln_f, lm_head."""
    head_dim = d // heads
    t = Tensors({"transformer.word_embeddings.weight": small(VOCAB, d)})
    for i in range(layers):
        p = f"transformer.h.{i}"
        for norm in norms:
            t.layer_norm(f"{p}.{norm}", d)
        t.lin(f"{p}.self_attention.query_key_value", (heads + 2 * kv_heads) * head_dim, d, with_bias=with_bias)
        t.lin(f"{p}.self_attention.dense", d, d, with_bias=with_bias)
        t.lin(f"{p}.mlp.dense_h_to_4h", d_ff, d, scale=3, with_bias=with_bias)
        t.lin(f"{p}.mlp.dense_4h_to_h", d, d_ff, with_bias=with_bias)
    t.layer_norm("transformer.ln_f", d)
    t.lin("lm_head", VOCAB, d)
    return t


def distilbert_tensors(d, d_ff, layers, prefix="distilbert."):
    """DistilBertForMaskedLM's: distilbert.transformer.layer.N.{attention, sa_layer_norm, ffn.lin1/lin2,
    output_layer_norm}, sinusoidal or learned position embeddings (learned here); with prefix "",
    DistilBertModel's (sentence-transformers' models), without the masked-LM head."""
    t = Tensors({f"{prefix}embeddings.word_embeddings.weight": small(VOCAB, d),
                 f"{prefix}embeddings.position_embeddings.weight": small(32, d)})
    t.layer_norm(f"{prefix}embeddings.LayerNorm", d)
    for i in range(layers):
        t.encoder_layer(f"{prefix}transformer.layer.{i}", d, d_ff, "attention", ("q_lin", "k_lin", "v_lin", "out_lin"),
                        ("sa_layer_norm", "output_layer_norm"), ("ffn.lin1", "ffn.lin2"))
    if prefix:
        t.lin("vocab_transform", d, d, with_bias=True)
        t.layer_norm("vocab_layer_norm", d)
        t["vocab_projector.bias"] = 0.1 * torch.randn(VOCAB)
    return t


def bert_names_tensors(prefix, d, d_ff, layers, attention):
    """A BERT-shaped encoder under prefix (MPNetModel, ElectraModel): embeddings, then per layer the
    attention's parameters and norm (attention(t, name, d)), intermediate.dense, output.dense,
    output.LayerNorm."""
    t = Tensors({f"{prefix}embeddings.word_embeddings.weight": small(VOCAB, d),
                 f"{prefix}embeddings.position_embeddings.weight": small(32, d)})
    t.layer_norm(f"{prefix}embeddings.LayerNorm", d)
    for i in range(layers):
        p = f"{prefix}encoder.layer.{i}"
        attention(t, f"{p}.attention", d)
        t.lin(f"{p}.intermediate.dense", d_ff, d, scale=3, with_bias=True)
        t.lin(f"{p}.output.dense", d, d_ff, with_bias=True)
        t.layer_norm(f"{p}.output.LayerNorm", d)
    return t


def mpnet_attention(t, name, d):
    """MPNetAttention: attn.q/k/v/o (no .self), its LayerNorm beside them."""
    for proj in ("q", "k", "v", "o"):
        t.lin(f"{name}.attn.{proj}", d, d, with_bias=True)
    t.layer_norm(f"{name}.LayerNorm", d)


def deberta_attention(t, name, d):
    """DebertaV2Attention: self.query_proj/key_proj/value_proj, output.dense and output.LayerNorm."""
    for proj in ("query_proj", "key_proj", "value_proj"):
        t.lin(f"{name}.self.{proj}", d, d, with_bias=True)
    t.lin(f"{name}.output.dense", d, d, with_bias=True)
    t.layer_norm(f"{name}.output.LayerNorm", d)


def electra_attention(t, name, d):
    for proj in ("query", "key", "value"):
        t.lin(f"{name}.self.{proj}", d, d, with_bias=True)
    t.lin(f"{name}.output.dense", d, d, with_bias=True)
    t.layer_norm(f"{name}.output.LayerNorm", d)


# The MoE layouts: where a layer's router, experts and shared expert are, below the layer prefix.
def modernbert_tensors(d, d_ff, layers):
    """ModernBertForMaskedLM's (model.): no attn_norm in layer 0, LayerNorms without bias (norm_bias
    false), attn.Wqkv and attn.Wo, mlp_norm, mlp.Wi (2 d_ff rows: act(first half) * second half), mlp.Wo."""
    t = Tensors({"model.embeddings.tok_embeddings.weight": small(VOCAB, d),
                 "model.embeddings.norm.weight": norm_weight(d)})
    for i in range(layers):
        p = f"model.layers.{i}"
        if i > 0:
            t[f"{p}.attn_norm.weight"] = norm_weight(d)
        t.lin(f"{p}.attn.Wqkv", 3 * d, d)
        t.lin(f"{p}.attn.Wo", d, d)
        t[f"{p}.mlp_norm.weight"] = norm_weight(d)
        t.lin(f"{p}.mlp.Wi", 2 * d_ff, d, scale=3)
        t.lin(f"{p}.mlp.Wo", d, d_ff)
    t["model.final_norm.weight"] = norm_weight(d)
    t.lin("head.dense", d, d)
    t["head.norm.weight"] = norm_weight(d)
    t["decoder.bias"] = 0.1 * torch.randn(VOCAB)
    return t


def llama_like_tensors(d, d_ff, layers, heads, norms, final_norm, qk_norm=None, lm_head=True):
    """A decoder of LLaMA's attention and MLP names with the norms `norms(t, prefix)` adds to each layer
    (StableLM, Cohere, OLMo, OLMo 2), final_norm(t) after them."""
    t = Tensors({"model.embed_tokens.weight": small(VOCAB, d)})
    for i in range(layers):
        p = f"model.layers.{i}"
        t.attention(f"{p}.self_attn", d, heads, heads, d // heads, qk_norm=qk_norm)
        t.swiglu(f"{p}.mlp", d, d_ff)
        norms(t, p)
    final_norm(t)
    if lm_head:
        t.lin("lm_head", VOCAB, d)
    return t


def vlm_tensors(lm, d, d_ff, layers, heads, kv_heads, around, gemma=False, qkv_bias=False):
    """A vision-language model's language model under the prefix lm (its layers at lm + "layers.N."), with
    the tensors `around` it (name -> shape: the vision tower's and the projector's, a few of each)."""
    t = Tensors({f"{lm}embed_tokens.weight": small(VOCAB, d)})
    for i in range(layers):
        p = f"{lm}layers.{i}"
        t.attention(f"{p}.self_attn", d, heads, kv_heads, d // heads, qkv_bias=qkv_bias)
        t.swiglu(f"{p}.mlp", d, d_ff)
        t.rms(f"{p}.input_layernorm", d, gemma)
        t.rms(f"{p}.post_attention_layernorm", d, gemma)
    t.rms(f"{lm}norm", d, gemma)
    for name, shape in around.items():
        t[name] = small(*shape)
    return t


MIXTRAL_NAMES = dict(router="block_sparse_moe.gate.weight", expert="block_sparse_moe.experts.{}.",
                     proj=("w1", "w3", "w2"))  # gate, up, down
QWEN_NAMES = dict(router="mlp.gate.weight", expert="mlp.experts.{}.", proj=("gate_proj", "up_proj", "down_proj"))
STACKED_NAMES = dict(router="mlp.gate.weight", gate_up="mlp.experts.gate_up_proj", down="mlp.experts.down_proj")
# Granite's (GraniteMoeMoE, JetMoE's ParallelExperts): (E, 2 d_ff, d), each expert's gate rows first; (E, d, d_ff)
GRANITE_NAMES = dict(router="block_sparse_moe.router.layer.weight", gate_up="block_sparse_moe.input_linear.weight",
                     down="block_sparse_moe.output_linear.weight")
GRANITE_MLP = "shared_mlp."  # GraniteMoeSharedMLP: input_linear (2 d_ff, d), gate rows first; output_linear (d, d_ff)
# Llama 4's (Llama4TextExperts, read by bmm): (E, d, 2 d_ff), each expert's gate columns first; (E, d_ff, d)
JAMBA_NAMES = dict(router="feed_forward.router.weight", expert="feed_forward.experts.{}.",
                   proj=("gate_proj", "up_proj", "down_proj"))
# DBRX's (DbrxExpertGLU): w1, v1, w2 each (E d_ff, d); expert j's rows [j d_ff, (j + 1) d_ff), the down product
# intermediate.matmul(w2_j) (w2_j is its down weight transposed)
DBRX_NAMES = dict(router="ffn.router.layer.weight", rows=("ffn.experts.mlp.w1", "ffn.experts.mlp.v1", "ffn.experts.mlp.w2"))
LLAMA4_NAMES = dict(router="feed_forward.router.weight", gate_up="feed_forward.experts.gate_up_proj",
                    down="feed_forward.experts.down_proj", in_out=True)
# gpt-oss's (GptOssMLP): the router with a bias; the experts as Llama 4's, (E, d, 2 d_ff) and (E, d_ff, d), but the
# gate and up columns alternating (gate_up[..., ::2] the gate), each with a bias: gate_up_proj_bias (E, 2 d_ff),
# alternating too, and down_proj_bias (E, d)
GPT_OSS_NAMES = dict(router="mlp.router.weight", router_bias="mlp.router.bias", gate_up="mlp.experts.gate_up_proj",
                     down="mlp.experts.down_proj", in_out=True, interleaved=True)
GPT_OSS_LIMIT, GPT_OSS_ALPHA = 7.0, 1.702


def moe_tensors(s, attention, lm_head=True, mtp=False, lm="model.", around=None):
    """A decoder whose feed-forward layers are those of settings s (see moe_settings): the router
    (weight x2: a peaked softmax), e_score_correction_bias (F32, DeepSeek-V3), the experts, per expert or
    stacked as Transformers 5 holds them, the shared expert(s) and Qwen2-MoE's shared_expert_gate; dense
    layers: mlp.gate_proj/up_proj/down_proj of d_dense. attention(t, prefix) adds the attention's
    parameters. mtp: DeepSeek-V3's multi-token-prediction layer, saved as layer num_hidden_layers. lm: the
    language model's prefix (a vision-language model's), its head beside it; around: name -> shape, the
    tensors around it (a vision tower's, a projector's)."""
    d, names, t = s["d"], s["names"], Tensors({f"{lm}embed_tokens.weight": small(VOCAB, s["d"])})
    for i in range(s["layers"] + (1 if mtp else 0)):
        p = f"{lm}layers.{i}."
        if i == s["layers"]:  # the MTP module's own tensors, beside a full MoE layer
            t[f"{p}embed_tokens.weight"] = small(VOCAB, d)
            t.rms(f"{p}enorm", d)
            t.rms(f"{p}hnorm", d)
            t.lin(f"{p}eh_proj", d, 2 * d)
            t.rms(f"{p}shared_head.norm", d)
            t[f"{p}shared_head.head.weight"] = small(VOCAB, d)
        attention(t, f"{p}self_attn")
        if i < s["layers"] and not s["sparse"][i]:
            if s["granite"]:
                t.fused_mlp(p + GRANITE_MLP, d, s["d_dense"])
            else:
                t.swiglu(p + s["mlp"][:-1], d, s["d_dense"])
        else:
            t[p + names["router"]] = linear(s["experts"], d, scale=2)
            if "router_bias" in names:
                t[p + names["router_bias"]] = 0.5 * torch.randn(s["experts"])
            if s["router"] == "deepseek_v3":  # a buffer, kept in float32 (sigmoid scores are in (0, 1))
                t[f"{p}mlp.gate.e_score_correction_bias"] = (torch.rand(s["experts"]) * 2 - 1) * s["bias_range"]
            if "gate_up" in names:  # Transformers 5: (E, 2 d_ff, d), each expert's gate rows first; (E, d, d_ff)
                f = s["d_expert"]
                t[p + names["gate_up"]] = torch.stack(
                    [torch.cat([linear(f, d, scale=3), linear(f, d)]) for _ in range(s["experts"])])
                t[p + names["down"]] = torch.stack([linear(d, f) for _ in range(s["experts"])])
                if names.get("interleaved"):  # gpt-oss: gate and up rows alternating, then each with a bias
                    gu = t[p + names["gate_up"]]
                    t[p + names["gate_up"]] = torch.stack([gu[:, :f], gu[:, f:]], dim=2).reshape(gu.shape)
                    # Biases wide enough for the clamps to act: gates above 7, ups beyond +-7, in every expert.
                    bias = torch.randn(s["experts"], f, 2)
                    bias[:, 0, 0], bias[:, 1, 1], bias[:, 2, 1] = 9.0, -9.0, 8.5
                    t[p + names["gate_up"] + "_bias"] = bias.reshape(s["experts"], 2 * f)
                    t[p + names["down"] + "_bias"] = 0.5 * torch.randn(s["experts"], d)
                if names.get("in_out"):  # Llama 4: the same matrices transposed, (E, d, 2 d_ff) and (E, d_ff, d)
                    t[p + names["gate_up"]] = t[p + names["gate_up"]].transpose(1, 2).contiguous()
                    t[p + names["down"]] = t[p + names["down"]].transpose(1, 2).contiguous()
            else:
                for j in range(s["experts"]):
                    t.swiglu(p + names["expert"].format(j)[:-1], d, s["d_expert"], names["proj"])
            if s["shared"] and s["granite"]:
                t.fused_mlp(p + GRANITE_MLP, d, s["shared"])
            elif s["shared"]:
                t.swiglu(p + s["shared_name"][:-1], d, s["shared"])
            if s["shared_gate"]:
                t[f"{p}mlp.shared_expert_gate.weight"] = linear(1, d, scale=2)
        norm = t.layer_norm if s["norm"] == "layer" else t.rms
        norm(f"{p}input_layernorm", d)
        norm(f"{p}{s['ff_norm']}", d)
    (t.layer_norm if s["norm"] == "layer" else t.rms)(f"{lm}norm", d)
    if lm_head:
        t[lm[:-len("model.")] + "lm_head.weight"] = small(VOCAB, d)
    for name, shape in (around or {}).items():
        t[name] = small(*shape)
    return t


def moe_settings(layers, d, experts, k, d_expert, router="softmax", renorm=True, names=QWEN_NAMES,
                 d_dense=None, sparse=None, shared=0, shared_gate=False, shared_name="mlp.shared_expert.",
                 scale=1.0, groups=1, topk_group=1, bias_range=0.0, eps=1e-6, act="silu", granite=False,
                 residual_multiplier=1.0, norm="rms", jitter=None, mlp="mlp.", weigh_input=False,
                 ff_norm="post_attention_layernorm"):
    """What Transformers runs a MoE model's feed-forward layers with (written by hand from each config).
    granite: the shared expert and the dense layers' MLP are Granite's shared_mlp (GRANITE_MLP); the MLP's
    output, routed and shared, is multiplied by residual_multiplier before the residual is added. norm: "rms"
    (RMSNorm), "layer" (nn.LayerNorm with bias: Phi-3.5-MoE) or "layer_nobias" (DBRX's). jitter: the sparsemixer's router_jitter_noise.
    mlp: the dense layers' MLP's prefix. weigh_input: the routing weights multiply the experts' inputs (Llama 4).
    ff_norm: the norm before the MLP (Jamba's pre_ff_layernorm)."""
    return dict(layers=layers, d=d, experts=experts, k=k, d_expert=d_expert, router=router, renorm=renorm,
                names=names, d_dense=d_dense, sparse=sparse or [True] * layers, shared=shared,
                shared_gate=shared_gate, shared_name=shared_name, scale=scale, groups=groups,
                topk_group=topk_group, bias_range=bias_range, eps=eps, act=act, granite=granite,
                residual_multiplier=residual_multiplier, norm=norm, jitter=jitter, mlp=mlp, weigh_input=weigh_input,
                ff_norm=ff_norm)


# ---- FP8 (DeepSeek-V3's release format): F8_E4M3 weights, float32 weight_scale_inv per block

class F8E4M3:
    """An F8_E4M3 (OCP E4M3FN) tensor as its bytes: torch 1.13 has no float8 dtype."""
    st_dtype = "F8_E4M3"

    def __init__(self, bits):
        self.bits, self.shape, self.dtype = bits, tuple(bits.shape), torch.uint8


def e4m3_values():
    """The values of the codes 0..126 (0x7F is NaN): increasing, subnormals 2^-6 m/8 for exponent 0."""
    return np.array([(m / 8) * 2.0 ** -6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
                     for e in range(16) for m in range(8)][:127])


def to_e4m3(a):
    """float64 array -> E4M3FN codes, rounding to nearest, ties to the even code, saturating at 448."""
    values, mag = e4m3_values(), np.minimum(np.abs(a), 448.0)
    hi = np.clip(np.searchsorted(values, mag), 1, 126)
    lo = hi - 1
    below, above = mag - values[lo], values[hi] - mag
    code = np.where(below < above, lo, np.where(above < below, hi, np.where(lo % 2 == 0, lo, hi)))
    return (code | np.where(a < 0, 0x80, 0)).astype(np.uint8)


def quantize_fp8(weight, block):
    """DeepSeek-V3's block quantisation: per (block[0] x block[1]) tile, scale = amax / 448 (float32),
    codes = E4M3(weight / scale); weight_scale_inv (ceil(out/b0), ceil(in/b1)) holds the scales, by which
    the codes are multiplied back (the last row and column of tiles may be partial)."""
    w = weight.to(torch.float32).numpy().astype(np.float64)
    rows, cols = -(-w.shape[0] // block[0]), -(-w.shape[1] // block[1])
    scale = np.zeros((rows, cols), np.float32)
    codes = np.zeros(w.shape, np.uint8)
    for r in range(rows):
        for c in range(cols):
            tile = (slice(r * block[0], (r + 1) * block[0]), slice(c * block[1], (c + 1) * block[1]))
            scale[r, c] = np.float32(np.abs(w[tile]).max() / 448.0)
            codes[tile] = to_e4m3(w[tile] / np.float64(scale[r, c]))
    return F8E4M3(torch.from_numpy(codes)), torch.from_numpy(scale)


# ---- MXFP4 (gpt-oss's release format): the experts' weights as FP4 E2M1 codes, two a byte, with an E8M0 scale
# for each 32 along a row (OCP Microscaling Formats (MX) v1.0)

E2M1_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]  # codes 0..7; code | 8 is the negative


def quantize_mxfp4(w):
    """(E, out, in) float -> blocks (E, out, in / 32, 16) and scales (E, out, in / 32), both uint8, by the MX
    rule: for each 32 values X = 2^(floor(log2(amax)) - 2) (2: E2M1's largest exponent; X = 2^-127 for zeros),
    codes = E2M1(v / X) to nearest, ties to the even code, saturating at 6; the low nibble the even value."""
    a = w.to(torch.float64).numpy()
    e, out, n = a.shape
    groups = a.reshape(e, out, n // 32, 32)
    amax = np.abs(groups).max(-1)
    exp = np.where(amax > 0, np.floor(np.log2(np.where(amax > 0, amax, 1))) - 2, -127).astype(np.int64)
    exp = np.clip(exp, -127, 127)
    q = np.minimum(np.abs(groups) / np.ldexp(1.0, exp)[..., None], 6.0)
    values = np.array(E2M1_VALUES)
    hi = np.clip(np.searchsorted(values, q), 1, 7)
    lo = hi - 1
    below, above = q - values[lo], values[hi] - q
    code = np.where(below < above, lo, np.where(above < below, hi, np.where(lo % 2 == 0, lo, hi)))
    code = code | np.where(groups < 0, 8, 0)
    code = code.reshape(e, out, n // 32, 16, 2)
    blocks = (code[..., 0] | code[..., 1] << 4).astype(np.uint8)
    return torch.from_numpy(blocks), torch.from_numpy((exp + 127).astype(np.uint8))


def dequantize_mxfp4(blocks, scales):
    """blocks (E, out, in / 32, 16) and scales (E, out, in / 32) -> (E, out, in) float64, code times 2^(s - 127),
    from the format (as Transformers' convert_moe_packed_tensors, before its transpose)."""
    b = np.asarray(blocks).astype(np.int64)
    codes = np.stack([b & 15, b >> 4], axis=-1).reshape(*b.shape[:-1], 32)
    v = np.array(E2M1_VALUES)[codes & 7] * np.where(codes & 8, -1.0, 1.0)
    v = v * np.ldexp(1.0, np.asarray(scales).astype(np.int64) - 127)[..., None]
    return v.reshape(b.shape[0], b.shape[1], -1)


def mxfp4_quantized(name):
    """The weights gpt-oss's release stores in MXFP4: the experts' gate_up_proj and down_proj."""
    return name.endswith("mlp.experts.gate_up_proj") or name.endswith("mlp.experts.down_proj")


def dequantize_fp8(tensors, block):
    """The checkpoint's weights with each F8 weight replaced by codes x scale (float64, exact)."""
    values, out = torch.from_numpy(np.append(e4m3_values(), np.nan)), {}
    for name, t in tensors.items():
        if name.endswith("_scale_inv"):
            continue
        if isinstance(t, F8E4M3):
            bits = t.bits.to(torch.int64)
            w = values[bits & 0x7F] * torch.where(bits >= 0x80, -1.0, 1.0).to(torch.float64)
            s = tensors[name + "_scale_inv"].to(torch.float64)
            s = s.repeat_interleave(block[0], 0)[: w.shape[0]].repeat_interleave(block[1], 1)[:, : w.shape[1]]
            out[name] = w * s
        else:
            out[name] = t
    return out


# ---- the new blocks, written from transformers' modeling code (float64 throughout)

ACT.update({
    "quick_gelu": lambda v: v * torch.sigmoid(1.702 * v),  # QuickGELUActivation
    "relu": F.relu,
    # modeling_bloom.py's bloom_gelu_forward, its constant as written there
    "bloom_gelu": lambda v: v * 0.5 * (1.0 + torch.tanh(0.79788456 * v * (1 + 0.044715 * v * v))),
})


def gemma2_block(x, p, s):
    """Gemma2DecoderLayer's (Gemma3DecoderLayer's) second half:
    residual + post_feedforward_layernorm(mlp(pre_feedforward_layernorm(x))), both norms x (1 + weight)."""
    h = rms_norm(x, 1.0 + p["pre_feedforward_layernorm.weight"], s["eps"])
    h = F.linear(ACT[s["act"]](F.linear(h, p["mlp.gate_proj.weight"])) * F.linear(h, p["mlp.up_proj.weight"]),
                 p["mlp.down_proj.weight"])
    return x + rms_norm(h, 1.0 + p["post_feedforward_layernorm.weight"], s["eps"])


def llama_mlp_block(x, p, s):
    """LlamaDecoderLayer's second half (Qwen3's, and the dense layers of the MoE models)."""
    return gated_block(x, p, s["act"], s["eps"])


def phi3_block(x, p, s):
    """Phi3DecoderLayer's second half; Phi3MLP: gate, up = gate_up_proj(x).chunk(2, -1); down(up * act(gate))."""
    h = rms_norm(x, p["post_attention_layernorm.weight"], s["eps"])
    gate, up = F.linear(h, p["mlp.gate_up_proj.weight"]).chunk(2, dim=-1)
    return x + F.linear(up * ACT[s["act"]](gate), p["mlp.down_proj.weight"])


def t5_block(x, p, s):
    """T5LayerFF: x + DenseReluDense(layer_norm(x)); T5LayerNorm is an RMSNorm (no mean, no bias);
    T5DenseGatedActDense: wo(act(wi_0(h)) * wi_1(h)); T5DenseActDense: wo(act(wi(h)))."""
    h = rms_norm(x, p["layer_norm.weight"], s["eps"])
    if s["gated"]:
        h = ACT[s["act"]](F.linear(h, p["DenseReluDense.wi_0.weight"])) * F.linear(h, p["DenseReluDense.wi_1.weight"])
    else:
        h = ACT[s["act"]](F.linear(h, p["DenseReluDense.wi.weight"]))
    return x + F.linear(h, p["DenseReluDense.wo.weight"])


def ln_mlp_block(x, p, s):
    """A pre-norm LayerNorm MLP with biases, x + fc2(act(fc1(LayerNorm(x)))): ViTLayer's second half
    (layernorm_after, intermediate.dense, output.dense), CLIP's and SigLIP's (layer_norm2, mlp.fc1,
    mlp.fc2), Whisper's (final_layer_norm, fc1, fc2), GPT-NeoX's (post_attention_layernorm,
    mlp.dense_h_to_4h, mlp.dense_4h_to_h; with use_parallel_residual the MLP reads the layer's input);
    without biases where the config says so (Falcon's bias: false: FalconLinear without its bias)."""
    norm, fc1, fc2 = s["names"]
    biases = s.get("biases", True)
    h = F.layer_norm(x, (x.shape[-1],), p[f"{norm}.weight"], p[f"{norm}.bias"], s["eps"])
    h = ACT[s["act"]](F.linear(h, p[f"{fc1}.weight"], p[f"{fc1}.bias"] if biases else None))
    return x + F.linear(h, p[f"{fc2}.weight"], p[f"{fc2}.bias"] if biases else None)


def post_ln_mlp_block(x, p, s):
    """A post-norm LayerNorm MLP with biases, LayerNorm(x + fc2(act(fc1(x)))): DistilBERT's
    TransformerBlock second half (ffn.lin1, ffn.lin2, output_layer_norm), MPNet's and ELECTRA's
    (BERT's intermediate.dense, output.dense, output.LayerNorm); dropout the identity."""
    norm, fc1, fc2 = s["names"]
    h = F.linear(ACT[s["act"]](F.linear(x, p[f"{fc1}.weight"], p[f"{fc1}.bias"])), p[f"{fc2}.weight"], p[f"{fc2}.bias"])
    return F.layer_norm(x + h, (x.shape[-1],), p[f"{norm}.weight"], p[f"{norm}.bias"], s["eps"])


def route(h, p, s):
    """The experts a token goes to and their weights, with Transformers' dtype steps from a float32 input:
    router logits = a float32 linear (Mixtral, Qwen-MoE and OLMoE compute them in the model's dtype, bf16
    for the BF16 checkpoints; DeepSeek upcasts input and weight to float32 as here). Returns the indices
    (T, k) in torch.topk's order (descending scores; DeepSeek's sorted=False order is unspecified), the
    weights as applied (float32 values, widened; Transformers casts Mixtral's/Qwen's to the model dtype),
    and what routing_problems needs.
      softmax: softmax(float32), topk, renormalised if renorm (Mixtral always; Qwen/OLMoE norm_topk_prob).
      sparsemixer: Phi-3.5-MoE's, two experts one at a time (route's branch has the rule), never renormalised.
      llama4: topk of the logits, sigmoid(float32) of those (Llama4Router), never renormalised.
      granite: topk of the logits, softmax(float32) of those (JetMoeTopKGating: the renormalised softmax,
        rounded otherwise; its logits in the model's dtype, its gates cast back to it, as Mixtral's).
      gpt_oss: the same from logits with the router's bias (GptOssTopKRouter).
      deepseek_v2: softmax(float32), greedy topk, x routed_scaling_factor, never renormalised.
      deepseek_v3: sigmoid, + e_score_correction_bias, groups ranked by the sum of their two best biased
        scores, all but the topk_group best groups masked with 0.0, topk of the biased scores; weights =
        the unbiased sigmoid scores, / (sum + 1e-20) if norm_topk_prob, x routed_scaling_factor."""
    bias = p[s["names"]["router_bias"]].to(torch.float32) if "router_bias" in s["names"] else None
    logits = F.linear(h.to(torch.float32), p[s["names"]["router"]].to(torch.float32), bias)
    k, info = s["k"], {}
    if s["router"] == "deepseek_v3":
        g, per = s["groups"], s["experts"] // s["groups"]

        def select(choice, fill=0.0):
            group_scores = choice.view(-1, g, per).topk(2, dim=-1)[0].sum(dim=-1)
            group_idx = torch.topk(group_scores, k=s["topk_group"], dim=-1)[1]
            group_mask = torch.zeros_like(group_scores).scatter_(1, group_idx, 1)
            score_mask = group_mask.unsqueeze(-1).expand(-1, g, per).reshape(-1, s["experts"])
            masked = choice.masked_fill(~score_mask.bool(), fill)
            return torch.topk(masked, k=k, dim=-1)[1], masked, group_scores

        scores = logits.sigmoid()
        choice = scores + p["mlp.gate.e_score_correction_bias"].to(torch.float32)
        idx, masked, group_scores = select(choice)
        w = scores.gather(1, idx)
        if s["renorm"]:
            w = w / (w.sum(dim=-1, keepdim=True) + 1e-20)
        w = w * s["scale"]
        info.update(selection=masked, group_scores=group_scores, neg_inf=select(choice, -math.inf)[0],
                    ungrouped=torch.topk(choice, k=k, dim=-1)[1], unbiased=select(scores)[0])
    elif s["router"] == "sparsemixer":  # Transformers' sparsemixer at inference: two experts, one at a time
        twice_jitter, chosen, ratios = 2 * s["jitter"], logits, []
        idx, w = [], []
        for _ in range(2):
            top, i = chosen.max(dim=-1, keepdim=True)
            factor = logits.abs().clamp(min=top)
            ratio = (top - logits) / factor
            gates = torch.softmax(chosen.masked_fill(ratio > twice_jitter, float("-inf")), dim=-1)
            idx.append(i)
            w.append(gates.gather(dim=-1, index=i))
            ratios.append(ratio.masked_fill(chosen == float("-inf"), float("inf")))  # the chosen: not a threshold
            chosen = torch.scatter(chosen, -1, i, float("-inf"))
        idx, w = torch.cat(idx, dim=-1), torch.cat(w, dim=-1)
        info.update(selection=logits, ratios=ratios)
    elif s["router"] == "llama4":  # Llama4Router: the sigmoid of the top k logits
        top, idx = torch.topk(logits, k, dim=-1)
        w = torch.sigmoid(top)
        info.update(selection=logits)
    elif s["router"] in ("granite", "gpt_oss"):  # JetMoeTopKGating, GptOssTopKRouter: softmax of the top k logits
        top, idx = torch.topk(logits, k, dim=-1)
        w = F.softmax(top, dim=-1, dtype=torch.float32)
        info.update(selection=F.softmax(logits, dim=-1, dtype=torch.float32))
    else:
        probs = F.softmax(logits, dim=-1, dtype=torch.float32)
        w, idx = torch.topk(probs, k, dim=-1)
        if s["router"] == "softmax" and s["renorm"]:
            w = w / w.sum(dim=-1, keepdim=True)
        if s["router"] == "deepseek_v2":
            w = w * s["scale"]
        info.update(selection=probs)
    return idx, w.to(torch.float64), info


def swiglu(h, gate, up, down, act):
    return F.linear(ACT[act](F.linear(h, gate)) * F.linear(h, up), down)


def gpt_oss_expert(h, p, s, j):
    """GptOssExperts' expert j: gate_up = h @ gate_up_proj[j] + gate_up_proj_bias[j], the gate and up its
    alternating columns, clamped (the gate above, the up both sides, at swiglu_limit), glu = gate sigmoid(alpha
    gate), ((up + 1) glu) @ down_proj[j] + down_proj_bias[j]."""
    names = s["names"]
    gate_up = h @ p[names["gate_up"]][j] + p[names["gate_up"] + "_bias"][j]
    gate, up = gate_up[..., ::2].clamp(max=GPT_OSS_LIMIT), gate_up[..., 1::2].clamp(-GPT_OSS_LIMIT, GPT_OSS_LIMIT)
    glu = gate * torch.sigmoid(gate * GPT_OSS_ALPHA)
    return ((up + 1) * glu) @ p[names["down"]][j] + p[names["down"] + "_bias"][j]


def expert_weights(p, s, j):
    """Expert j's (gate, up, down) weights, from the per-expert names or the stacked tensors."""
    names = s["names"]
    if "rows" in names:  # DBRX: each (E d_ff, d), viewed (E, d_ff, d) as DbrxExperts does
        gate, up, down = (p[n].view(s["experts"], s["d_expert"], s["d"])[j] for n in names["rows"])
        return gate, up, down.t()
    if "gate_up" in names and names.get("interleaved"):  # gpt-oss's: (d, 2 d_ff), gate and up alternating
        gate_up = p[names["gate_up"]][j].t()
        return gate_up[0::2], gate_up[1::2], p[names["down"]][j].t()
    if "gate_up" in names and names.get("in_out"):  # Llama 4's, as bmm reads them: (d, 2 d_ff) and (d_ff, d)
        gate, up = p[names["gate_up"]][j].t().chunk(2, dim=0)
        return gate, up, p[names["down"]][j].t()
    if "gate_up" in names:
        gate, up = p[names["gate_up"]][j].chunk(2, dim=0)
        return gate, up, p[names["down"]][j]
    e = names["expert"].format(j)
    return tuple(p[f"{e}{proj}.weight"] for proj in names["proj"])


def moe_norm(x, p, s):
    """post_attention_layernorm (Jamba's pre_ff_layernorm): RMSNorm, or nn.LayerNorm with its bias
    (PhimoeDecoderLayer, eps rms_norm_eps)."""
    n = s["ff_norm"]
    if s["norm"] == "layer":
        return F.layer_norm(x, (x.shape[-1],), p[f"{n}.weight"], p[f"{n}.bias"], s["eps"])
    if s["norm"] == "layer_nobias":  # DBRX's nn.LayerNorm(d_model, bias=False)
        return F.layer_norm(x, (x.shape[-1],), p[f"{n}.weight"], None, s["eps"])
    return rms_norm(x, p[f"{n}.weight"], s["eps"])


def granite_mlp(h, p, s):
    """GraniteMoeSharedMLP: gate, up = input_linear(h).chunk(2, -1); output_linear(act(gate) * up)."""
    gate, up = F.linear(h, p[GRANITE_MLP + "input_linear.weight"]).chunk(2, dim=-1)
    return F.linear(ACT[s["act"]](gate) * up, p[GRANITE_MLP + "output_linear.weight"])


def moe_block(x, p, s, i):
    """The MoE decoder layer's second half, residual + moe(post_attention_layernorm(x)): the routed
    experts' outputs times their weights (index_add_ as in Transformers), + the shared expert
    (Qwen2-MoE: x sigmoid(shared_expert_gate(h)); DeepSeek, Llama 4: ungated), times residual_multiplier
    (Granite). Dense layers: a SwiGLU MLP (Granite 4 without experts: the shared MLP).
    Returns (Y, experts, weights); experts and weights are None for a dense layer."""
    h = moe_norm(x, p, s)
    if not s["sparse"][i] and s["granite"]:
        return x + granite_mlp(h, p, s) * s["residual_multiplier"], None, None
    if not s["sparse"][i]:
        m = s["mlp"]
        return x + swiglu(h, p[f"{m}gate_proj.weight"], p[f"{m}up_proj.weight"], p[f"{m}down_proj.weight"],
                          s["act"]), None, None
    idx, w, _ = route(h, p, s)
    out = torch.zeros_like(h)
    for j in range(s["experts"]):
        token, slot = torch.where(idx == j)
        if len(token) and s["names"].get("interleaved"):  # gpt-oss: biases, the clamped SwiGLU
            out.index_add_(0, token, gpt_oss_expert(h[token], p, s, j) * w[token, slot, None])
        elif len(token) and s["weigh_input"]:  # Llama4TextMoe: routed_in = h * score, each expert's sum unweighted
            out.index_add_(0, token, swiglu(h[token] * w[token, slot, None], *expert_weights(p, s, j), s["act"]))
        elif len(token):
            out.index_add_(0, token, swiglu(h[token], *expert_weights(p, s, j), s["act"]) * w[token, slot, None])
    if s["shared"] and s["granite"]:
        out = out + granite_mlp(h, p, s)
    elif s["shared"]:
        e = s["shared_name"]
        shared = swiglu(h, p[f"{e}gate_proj.weight"], p[f"{e}up_proj.weight"], p[f"{e}down_proj.weight"], s["act"])
        if s["shared_gate"]:
            shared = torch.sigmoid(F.linear(h, p["mlp.shared_expert_gate.weight"])) * shared
        out = out + shared
    if s["granite"]:
        out = out * s["residual_multiplier"]
    return x + out, idx, w


def routing_problems(h, p, s):
    """Why this draw is no good for a routing fixture, or None: near-ties (relative gap <= NEAR_TIE between
    the k-th and (k+1)-th selection scores, and for DeepSeek-V3 between the topk_group-th and next group
    score), an expert with fewer than two tokens; for DeepSeek-V3 also: a k-th score near 0 (where
    Transformers' 0.0 mask fill and the reference's -inf would differ), group masking that changes no
    token's experts, or a bias that changes none."""
    idx, _, info = route(h, p, s)
    k = s["k"]

    def gap_ok(scores, n):
        top = torch.topk(scores, n + 1, dim=-1)[0].to(torch.float64)
        return bool(((top[:, n - 1] - top[:, n]) > NEAR_TIE * top[:, n - 1].abs()).all())

    if not gap_ok(info["selection"], k):
        return "near-tie between the k-th and (k+1)-th expert"
    if s["router"] == "sparsemixer":
        twice_jitter = 2 * s["jitter"]
        for ratio in info["ratios"]:
            finite = ratio[torch.isfinite(ratio)].to(torch.float64)
            if bool(((finite - twice_jitter).abs() <= NEAR_TIE * twice_jitter).any()):
                return "a logit near the sparsemixer's threshold"
        kept = [(r <= twice_jitter).sum(dim=-1) for r in info["ratios"]]  # each step's experts in its softmax
        if not all(bool((n > 1).any()) and bool((n == 1).any()) for n in kept):
            return "a sparsemixer step that keeps one expert for every token, or several for every token"
        # Each step keeps a logit a threshold of jitter would mask, and masks one 4 jitter would keep:
        # a factor of two either way in the threshold changes the routing.
        for r in info["ratios"]:
            if not (bool(((r > s["jitter"]) & (r <= twice_jitter)).any()) and
                    bool(((r > twice_jitter) & (r <= 2 * twice_jitter)).any())):
                return "a sparsemixer step whose routing a threshold of half or twice would not change"
    counts = torch.bincount(idx.flatten(), minlength=s["experts"])
    if counts.min() < 2:
        return f"an expert with {int(counts.min())} tokens"
    if s["names"].get("interleaved"):  # gpt-oss: each clamp acts on some routed token
        names, above, beyond = s["names"], False, False
        for j in range(s["experts"]):
            token = torch.where(idx == j)[0]
            gate_up = h[token] @ p[names["gate_up"]][j] + p[names["gate_up"] + "_bias"][j]
            above = above or bool((gate_up[:, ::2] > GPT_OSS_LIMIT).any())
            beyond = beyond or bool((gate_up[:, 1::2].abs() > GPT_OSS_LIMIT).any())
        if not (above and beyond):
            return "a clamp that acts on no routed token"
    if s["router"] == "deepseek_v3":
        if not gap_ok(info["group_scores"], s["topk_group"]):
            return "near-tie between groups"
        if not bool((torch.topk(info["selection"], k, dim=-1)[0][:, -1] > NEAR_TIE).all()):
            return "a k-th score near 0"
        same = lambda a, b: (a.sort(dim=-1)[0] == b.sort(dim=-1)[0]).all(dim=-1)
        if not bool(same(idx, info["neg_inf"]).all()):
            return "0.0 and -inf masking disagree"
        if bool(same(idx, info["ungrouped"]).all()):
            return "group masking changes no token's experts"
        if bool(same(idx, info["unbiased"]).all()):
            return "the bias changes no token's experts"
    return None


def ln_gated_block(x, p, s):
    """A LayerNorm before a gated MLP: ModernBertEncoderLayer's second half, x + mlp(mlp_norm(x)), with
    ModernBertMLP's input, gate = Wi(h).chunk(2, -1); Wo(act(input) * gate) and nn.LayerNorm(bias=False);
    StableLmDecoderLayer's, x + mlp(post_attention_layernorm(x)) (nn.LayerNorm with its bias; with
    use_parallel_residual input_layernorm, the attention's output added by the caller); CohereDecoderLayer's
    MLP part, x + mlp(input_layernorm(x)) (CohereLayerNorm: the mean out, no bias); OlmoDecoderLayer's,
    x + mlp(post_attention_layernorm(x)) (OlmoLayerNorm: F.layer_norm without weight or bias, eps 1e-5)."""
    norm, (gate, up, down) = s["norm"], s["names"]
    weight = p[f"{norm}.weight"] if norm else None
    b = p[f"{norm}.bias"] if norm and s["norm_bias"] else None
    h = F.layer_norm(x, (x.shape[-1],), weight, b, s["eps"])
    if up is None:  # one fused matrix, the activated half first
        g, u = F.linear(h, p[f"{gate}.weight"]).chunk(2, dim=-1)
    else:
        g, u = F.linear(h, p[f"{gate}.weight"]), F.linear(h, p[f"{up}.weight"])
    return x + F.linear(ACT[s["act"]](g) * u, p[f"{down}.weight"])


def granite_block(x, p, s):
    """GraniteDecoderLayer's second half: residual + mlp(post_attention_layernorm(x)) * residual_multiplier
    (GraniteMLP is LlamaMLP, GraniteRMSNorm LlamaRMSNorm)."""
    return x + llama_mlp(rms_norm(x, p["post_attention_layernorm.weight"], s["eps"]), p, s["act"]) * s["scale"]


def llama_mlp(h, p, act):
    return F.linear(ACT[act](F.linear(h, p["mlp.gate_proj.weight"])) * F.linear(h, p["mlp.up_proj.weight"]),
                    p["mlp.down_proj.weight"])


def glm4_block(x, p, s):
    """Glm4DecoderLayer's second half: residual + post_mlp_layernorm(mlp(post_attention_layernorm(x))); Glm4MLP
    is Phi3MLP (gate, up = gate_up_proj(h).chunk(2, -1); down(up * act(gate))), Glm4RMSNorm LlamaRMSNorm."""
    h = rms_norm(x, p["post_attention_layernorm.weight"], s["eps"])
    gate, up = F.linear(h, p["mlp.gate_up_proj.weight"]).chunk(2, dim=-1)
    h = F.linear(up * ACT[s["act"]](gate), p["mlp.down_proj.weight"])
    return x + rms_norm(h, p["post_mlp_layernorm.weight"], s["eps"])


def olmo2_block(x, p, s):
    """Olmo2DecoderLayer's second half: x + post_feedforward_layernorm(mlp(x)), no norm before the MLP;
    Olmo2RMSNorm: weight * (x * rsqrt(mean(x^2) + eps))."""
    h = F.linear(ACT[s["act"]](F.linear(x, p["mlp.gate_proj.weight"])) * F.linear(x, p["mlp.up_proj.weight"]),
                 p["mlp.down_proj.weight"])
    return x + rms_norm(h, p["post_feedforward_layernorm.weight"], s["eps"])


def gemma_mlp_block(x, p, s):
    """GemmaDecoderLayer's second half: LLaMA's, GemmaRMSNorm multiplying by (1 + weight)."""
    return gated_block(x, p, s["act"], s["eps"], gemma=True)


BLOCKS = {"gemma2": gemma2_block, "gated": llama_mlp_block, "phi3": phi3_block, "t5": t5_block,
          "ln_mlp": ln_mlp_block, "post_ln_mlp": post_ln_mlp_block, "ln_gated": ln_gated_block,
          "olmo2": olmo2_block, "granite": granite_block, "glm4": glm4_block, "gemma": gemma_mlp_block}


def stack(name, layer, layers, d, kind, **settings):
    return dict(name=name, layer=layer, layers=layers, d=d, kind=kind, settings=dict(settings, d=d))


def new_models():
    """The checkpoints of the second round, in the order their seeds follow the first ten's."""
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    tanh, v = "gelu_pytorch_tanh", "4.44.2"
    specs = {}

    # -- Gemma 2, Gemma 3 (text; multimodal in its two name layouts, one sharded)
    specs["gemma2"] = dict(
        dtype=bf16, tensors=lambda: gemma_decoder(Tensors(), "model.", 2, 24, 48, 4, 2, 8, qk_norm=False),
        config={"architectures": ["Gemma2ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                "attn_logit_softcapping": 50.0, "bos_token_id": 2, "cache_implementation": "hybrid",
                "eos_token_id": 1, "final_logit_softcapping": 30.0, "head_dim": 8, "hidden_act": tanh,
                "hidden_activation": tanh, "hidden_size": 24, "initializer_range": 0.02, "intermediate_size": 48,
                "max_position_embeddings": 128, "model_type": "gemma2", "num_attention_heads": 4,
                "num_hidden_layers": 2, "num_key_value_heads": 2, "pad_token_id": 0, "query_pre_attn_scalar": 8,
                "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "sliding_window": 64, "torch_dtype": "bfloat16",
                "transformers_version": v, "use_cache": True, "vocab_size": VOCAB},
        stacks=[stack(None, "model.layers.{}.", 2, 24, "gemma2", d_ff=48, eps=1e-6, act=tanh)])
    specs["gemma3_text"] = dict(
        dtype=f32, tensors=lambda: gemma_decoder(Tensors(), "model.", 2, 24, 40, 4, 1, 8, qk_norm=True),
        config={"architectures": ["Gemma3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                "attn_logit_softcapping": None, "bos_token_id": 2, "cache_implementation": "hybrid",
                "eos_token_id": [1, 96], "final_logit_softcapping": None, "head_dim": 8,
                "hidden_activation": tanh, "hidden_size": 24, "initializer_range": 0.02,
                "intermediate_size": 40, "max_position_embeddings": 128, "model_type": "gemma3_text",
                "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 1, "pad_token_id": 0,
                "query_pre_attn_scalar": 8, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000.0,
                "rope_scaling": None, "rope_theta": 1000000.0, "sliding_window": 64, "sliding_window_pattern": 6,
                "torch_dtype": "float32", "transformers_version": "4.50.0.dev0", "use_cache": True,
                "vocab_size": VOCAB},
        stacks=[stack(None, "model.layers.{}.", 2, 24, "gemma2", d_ff=40, eps=1e-6, act=tanh)])

    def gemma3(names, text, vision, shard_cut=None):
        # Gemma 3's text_config and vision_config as the Hub's (diffs against the sub-configs' defaults):
        # no rms_norm_eps or hidden_activation (1e-6, gelu_pytorch_tanh), no hidden_act or
        # layer_norm_eps for SigLIP (gelu_pytorch_tanh, 1e-6).
        config = {"architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 97,
                  "eoi_token_index": 98, "eos_token_id": [1, 96], "image_token_index": 99,
                  "initializer_range": 0.02, "mm_tokens_per_image": 4, "model_type": "gemma3",
                  "text_config": {"head_dim": 8, "hidden_size": text["d"], "intermediate_size": text["d_ff"],
                                  "model_type": "gemma3_text", "num_attention_heads": 4,
                                  "num_hidden_layers": text["layers"], "num_key_value_heads": 1,
                                  "query_pre_attn_scalar": 8, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                                  "sliding_window": 64, "vocab_size": VOCAB},
                  "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
                  "vision_config": {"hidden_size": vision["d"], "image_size": 8,
                                    "intermediate_size": vision["d_ff"], "model_type": "siglip_vision_model",
                                    "num_attention_heads": 2, "num_hidden_layers": vision["layers"],
                                    "patch_size": 4, "vision_use_head": False}}
        return dict(
            dtype=bf16, shard_cut=shard_cut, config=config,
            tensors=lambda: gemma3_tensors(names, text, dict(vision, patch=4, positions=4)),
            stacks=[stack("text", names["text"] + "layers.{}.", text["layers"], text["d"], "gemma2",
                          d_ff=text["d_ff"], eps=1e-6, act=tanh),
                    stack("vision", names["vision"] + "encoder.layers.{}.", vision["layers"], vision["d"], "ln_mlp",
                          d_ff=vision["d_ff"], eps=1e-6, act=tanh, names=("layer_norm2", "mlp.fc1", "mlp.fc2"))])

    specs["gemma3"] = gemma3(
        dict(text="language_model.model.", vision="vision_tower.vision_model.", projector="multi_modal_projector."),
        dict(d=24, d_ff=48, layers=2), dict(d=16, d_ff=40, layers=2))
    specs["gemma3_new_names"] = gemma3(
        dict(text="model.language_model.", vision="model.vision_tower.vision_model.",
             projector="model.multi_modal_projector."),
        dict(d=24, d_ff=40, layers=2), dict(d=16, d_ff=24, layers=3),
        shard_cut="model.language_model.layers.1.mlp.gate_proj.weight")

    # -- Phi-3 (fused gate_up_proj), Qwen3 (q_norm/k_norm, tied embeddings)
    specs["phi3"] = dict(
        dtype=bf16, tensors=lambda: phi3_tensors(24, 40, 2, 4),
        config={"architectures": ["Phi3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                "bos_token_id": 1, "embd_pdrop": 0.0, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 24,
                "initializer_range": 0.02, "intermediate_size": 40, "max_position_embeddings": 128,
                "model_type": "phi3", "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 4,
                "original_max_position_embeddings": 128, "pad_token_id": 0, "partial_rotary_factor": 1.0,
                "resid_pdrop": 0.0, "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 10000.0,
                "sliding_window": 127, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
                "transformers_version": v, "use_cache": True, "vocab_size": VOCAB},
        stacks=[stack(None, "model.layers.{}.", 2, 24, "phi3", d_ff=40, eps=1e-5, act="silu")])
    specs["qwen3"] = dict(
        dtype=bf16, tensors=lambda: qwen3_tensors(24, 56, 2, 4, 2, 8),
        config={"architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                "bos_token_id": VOCAB - 1, "eos_token_id": VOCAB - 1, "head_dim": 8, "hidden_act": "silu",
                "hidden_size": 24, "initializer_range": 0.02, "intermediate_size": 56,
                "max_position_embeddings": 128, "max_window_layers": 2, "model_type": "qwen3",
                "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
                "rope_scaling": None, "rope_theta": 1000000.0, "sliding_window": None, "tie_word_embeddings": True,
                "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": True,
                "use_sliding_window": False, "vocab_size": VOCAB},
        stacks=[stack(None, "model.layers.{}.", 2, 24, "gated", d_ff=56, eps=1e-6, act="silu")])

    # -- T5 v1.1, mT5, UMT5 (gated-gelu: the tanh GELU), and the original T5 (relu), to be refused
    def t5(model_type, dtype, d, d_ff, layers, config, gated=True, umt5=False, lm_head=True, refuse=None):
        config = dict({"d_ff": d_ff, "d_kv": 4, "d_model": d, "decoder_start_token_id": 0, "dropout_rate": 0.1,
                       "eos_token_id": 1, "initializer_factor": 1.0, "is_encoder_decoder": True,
                       "layer_norm_epsilon": 1e-06, "model_type": model_type, "num_heads": 4,
                       "num_layers": layers["encoder"], "output_past": True, "pad_token_id": 0,
                       "relative_attention_num_buckets": 32, "vocab_size": VOCAB}, **config)
        act = "gelu_new" if gated else "relu"
        return dict(dtype=dtype, refuse=refuse, config=config,
                    tensors=lambda: t5_tensors(d, d_ff, 4, 4, layers, gated, umt5, lm_head),
                    stacks=[stack("encoder", "encoder.block.{}.layer.1.", layers["encoder"], d, "t5",
                                  d_ff=d_ff, eps=1e-6, act=act, gated=gated),
                            stack("decoder", "decoder.block.{}.layer.2.", layers["decoder"], d, "t5",
                                  d_ff=d_ff, eps=1e-6, act=act, gated=gated)])

    # t5: google/t5-v1_1-small's keys (no dense_act_fn: the loader parses feed_forward_proj)
    specs["t5"] = t5("t5", f32, 16, 40, {"encoder": 3, "decoder": 2}, {
        "architectures": ["T5ForConditionalGeneration"], "feed_forward_proj": "gated-gelu",
        "num_decoder_layers": 2, "tie_word_embeddings": False})
    specs["mt5"] = t5("mt5", bf16, 16, 24, {"encoder": 2, "decoder": 2}, {
        "architectures": ["MT5ForConditionalGeneration"], "feed_forward_proj": "gated-gelu",
        "num_decoder_layers": 2, "tie_word_embeddings": False, "tokenizer_class": "T5Tokenizer",
        "torch_dtype": "bfloat16", "transformers_version": v})
    # umt5: google/umt5-small's keys, with the derived dense_act_fn and is_gated_act to_dict writes
    specs["umt5"] = t5("umt5", f32, 16, 32, {"encoder": 2, "decoder": 2}, {
        "architectures": ["UMT5ForConditionalGeneration"], "dense_act_fn": "gelu_new",
        "feed_forward_proj": "gated-gelu", "is_gated_act": True, "num_decoder_layers": 2,
        "relative_attention_max_distance": 128, "scalable_attention": True, "tie_word_embeddings": False,
        "tokenizer_class": "T5Tokenizer", "torch_dtype": "float32", "transformers_version": "4.31.0.dev0",
        "use_cache": True}, umt5=True)
    # t5_relu: t5-small's keys: no feed_forward_proj (T5Config's default, "relu"), no num_decoder_layers
    # (= num_layers), tied embeddings (no lm_head.weight). No reference: a loader must refuse ReLU.
    specs["t5_relu"] = t5("t5", f32, 16, 32, {"encoder": 2, "decoder": 2}, {
        "architectures": ["T5ForConditionalGeneration"], "n_positions": 512}, gated=False, lm_head=False,
        refuse="ReLU (feed_forward_proj missing: T5Config's default \"relu\")")

    # -- ViT, CLIP, Whisper, GPT-NeoX: pre-norm LayerNorm MLPs with biases
    specs["vit"] = dict(
        dtype=f32, tensors=lambda: vit_tensors(24, 48, 2, 4, 5, 2),
        config={"architectures": ["ViTForImageClassification"], "attention_probs_dropout_prob": 0.0,
                "encoder_stride": 4, "hidden_act": "gelu", "hidden_dropout_prob": 0.0, "hidden_size": 24,
                "id2label": {"0": "LABEL_0", "1": "LABEL_1"}, "image_size": 8, "initializer_range": 0.02,
                "intermediate_size": 48, "label2id": {"LABEL_0": 0, "LABEL_1": 1}, "layer_norm_eps": 1e-12,
                "model_type": "vit", "num_attention_heads": 4, "num_channels": 3, "num_hidden_layers": 2,
                "patch_size": 4, "qkv_bias": True, "torch_dtype": "float32", "transformers_version": v},
        stacks=[stack(None, "vit.encoder.layer.{}.", 2, 24, "ln_mlp", d_ff=48, eps=1e-12, act="gelu",
                      names=("layernorm_after", "intermediate.dense", "output.dense"))])
    clip_text, clip_vision = dict(d=16, d_ff=40, layers=2), dict(d=24, d_ff=56, layers=2, image=8)
    specs["clip"] = dict(
        dtype=f16, tensors=lambda: clip_tensors(clip_text, clip_vision, 12, 8, 4),
        # text_config names hidden_act and layer_norm_eps; vision_config leaves them to CLIPVisionConfig's
        # defaults (quick_gelu, 1e-5)
        config={"architectures": ["CLIPModel"], "initializer_factor": 1.0, "logit_scale_init_value": 2.6592,
                "model_type": "clip", "projection_dim": 12,
                "text_config": {"bos_token_id": 0, "eos_token_id": 2, "hidden_act": "quick_gelu", "hidden_size": 16,
                                "intermediate_size": 40, "layer_norm_eps": 1e-05, "max_position_embeddings": 8,
                                "model_type": "clip_text_model", "num_attention_heads": 2, "num_hidden_layers": 2,
                                "projection_dim": 12, "vocab_size": VOCAB},
                "torch_dtype": "float16", "transformers_version": v,
                "vision_config": {"hidden_size": 24, "image_size": 8, "intermediate_size": 56,
                                  "model_type": "clip_vision_model", "num_attention_heads": 4,
                                  "num_hidden_layers": 2, "patch_size": 4, "projection_dim": 12}},
        stacks=[stack("text", "text_model.encoder.layers.{}.", 2, 16, "ln_mlp", d_ff=40, eps=1e-5,
                      act="quick_gelu", names=("layer_norm2", "mlp.fc1", "mlp.fc2")),
                stack("vision", "vision_model.encoder.layers.{}.", 2, 24, "ln_mlp", d_ff=56, eps=1e-5,
                      act="quick_gelu", names=("layer_norm2", "mlp.fc1", "mlp.fc2"))])
    specs["whisper"] = dict(
        dtype=f16, tensors=lambda: whisper_tensors(16, {"encoder": (2, 40), "decoder": (3, 24)}, 4, 6, 8),
        config={"activation_dropout": 0.0, "activation_function": "gelu", "apply_spec_augment": False,
                "architectures": ["WhisperForConditionalGeneration"], "attention_dropout": 0.0,
                "begin_suppress_tokens": [95, 98], "bos_token_id": 98, "classifier_proj_size": 256,
                "d_model": 16, "decoder_attention_heads": 2, "decoder_ffn_dim": 24, "decoder_layerdrop": 0.0,
                "decoder_layers": 3, "decoder_start_token_id": 97, "dropout": 0.0, "encoder_attention_heads": 2,
                "encoder_ffn_dim": 40, "encoder_layerdrop": 0.0, "encoder_layers": 2, "eos_token_id": 98,
                "init_std": 0.02, "is_encoder_decoder": True, "mask_feature_length": 10, "mask_feature_min_masks": 0,
                "mask_feature_prob": 0.0, "mask_time_length": 10, "mask_time_min_masks": 2, "mask_time_prob": 0.05,
                "max_length": 8, "max_source_positions": 6, "max_target_positions": 8, "median_filter_width": 7,
                "model_type": "whisper", "num_hidden_layers": 2, "num_mel_bins": 4, "pad_token_id": 98,
                "scale_embedding": False, "torch_dtype": "float16", "transformers_version": v, "use_cache": True,
                "use_weighted_layer_sum": False, "vocab_size": VOCAB},
        stacks=[stack("encoder", "model.encoder.layers.{}.", 2, 16, "ln_mlp", d_ff=40, eps=1e-5, act="gelu",
                      names=("final_layer_norm", "fc1", "fc2")),
                stack("decoder", "model.decoder.layers.{}.", 3, 16, "ln_mlp", d_ff=24, eps=1e-5, act="gelu",
                      names=("final_layer_norm", "fc1", "fc2"))])
    specs["gpt_neox"] = dict(
        dtype=f16, tensors=lambda: gpt_neox_tensors(24, 96, 2),
        config={"architectures": ["GPTNeoXForCausalLM"], "attention_bias": True, "attention_dropout": 0.0,
                "bos_token_id": 0, "classifier_dropout": 0.1, "eos_token_id": 0, "hidden_act": "gelu",
                "hidden_dropout": 0.0, "hidden_size": 24, "initializer_range": 0.02, "intermediate_size": 96,
                "layer_norm_eps": 1e-05, "max_position_embeddings": 128, "model_type": "gpt_neox",
                "num_attention_heads": 4, "num_hidden_layers": 2, "rope_scaling": None, "rotary_emb_base": 10000,
                "rotary_pct": 0.25, "tie_word_embeddings": False, "torch_dtype": "float16",
                "transformers_version": v, "use_cache": True, "use_parallel_residual": True, "vocab_size": VOCAB},
        stacks=[stack(None, "gpt_neox.layers.{}.", 2, 24, "ln_mlp", d_ff=96, eps=1e-5, act="gelu",
                      names=("post_attention_layernorm", "mlp.dense_h_to_4h", "mlp.dense_4h_to_h"))])

    # -- mixtures of experts (T = 17 tokens)
    def moe(dtype, s, config, attention, mtp=False, lm_head=True, lm="model.", around=None, **extra):
        return dict(dtype=dtype, tokens=T_MOE, config=config,
                    tensors=lambda: moe_tensors(s, attention, lm_head=lm_head, mtp=mtp, lm=lm, around=around),
                    stacks=[dict(name=None, layer=lm + "layers.{}.", layers=s["layers"], d=s["d"], kind="moe",
                                 settings=s)], **extra)

    def llama_attention(heads, kv_heads, head_dim, d, **kw):
        return lambda t, name: t.attention(name, d, heads, kv_heads, head_dim, **kw)

    def mixtral_config(dtype, d, d_ff, layers, version=v):
        c = {"architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1,
             "eos_token_id": 2, "hidden_act": "silu", "hidden_size": d, "initializer_range": 0.02,
             "intermediate_size": d_ff, "max_position_embeddings": 128, "model_type": "mixtral",
             "num_attention_heads": 4, "num_experts_per_tok": 2, "num_hidden_layers": layers,
             "num_key_value_heads": 2, "num_local_experts": 8, "output_router_logits": False,
             "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.02,
             "router_jitter_noise": 0.0, "sliding_window": None, "tie_word_embeddings": False,
             "torch_dtype": TORCH_DTYPE[dtype], "transformers_version": version, "use_cache": True,
             "vocab_size": VOCAB}
        if version.startswith("5"):  # Transformers 5 writes dtype and rope_parameters
            c["dtype"] = c.pop("torch_dtype")
            c["rope_parameters"] = {"rope_theta": c.pop("rope_theta"), "rope_type": "default"}
        return c

    s = moe_settings(2, 24, 8, 2, 16, names=MIXTRAL_NAMES, eps=1e-5)
    specs["mixtral"] = moe(bf16, s, mixtral_config(bf16, 24, 16, 2), llama_attention(4, 2, 6, 24))
    s = moe_settings(2, 16, 8, 2, 24, names=MIXTRAL_NAMES, eps=1e-5)
    specs["mixtral_f32"] = moe(f32, s, mixtral_config(f32, 16, 24, 2), llama_attention(4, 2, 4, 16))

    s = moe_settings(3, 24, 8, 2, 12, renorm=False, d_dense=32, sparse=[True, False, True], shared=20,
                     shared_gate=True)
    specs["qwen2_moe"] = moe(
        bf16, s, {"architectures": ["Qwen2MoeForCausalLM"], "attention_dropout": 0.0, "bos_token_id": VOCAB - 1,
                  "decoder_sparse_step": 1, "eos_token_id": VOCAB - 1, "hidden_act": "silu", "hidden_size": 24,
                  "initializer_range": 0.02, "intermediate_size": 32, "max_position_embeddings": 128,
                  "max_window_layers": 3, "mlp_only_layers": [1], "model_type": "qwen2_moe",
                  "moe_intermediate_size": 12, "norm_topk_prob": False, "num_attention_heads": 4,
                  "num_experts": 8, "num_experts_per_tok": 2, "num_hidden_layers": 3, "num_key_value_heads": 4,
                  "output_router_logits": False, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
                  "router_aux_loss_coef": 0.001, "shared_expert_intermediate_size": 20, "sliding_window": 128,
                  "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": v,
                  "use_cache": True, "use_sliding_window": False, "vocab_size": VOCAB},
        llama_attention(4, 4, 6, 24, qkv_bias=True),
        shard_cut="model.layers.2.mlp.experts.3.up_proj.weight")
    s = moe_settings(4, 16, 8, 2, 12, renorm=True, d_dense=32, sparse=[False, True, False, True])
    specs["qwen3_moe"] = moe(
        f32, s, {"architectures": ["Qwen3MoeForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                 "bos_token_id": VOCAB - 1, "decoder_sparse_step": 2, "eos_token_id": VOCAB - 1, "head_dim": 8,
                 "hidden_act": "silu", "hidden_size": 16, "initializer_range": 0.02, "intermediate_size": 32,
                 "max_position_embeddings": 128, "max_window_layers": 4, "mlp_only_layers": [],
                 "model_type": "qwen3_moe", "moe_intermediate_size": 12, "norm_topk_prob": True,
                 "num_attention_heads": 4, "num_experts": 8, "num_experts_per_tok": 2, "num_hidden_layers": 4,
                 "num_key_value_heads": 2, "output_router_logits": False, "rms_norm_eps": 1e-06,
                 "rope_scaling": None, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001,
                 "sliding_window": None, "tie_word_embeddings": False, "torch_dtype": "float32",
                 "transformers_version": "4.51.0", "use_cache": True, "use_sliding_window": False,
                 "vocab_size": VOCAB},
        llama_attention(4, 2, 8, 16, qk_norm="head"))
    s = moe_settings(2, 24, 8, 2, 16, renorm=False, eps=1e-5)
    specs["olmoe"] = moe(
        bf16, s, {"architectures": ["OlmoeForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                  "clip_qkv": None, "eos_token_id": VOCAB - 1, "hidden_act": "silu", "hidden_size": 24,
                  "initializer_range": 0.02, "intermediate_size": 16, "max_position_embeddings": 128,
                  "model_type": "olmoe", "norm_topk_prob": False, "num_attention_heads": 4, "num_experts": 8,
                  "num_experts_per_tok": 2, "num_hidden_layers": 2, "num_key_value_heads": 4,
                  "output_router_logits": False, "pad_token_id": 1, "rms_norm_eps": 1e-05, "rope_scaling": None,
                  "rope_theta": 10000.0, "router_aux_loss_coef": 0.01, "tie_word_embeddings": False,
                  "torch_dtype": "bfloat16", "transformers_version": v, "use_cache": True, "vocab_size": VOCAB},
        llama_attention(4, 4, 6, 24, qk_norm="full"))

    def deepseek_config(version, d, layers, d_dense, d_expert, k, extra):
        c = {"architectures": [f"DeepseekV{version}ForCausalLM"], "attention_bias": False,
             "attention_dropout": 0.0, "bos_token_id": 0, "eos_token_id": 1, "first_k_dense_replace": 1,
             "hidden_act": "silu", "hidden_size": d, "initializer_range": 0.02, "intermediate_size": d_dense,
             "kv_lora_rank": 8, "max_position_embeddings": 128, "model_type": f"deepseek_v{version}",
             "moe_intermediate_size": d_expert, "moe_layer_freq": 1, "n_routed_experts": 8,
             "num_attention_heads": 2, "num_experts_per_tok": k, "num_hidden_layers": layers,
             "num_key_value_heads": 2, "pretraining_tp": 1, "qk_nope_head_dim": 4, "qk_rope_head_dim": 4,
             "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 10000, "tie_word_embeddings": False,
             "torch_dtype": "bfloat16", "use_cache": True, "v_head_dim": 4, "vocab_size": VOCAB}
        c.update(extra)
        return c

    s = moe_settings(3, 24, 8, 2, 8, router="deepseek_v2", renorm=False, d_dense=40,
                     sparse=[False, True, True], shared=16, shared_name="mlp.shared_experts.", scale=1.5)
    specs["deepseek_v2"] = moe(
        bf16, s, deepseek_config(2, 24, 3, 40, 8, 2, {
            "aux_loss_alpha": 0.001, "n_group": 1, "n_shared_experts": 2, "norm_topk_prob": False,
            "q_lora_rank": None, "routed_scaling_factor": 1.5, "scoring_func": "softmax", "seq_aux": True,
            "topk_group": 1, "topk_method": "greedy", "transformers_version": "4.33.1"}),
        lambda t, name: t.mla(name, 24, 2, None, 8, 4, 4, 4))
    v3_extra = {"ep_size": 1, "n_group": 4, "n_shared_experts": 1, "norm_topk_prob": True,
                "num_nextn_predict_layers": 1, "q_lora_rank": 8, "routed_scaling_factor": 2.5,
                "scoring_func": "sigmoid", "topk_group": 2, "topk_method": "noaux_tc",
                "transformers_version": "4.46.3"}
    s = moe_settings(3, 24, 8, 3, 8, router="deepseek_v3", renorm=True, d_dense=40, sparse=[False, True, True],
                     shared=8, shared_name="mlp.shared_experts.", scale=2.5, groups=4, topk_group=2,
                     bias_range=0.15)
    specs["deepseek_v3"] = moe(
        bf16, s, deepseek_config(3, 24, 3, 40, 8, 3, v3_extra),
        lambda t, name: t.mla(name, 24, 2, 8, 8, 4, 4, 4), mtp=True,
        keep=lambda n: n.endswith("e_score_correction_bias"))

    s = moe_settings(2, 16, 8, 2, 12, names=STACKED_NAMES, eps=1e-5)
    specs["mixtral_stacked"] = moe(f32, s, mixtral_config(f32, 16, 12, 2, version="5.0.0"),
                                   llama_attention(4, 2, 4, 16))

    # DeepSeek-V3 as released: F8_E4M3 weights with float32 weight_scale_inv per block. weight_block_size
    # [8, 8] here (128 x 128 in the release) so that the tiny matrices have several blocks, partial ones
    # included (d_model 20, dense d_ff 36, expert d_ff 12).
    def deepseek_v3_fp8(block):
        s = moe_settings(2, 20, 8, 2, 12, router="deepseek_v3", renorm=True, d_dense=36, sparse=[False, True],
                         shared=12, shared_name="mlp.shared_experts.", scale=2.5, groups=4, topk_group=2,
                         bias_range=0.15)
        return moe(bf16, s, deepseek_config(3, 20, 2, 36, 12, 2, dict(v3_extra, quantization_config={
                       "activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                       "weight_block_size": list(block)})),
                   lambda t, name: t.mla(name, 20, 2, 8, 8, 4, 4, 4),
                   keep=lambda n: n.endswith("e_score_correction_bias"), fp8=block)

    specs["deepseek_v3_fp8"] = deepseek_v3_fp8((8, 8))

    # -- the third round: Phi-1/1.5/2 and BERT's block under other names (seeds after the above)
    specs["phi"] = dict(
        dtype=f16, tensors=lambda: phi_tensors(24, 96, 2),
        config={"architectures": ["PhiForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 50256,
                "embd_pdrop": 0.0, "eos_token_id": 50256, "hidden_act": "gelu_new", "hidden_size": 24,
                "initializer_range": 0.02, "intermediate_size": 96, "layer_norm_eps": 1e-05,
                "max_position_embeddings": 128, "model_type": "phi", "num_attention_heads": 4,
                "num_hidden_layers": 2, "num_key_value_heads": 4, "partial_rotary_factor": 0.4,
                "qk_layernorm": False, "resid_pdrop": 0.1, "rope_scaling": None, "rope_theta": 10000.0,
                "tie_word_embeddings": False, "torch_dtype": "float16", "transformers_version": "4.37.0",
                "use_cache": True, "vocab_size": VOCAB},
        stacks=[stack(None, "model.layers.{}.", 2, 24, "ln_mlp", d_ff=96, eps=1e-5, act="gelu_new",
                      names=("input_layernorm", "mlp.fc1", "mlp.fc2"))])
    # distilbert-base-uncased's keys: no layer_norm_eps (1e-12 in DistilBERT's code), dim / hidden_dim /
    # n_layers / activation.
    specs["distilbert"] = dict(
        dtype=f32, tensors=lambda: distilbert_tensors(24, 96, 3),
        config={"activation": "gelu", "architectures": ["DistilBertForMaskedLM"], "attention_dropout": 0.1,
                "dim": 24, "dropout": 0.1, "hidden_dim": 96, "initializer_range": 0.02,
                "max_position_embeddings": 32, "model_type": "distilbert", "n_heads": 4, "n_layers": 3,
                "pad_token_id": 0, "qa_dropout": 0.1, "seq_classif_dropout": 0.2, "sinusoidal_pos_embds": False,
                "tie_weights_": True, "transformers_version": v, "vocab_size": VOCAB},
        stacks=[stack(None, "distilbert.transformer.layer.{}.", 3, 24, "post_ln_mlp", d_ff=96, eps=1e-12,
                      act="gelu", names=("output_layer_norm", "ffn.lin1", "ffn.lin2"))])
    bert_names = ("output.LayerNorm", "intermediate.dense", "output.dense")
    # all-mpnet-base-v2's keys (MPNetModel, saved without a prefix; layer_norm_eps 1e-5 where MPNetConfig
    # defaults to 1e-12).
    specs["mpnet"] = dict(
        dtype=f32, tensors=lambda: bert_names_tensors("", 24, 96, 2, mpnet_attention),
        config={"architectures": ["MPNetModel"], "attention_probs_dropout_prob": 0.1, "bos_token_id": 0,
                "eos_token_id": 2, "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 24,
                "initializer_range": 0.02, "intermediate_size": 96, "layer_norm_eps": 1e-05,
                "max_position_embeddings": 32, "model_type": "mpnet", "num_attention_heads": 4,
                "num_hidden_layers": 2, "pad_token_id": 1, "relative_attention_num_buckets": 32,
                "torch_dtype": "float32", "transformers_version": v, "vocab_size": VOCAB},
        stacks=[stack(None, "encoder.layer.{}.", 2, 24, "post_ln_mlp", d_ff=96, eps=1e-5, act="gelu",
                      names=bert_names)])
    # ELECTRA's discriminator (electra.), its config without hidden_act and layer_norm_eps: ElectraConfig's
    # defaults (gelu, 1e-12).
    specs["electra"] = dict(
        dtype=bf16, tensors=lambda: bert_names_tensors("electra.", 16, 64, 2, electra_attention),
        config={"architectures": ["ElectraForPreTraining"], "attention_probs_dropout_prob": 0.1,
                "embedding_size": 16, "hidden_dropout_prob": 0.1, "hidden_size": 16, "initializer_range": 0.02,
                "intermediate_size": 64, "max_position_embeddings": 32, "model_type": "electra",
                "num_attention_heads": 4, "num_hidden_layers": 2, "pad_token_id": 0, "type_vocab_size": 2,
                "vocab_size": VOCAB},
        stacks=[stack(None, "electra.encoder.layer.{}.", 2, 16, "post_ln_mlp", d_ff=64, eps=1e-12, act="gelu",
                      names=bert_names)])
    # starcoder2-3b's keys (mlp_type and norm_type too, which Transformers does not read).
    specs["starcoder2"] = dict(
        dtype=bf16, tensors=lambda: starcoder2_tensors(24, 96, 2, 4, 2, 6),
        config={"architectures": ["Starcoder2ForCausalLM"], "attention_dropout": 0.1, "bos_token_id": 0,
                "embedding_dropout": 0.1, "eos_token_id": 0, "hidden_act": "gelu_pytorch_tanh", "hidden_size": 24,
                "initializer_range": 0.018042, "intermediate_size": 96, "max_position_embeddings": 128,
                "mlp_type": "default", "model_type": "starcoder2", "norm_epsilon": 1e-05, "norm_type": "layer_norm",
                "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
                "residual_dropout": 0.1, "rope_theta": 999999.4420358813, "sliding_window": 64,
                "torch_dtype": "bfloat16", "transformers_version": "4.37.0.dev0", "use_bias": True,
                "use_cache": True, "vocab_size": VOCAB},
        stacks=[stack(None, "model.layers.{}.", 2, 24, "ln_mlp", d_ff=96, eps=1e-5, act="gelu_pytorch_tanh",
                      names=("post_attention_layernorm", "mlp.c_fc", "mlp.c_proj"))])
    # DistilBertModel as sentence-transformers saves it: no prefix (transformer.layer.N.), F16, 2 layers.
    specs["distilbert_model"] = dict(
        dtype=f16, tensors=lambda: distilbert_tensors(16, 64, 2, prefix=""),
        config=dict(specs["distilbert"]["config"], architectures=["DistilBertModel"], dim=16, hidden_dim=64,
                    n_layers=2, torch_dtype="float16"),
        stacks=[stack(None, "transformer.layer.{}.", 2, 16, "post_ln_mlp", d_ff=64, eps=1e-12, act="gelu",
                      names=("output_layer_norm", "ffn.lin1", "ffn.lin2"))])
    # deberta-v3-small's keys (DebertaV2ForSequenceClassification: deberta.), eps 1e-7.
    specs["deberta_v2"] = dict(
        dtype=f32, tensors=lambda: bert_names_tensors("deberta.", 24, 96, 2, deberta_attention),
        config={"architectures": ["DebertaV2ForSequenceClassification"], "attention_probs_dropout_prob": 0.1,
                "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 24, "initializer_range": 0.02,
                "intermediate_size": 96, "layer_norm_eps": 1e-07, "max_position_embeddings": 32,
                "max_relative_positions": -1, "model_type": "deberta-v2", "norm_rel_ebd": "layer_norm",
                "num_attention_heads": 4, "num_hidden_layers": 2, "pad_token_id": 0, "pooler_dropout": 0,
                "pooler_hidden_act": "gelu", "pooler_hidden_size": 24, "pos_att_type": ["p2c", "c2p"],
                "position_biased_input": False, "position_buckets": 16, "relative_attention": True,
                "share_att_key": True, "torch_dtype": "float32", "transformers_version": v, "type_vocab_size": 0,
                "vocab_size": VOCAB},
        stacks=[stack(None, "deberta.encoder.layer.{}.", 2, 24, "post_ln_mlp", d_ff=96, eps=1e-7, act="gelu",
                      names=bert_names)])

    # -- the fourth round: gated MLPs after a LayerNorm, or with a norm after them only (seeds after the above)
    llama = ("mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")
    # ModernBERT-base's keys (no hidden_act: hidden_activation; norm_bias and mlp_bias false).
    specs["modernbert"] = dict(
        dtype=f32, tensors=lambda: modernbert_tensors(24, 40, 3),
        config={"architectures": ["ModernBertForMaskedLM"], "attention_bias": False, "attention_dropout": 0.0,
                "bos_token_id": 50281, "classifier_activation": "gelu", "classifier_bias": False,
                "classifier_dropout": 0.0, "classifier_pooling": "mean", "cls_token_id": 50281,
                "decoder_bias": True, "deterministic_flash_attn": False, "embedding_dropout": 0.0,
                "eos_token_id": 50282, "global_attn_every_n_layers": 3, "global_rope_theta": 160000.0,
                "gradient_checkpointing": False, "hidden_activation": "gelu", "hidden_size": 24,
                "initializer_cutoff_factor": 2.0, "initializer_range": 0.02, "intermediate_size": 40,
                "layer_norm_eps": 1e-05, "local_attention": 128, "local_rope_theta": 10000.0,
                "max_position_embeddings": 128, "mlp_bias": False, "mlp_dropout": 0.0, "model_type": "modernbert",
                "norm_bias": False, "norm_eps": 1e-05, "num_attention_heads": 4, "num_hidden_layers": 3,
                "pad_token_id": 50283, "position_embedding_type": "absolute", "sep_token_id": 50282,
                "sparse_pred_ignore_index": -100, "sparse_prediction": False, "torch_dtype": "float32",
                "transformers_version": "4.48.0.dev0", "vocab_size": VOCAB},
        stacks=[stack(None, "model.layers.{}.", 3, 24, "ln_gated", d_ff=40, eps=1e-5, act="gelu", norm="mlp_norm",
                      norm_bias=False, names=("mlp.Wi", None, "mlp.Wo"))])

    def stablelm_norms(t, p):
        t.layer_norm(f"{p}.input_layernorm", 24)
        t.layer_norm(f"{p}.post_attention_layernorm", 24)

    # stablelm-2-1_6b's keys (its config leaves hidden_act out: StableLmConfig's silu).
    specs["stablelm"] = dict(
        dtype=bf16, tensors=lambda: llama_like_tensors(24, 64, 2, 4, stablelm_norms,
                                                       lambda t: t.layer_norm("model.norm", 24)),
        config={"architectures": ["StableLmForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 100257,
                "eos_token_id": 100257, "hidden_dropout": 0.0, "hidden_size": 24, "initializer_range": 0.02,
                "intermediate_size": 64, "layer_norm_eps": 1e-05, "max_position_embeddings": 128,
                "model_type": "stablelm", "num_attention_heads": 4, "num_hidden_layers": 2,
                "num_key_value_heads": 4, "partial_rotary_factor": 0.25, "qk_layernorm": False,
                "rope_scaling": None, "rope_theta": 10000, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
                "transformers_version": "4.40.0.dev0", "use_cache": True, "use_parallel_residual": False,
                "use_qkv_bias": False, "vocab_size": VOCAB},
        stacks=[stack(None, "model.layers.{}.", 2, 24, "ln_gated", d_ff=64, eps=1e-5, act="silu",
                      norm="post_attention_layernorm", norm_bias=True, names=llama)])
    # c4ai-command-r's keys (CohereLayerNorm weights only; tied embeddings), F16 here.
    specs["cohere"] = dict(
        dtype=f16, tensors=lambda: llama_like_tensors(
            24, 56, 2, 4, lambda t, p: t.__setitem__(f"{p}.input_layernorm.weight", norm_weight(24)),
            lambda t: t.__setitem__("model.norm.weight", norm_weight(24)), lm_head=False),
        config={"architectures": ["CohereForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                "bos_token_id": 5, "eos_token_id": 255001, "hidden_act": "silu", "hidden_size": 24,
                "initializer_range": 0.02, "intermediate_size": 56, "layer_norm_eps": 1e-05, "logit_scale": 0.0625,
                "max_position_embeddings": 128, "model_type": "cohere", "num_attention_heads": 4,
                "num_hidden_layers": 2, "num_key_value_heads": 4, "pad_token_id": 0, "rope_theta": 8000000.0,
                "torch_dtype": "float16", "transformers_version": "4.40.0.dev0", "use_cache": True,
                "use_qk_norm": False, "vocab_size": VOCAB},
        stacks=[stack(None, "model.layers.{}.", 2, 24, "ln_gated", d_ff=56, eps=1e-5, act="silu",
                      norm="input_layernorm", norm_bias=False, names=llama)])
    # OLMo-1B-hf's keys: no norm tensors at all (OlmoLayerNorm has no parameters).
    specs["olmo"] = dict(
        dtype=f32, tensors=lambda: llama_like_tensors(24, 48, 2, 4, lambda t, p: None, lambda t: None),
        config={"architectures": ["OlmoForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                "clip_qkv": None, "eos_token_id": 50279, "hidden_act": "silu", "hidden_size": 24,
                "initializer_range": 0.02, "intermediate_size": 48, "max_position_embeddings": 128,
                "model_type": "olmo", "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 4,
                "pad_token_id": 1, "rope_scaling": None, "rope_theta": 10000.0, "tie_word_embeddings": False,
                "torch_dtype": "float32", "transformers_version": "4.40.0.dev0", "use_cache": True,
                "vocab_size": VOCAB},
        stacks=[stack(None, "model.layers.{}.", 2, 24, "ln_gated", d_ff=48, eps=1e-5, act="silu", norm=None,
                      norm_bias=False, names=llama)])

    def olmo2_norms(t, p):
        t.rms(f"{p}.post_attention_layernorm", 24)
        t.rms(f"{p}.post_feedforward_layernorm", 24)

    # OLMo-2-0425-1B's keys (q_norm and k_norm over all heads).
    specs["olmo2"] = dict(
        dtype=bf16, tensors=lambda: llama_like_tensors(24, 48, 2, 4, olmo2_norms,
                                                       lambda t: t.rms("model.norm", 24), qk_norm="full"),
        config={"architectures": ["Olmo2ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                "bos_token_id": None, "eos_token_id": 100257, "hidden_act": "silu", "hidden_size": 24,
                "initializer_range": 0.02, "intermediate_size": 48, "max_position_embeddings": 128,
                "model_type": "olmo2", "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 4,
                "pad_token_id": 100277, "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 500000,
                "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.48.3",
                "use_cache": True, "vocab_size": VOCAB},
        stacks=[stack(None, "model.layers.{}.", 2, 24, "olmo2", d_ff=48, eps=1e-6, act="silu")])

    # granite-3.3-2b-instruct's keys (its multipliers; residual_multiplier 0.22 scales the MLP's output).
    specs["granite"] = dict(
        dtype=bf16, tensors=lambda: llama_like_tensors(
            24, 64, 2, 4, lambda t, p: (t.rms(f"{p}.input_layernorm", 24), t.rms(f"{p}.post_attention_layernorm", 24)),
            lambda t: t.rms("model.norm", 24), lm_head=False),
        config={"architectures": ["GraniteForCausalLM"], "attention_bias": False, "attention_dropout": 0.1,
                "attention_multiplier": 0.015625, "bos_token_id": 0, "embedding_multiplier": 12.0,
                "eos_token_id": 0, "hidden_act": "silu", "hidden_size": 24, "initializer_range": 0.02,
                "intermediate_size": 64, "logits_scaling": 8.0, "max_position_embeddings": 128, "mlp_bias": False,
                "model_type": "granite", "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 4,
                "pad_token_id": 0, "residual_multiplier": 0.22, "rms_norm_eps": 1e-05, "rope_scaling": None,
                "rope_theta": 10000000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
                "transformers_version": "4.49.0", "use_cache": True, "vocab_size": VOCAB},
        stacks=[stack(None, "model.layers.{}.", 2, 24, "granite", d_ff=64, eps=1e-5, act="silu", scale=0.22)])

    def glm4_layer_norms(t, p):
        for norm in ("input_layernorm", "post_attention_layernorm", "post_self_attn_layernorm", "post_mlp_layernorm"):
            t.rms(f"{p}.{norm}", 24)

    def glm4_tensors():
        t = Tensors({"model.embed_tokens.weight": small(VOCAB, 24)})
        for i in range(2):
            p = f"model.layers.{i}"
            t.attention(f"{p}.self_attn", 24, 4, 2, 6, qkv_bias=True)
            # gate_up_proj: the gate's d_ff rows, then the up projection's (Phi3MLP's chunk(2, dim=-1))
            t[f"{p}.mlp.gate_up_proj.weight"] = torch.cat([linear(40, 24, scale=3), linear(40, 24)])
            t.lin(f"{p}.mlp.down_proj", 24, 40)
            glm4_layer_norms(t, p)
        t.rms("model.norm", 24)
        t.lin("lm_head", VOCAB, 24)
        return t

    # GLM-4-9B-0414's keys, its config's eps (1e-5) where Glm4Config's default is 1.5625e-7.
    specs["glm4"] = dict(
        dtype=bf16, tensors=glm4_tensors,
        config={"architectures": ["Glm4ForCausalLM"], "attention_bias": True, "attention_dropout": 0.0,
                "eos_token_id": [151329, 151336, 151338], "head_dim": 6, "hidden_act": "silu", "hidden_size": 24,
                "initializer_range": 0.02, "intermediate_size": 40, "max_position_embeddings": 128,
                "model_type": "glm4", "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
                "pad_token_id": 151329, "partial_rotary_factor": 0.5, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
                "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.51.3",
                "use_cache": True, "vocab_size": VOCAB},
        stacks=[stack(None, "model.layers.{}.", 2, 24, "glm4", d_ff=40, eps=1e-5, act="silu")])

    # stablelm-2-12b's layout: use_parallel_residual, so no post_attention_layernorm; the MLP reads
    # input_layernorm (with its bias), as the attention does.
    specs["stablelm_parallel"] = dict(
        dtype=bf16, tensors=lambda: llama_like_tensors(24, 64, 2, 4, lambda t, p: t.layer_norm(f"{p}.input_layernorm", 24),
                                                       lambda t: t.layer_norm("model.norm", 24)),
        config=dict(specs["stablelm"]["config"], use_parallel_residual=True, transformers_version="4.40.0"),
        stacks=[stack(None, "model.layers.{}.", 2, 24, "ln_gated", d_ff=64, eps=1e-5, act="silu",
                      norm="input_layernorm", norm_bias=True, names=llama)])

    # -- the fifth round: vision-language models' language models (seeds after the above)
    # llava-1.5-7b-hf's config (its text_config leaves hidden_act and the widths to LlamaConfig's defaults;
    # here the widths are given, for the small tensors, and rms_norm_eps, 1e-5 in the release, is left out
    # so that LlamaConfig's 1e-6 is read), the layout Transformers saves: language_model.model.layers.N.
    specs["llava"] = dict(
        dtype=f16, tensors=lambda: vlm_tensors("language_model.model.", 24, 48, 2, 4, 4, {
            "language_model.lm_head.weight": (VOCAB, 24), "multi_modal_projector.linear_1.weight": (24, 16),
            "multi_modal_projector.linear_1.bias": (24,), "vision_tower.vision_model.embeddings.patch_embedding.weight":
                (16, 3, 2, 2), "vision_tower.vision_model.post_layernorm.weight": (16,)}),
        config={"architectures": ["LlavaForConditionalGeneration"], "ignore_index": -100, "image_token_index": 32000,
                "model_type": "llava", "pad_token_id": 32001, "projector_hidden_act": "gelu",
                "text_config": {"_name_or_path": "lmsys/vicuna-7b-v1.5", "architectures": ["LlamaForCausalLM"],
                                "hidden_size": 24, "intermediate_size": 48, "max_position_embeddings": 128,
                                "model_type": "llama", "num_attention_heads": 4, "num_hidden_layers": 2,
                                "num_key_value_heads": 4, "torch_dtype": "float16", "vocab_size": VOCAB},
                "tie_word_embeddings": False, "torch_dtype": "float16", "transformers_version": "4.36.0.dev0",
                "vision_config": {"hidden_size": 16, "image_size": 8, "intermediate_size": 32,
                                  "model_type": "clip_vision_model", "num_attention_heads": 2,
                                  "num_hidden_layers": 1, "patch_size": 2, "projection_dim": 24},
                "vision_feature_layer": -2, "vision_feature_select_strategy": "default", "vocab_size": VOCAB},
        stacks=[stack(None, "language_model.model.layers.{}.", 2, 24, "gated", d_ff=48, eps=1e-6, act="silu")])
    # PaliGemma as Transformers 4.52.0-4.52.3 and some trainers save it (model.language_model.layers.N.); its
    # text_config without model_type: PaliGemmaConfig's default, gemma (so the tanh GELU, norms weight + 1).
    specs["paligemma"] = dict(
        dtype=bf16, tensors=lambda: vlm_tensors("model.language_model.", 24, 40, 2, 4, 1, {
            "model.multi_modal_projector.linear.weight": (24, 16), "model.multi_modal_projector.linear.bias": (24,),
            "model.vision_tower.vision_model.embeddings.patch_embedding.weight": (16, 3, 2, 2)}, gemma=True),
        config={"architectures": ["PaliGemmaForConditionalGeneration"], "bos_token_id": 2, "eos_token_id": 1,
                "hidden_size": 24, "image_token_index": 257152, "model_type": "paligemma", "pad_token_id": 0,
                "projection_dim": 24,
                "text_config": {"hidden_activation": "gelu_pytorch_tanh", "hidden_size": 24,
                                "intermediate_size": 40, "num_attention_heads": 4, "num_hidden_layers": 2,
                                "num_image_tokens": 16, "num_key_value_heads": 1, "torch_dtype": "bfloat16",
                                "vocab_size": VOCAB},
                "torch_dtype": "bfloat16", "transformers_version": "4.52.1",
                "vision_config": {"hidden_size": 16, "intermediate_size": 32, "model_type": "siglip_vision_model",
                                  "num_attention_heads": 2, "num_hidden_layers": 1, "patch_size": 2,
                                  "projection_dim": 24}},
        stacks=[stack(None, "model.language_model.layers.{}.", 2, 24, "gemma", d_ff=40, eps=1e-6,
                      act="gelu_pytorch_tanh")])
    # SmolVLM's layout (model.text_model.layers.N., never renamed), its text_config a llama with its eps.
    specs["smolvlm"] = dict(
        dtype=bf16, tensors=lambda: vlm_tensors("model.text_model.", 24, 56, 2, 4, 2, {
            "lm_head.weight": (VOCAB, 24), "model.connector.modality_projection.proj.weight": (24, 64),
            "model.vision_model.embeddings.patch_embedding.weight": (16, 3, 2, 2)}),
        config={"architectures": ["SmolVLMForConditionalGeneration"], "image_token_id": 49190,
                "model_type": "smolvlm", "scale_factor": 2,
                "text_config": {"architectures": ["VLlama3ForCausalLM"], "hidden_act": "silu", "hidden_size": 24,
                                "intermediate_size": 56, "max_position_embeddings": 128, "model_type": "llama",
                                "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
                                "rms_norm_eps": 1e-05, "rope_theta": 100000, "torch_dtype": "bfloat16",
                                "vocab_size": VOCAB},
                "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
                "use_cache": True,
                "vision_config": {"hidden_size": 16, "image_size": 8, "intermediate_size": 32,
                                  "model_type": "smolvlm_vision", "num_attention_heads": 2,
                                  "num_hidden_layers": 1, "patch_size": 2}, "vocab_size": VOCAB},
        stacks=[stack(None, "model.text_model.layers.{}.", 2, 24, "gated", d_ff=56, eps=1e-5, act="silu")])
    # Qwen2.5-VL-3B-Instruct's config: the text settings at the top level; the layers at model.layers.N.
    specs["qwen2_5_vl"] = dict(
        dtype=bf16, tensors=lambda: vlm_tensors("model.", 24, 64, 2, 4, 2, {
            "lm_head.weight": (VOCAB, 24), "visual.patch_embed.proj.weight": (16, 3, 2, 2, 2),
            "visual.merger.mlp.0.weight": (64, 64), "visual.merger.mlp.0.bias": (64,)}, qkv_bias=True),
        config={"architectures": ["Qwen2_5_VLForConditionalGeneration"], "attention_dropout": 0.0,
                "bos_token_id": 151643, "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 24,
                "image_token_id": 151655, "initializer_range": 0.02, "intermediate_size": 64,
                "max_position_embeddings": 128, "max_window_layers": 2, "model_type": "qwen2_5_vl",
                "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
                "rope_scaling": {"mrope_section": [1, 1, 1], "rope_type": "default", "type": "default"},
                "rope_theta": 1000000.0, "sliding_window": 128, "tie_word_embeddings": True,
                "torch_dtype": "bfloat16", "transformers_version": "4.49.0.dev0", "use_cache": True,
                "use_sliding_window": False, "video_token_id": 151656,
                "vision_config": {"depth": 1, "hidden_act": "silu", "hidden_size": 16, "intermediate_size": 32,
                                  "num_heads": 2, "out_hidden_size": 24, "patch_size": 2, "spatial_merge_size": 2,
                                  "temporal_patch_size": 2, "window_size": 8, "fullatt_block_indexes": [0],
                                  "tokens_per_second": 2},
                "vision_end_token_id": 151653, "vision_start_token_id": 151652, "vision_token_id": 151654,
                "vocab_size": VOCAB},
        stacks=[stack(None, "model.layers.{}.", 2, 24, "gated", d_ff=64, eps=1e-6, act="silu")])

    # -- the sixth round: GPT-J, GPT-BigCode, BLOOM, Falcon (seeds after the above)
    # EleutherAI/gpt-j-6b's keys (n_inner null: 4 n_embd), the parallel block's MLP reading ln_1.
    specs["gptj"] = dict(
        dtype=f16, tensors=lambda: gptj_tensors(24, 2),
        config={"activation_function": "gelu_new", "architectures": ["GPTJForCausalLM"], "attn_pdrop": 0.0,
                "bos_token_id": 50256, "embd_pdrop": 0.0, "eos_token_id": 50256, "initializer_range": 0.02,
                "layer_norm_epsilon": 1e-05, "model_type": "gptj", "n_embd": 24, "n_head": 4, "n_inner": None,
                "n_layer": 2, "n_positions": 128, "resid_pdrop": 0.0, "rotary": True, "rotary_dim": 4,
                "tie_word_embeddings": False, "torch_dtype": "float16", "transformers_version": "4.18.0.dev0",
                "use_cache": True, "vocab_size": VOCAB},
        stacks=[stack(None, "transformer.h.{}.", 2, 24, "ln_mlp", d_ff=96, eps=1e-5, act="gelu_new",
                      names=("ln_1", "mlp.fc_in", "mlp.fc_out"))])
    # bigcode/gpt_bigcode-santacoder's keys (multi_query, n_inner given: 3 n_embd here).
    specs["gpt_bigcode"] = dict(
        dtype=f32, tensors=lambda: gpt_bigcode_tensors(24, 72, 2, 6),
        config={"activation_function": "gelu_pytorch_tanh", "architectures": ["GPTBigCodeForCausalLM"],
                "attention_softmax_in_fp32": True, "attn_pdrop": 0.1, "bos_token_id": 49152, "embd_pdrop": 0.1,
                "eos_token_id": 49152, "initializer_range": 0.02, "layer_norm_epsilon": 1e-05,
                "model_type": "gpt_bigcode", "multi_query": True, "n_embd": 24, "n_head": 4, "n_inner": 72,
                "n_layer": 2, "n_positions": 64, "resid_pdrop": 0.1, "scale_attention_softmax_in_fp32": True,
                "scale_attn_weights": True, "torch_dtype": "float32", "transformers_version": "4.28.0.dev0",
                "use_cache": True, "vocab_size": VOCAB},
        stacks=[stack(None, "transformer.h.{}.", 2, 24, "ln_mlp", d_ff=72, eps=1e-5, act="gelu_pytorch_tanh",
                      names=("ln_2", "mlp.c_fc", "mlp.c_proj"))])
    # bigscience/bloom's keys: the legacy n_embed, BloomModel's names (h.N.), pretraining_tp 4 without
    # slow_but_exact (the plain nn.Linear products).
    specs["bloom"] = dict(
        dtype=bf16, tensors=lambda: bloom_tensors(16, 2),
        config={"apply_residual_connection_post_layernorm": False, "architectures": ["BloomModel"],
                "attention_dropout": 0.0, "attention_softmax_in_fp32": True, "bias_dropout_fusion": True,
                "bos_token_id": 1, "eos_token_id": 2, "hidden_dropout": 0.0, "initializer_range": 0.02,
                "layer_norm_epsilon": 1e-05, "masked_softmax_fusion": True, "model_type": "bloom", "n_embed": 16,
                "n_head": 4, "n_layer": 2, "offset_alibi": 100, "pad_token_id": 3, "pretraining_tp": 4,
                "seq_length": 128, "skip_bias_add": True, "skip_bias_add_qkv": False, "slow_but_exact": False,
                "transformers_version": "4.21.0", "unk_token_id": 0, "use_cache": True, "vocab_size": VOCAB},
        stacks=[stack(None, "h.{}.", 2, 16, "ln_mlp", d_ff=64, eps=1e-5, act="bloom_gelu",
                      names=("post_attention_layernorm", "mlp.dense_h_to_4h", "mlp.dense_4h_to_h"))])
    # tiiuae/falcon-40b's keys: new_decoder_architecture (ln_attn, ln_mlp: num_ln_in_parallel_attn null
    # means 2), no biases, ffn_hidden_size absent (4 hidden_size), exact GELU by default.
    specs["falcon"] = dict(
        dtype=bf16, tensors=lambda: falcon_tensors(24, 96, 2, 4, 2, ("ln_attn", "ln_mlp"), False),
        config={"alibi": False, "architectures": ["FalconForCausalLM"], "attention_dropout": 0.0, "bias": False,
                "bos_token_id": 11, "eos_token_id": 11, "hidden_dropout": 0.0, "hidden_size": 24,
                "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "falcon",
                "new_decoder_architecture": True, "num_attention_heads": 4, "num_hidden_layers": 2,
                "num_kv_heads": 2, "parallel_attn": True, "torch_dtype": "bfloat16",
                "transformers_version": "4.27.4", "use_cache": True, "vocab_size": VOCAB},
        stacks=[stack(None, "transformer.h.{}.", 2, 24, "ln_mlp", d_ff=96, eps=1e-5, act="gelu", biases=False,
                      names=("ln_mlp", "mlp.dense_h_to_4h", "mlp.dense_4h_to_h"))])
    # falcon-rw-1b's layout: parallel_attn false (the MLP reads post_attention_layernorm after the
    # attention's residual), biases; ffn_hidden_size given (3 hidden_size here), activation given.
    specs["falcon_rw"] = dict(
        dtype=f16, tensors=lambda: falcon_tensors(24, 72, 2, 4, 4, ("input_layernorm", "post_attention_layernorm"),
                                                  True),
        config={"activation": "gelu", "alibi": True, "architectures": ["FalconForCausalLM"],
                "attention_dropout": 0.0, "bias": True, "bos_token_id": 1, "eos_token_id": 2,
                "ffn_hidden_size": 72, "hidden_dropout": 0.0, "hidden_size": 24, "initializer_range": 0.02,
                "layer_norm_epsilon": 1e-05, "model_type": "falcon", "multi_query": False,
                "new_decoder_architecture": False, "num_attention_heads": 4, "num_hidden_layers": 2,
                "parallel_attn": False, "torch_dtype": "float16", "transformers_version": "4.33.0",
                "use_cache": True, "vocab_size": VOCAB},
        stacks=[stack(None, "transformer.h.{}.", 2, 24, "ln_mlp", d_ff=72, eps=1e-5, act="gelu", biases=True,
                      names=("post_attention_layernorm", "mlp.dense_h_to_4h", "mlp.dense_4h_to_h"))])
    # tiiuae/falcon-7b's keys (in Transformers' format): the old architecture's parallel block, one
    # input_layernorm that attention and MLP both read, multi-query attention, no biases, no activation key.
    specs["falcon_7b"] = dict(
        dtype=bf16, tensors=lambda: falcon_tensors(16, 64, 2, 4, 1, ("input_layernorm",), False),
        config={"alibi": False, "apply_residual_connection_post_layernorm": False,
                "architectures": ["FalconForCausalLM"], "attention_dropout": 0.0, "bias": False, "bos_token_id": 11,
                "eos_token_id": 11, "hidden_dropout": 0.0, "hidden_size": 16, "initializer_range": 0.02,
                "layer_norm_epsilon": 1e-05, "model_type": "falcon", "multi_query": True,
                "new_decoder_architecture": False, "num_attention_heads": 4, "num_hidden_layers": 2,
                "parallel_attn": True, "torch_dtype": "bfloat16", "transformers_version": "4.27.4", "use_cache": True,
                "vocab_size": VOCAB},
        stacks=[stack(None, "transformer.h.{}.", 2, 16, "ln_mlp", d_ff=64, eps=1e-5, act="gelu", biases=False,
                      names=("input_layernorm", "mlp.dense_h_to_4h", "mlp.dense_4h_to_h"))])

    # -- Granite's mixtures of experts (seeds after the above). granite-3.1-1b-a400m's keys (granitemoe):
    # the experts stacked in block_sparse_moe.input_linear / output_linear, the router in
    # block_sparse_moe.router.layer, tied embeddings, the MLP's output times residual_multiplier.
    s = moe_settings(2, 24, 8, 2, 16, names=GRANITE_NAMES, router="granite", granite=True,
                     residual_multiplier=0.22)
    specs["granitemoe"] = moe(
        bf16, s, {"architectures": ["GraniteMoeForCausalLM"], "attention_bias": False, "attention_dropout": 0.1,
                  "attention_multiplier": 0.015625, "bos_token_id": 0, "embedding_multiplier": 12.0,
                  "eos_token_id": 0, "hidden_act": "silu", "hidden_size": 24, "initializer_range": 0.02,
                  "intermediate_size": 16, "logits_scaling": 6.0, "max_position_embeddings": 128,
                  "model_type": "granitemoe", "num_attention_heads": 4, "num_experts_per_tok": 2,
                  "num_hidden_layers": 2, "num_key_value_heads": 2, "num_local_experts": 8,
                  "output_router_logits": False, "pad_token_id": 0, "residual_multiplier": 0.22,
                  "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 10000000.0, "router_aux_loss_coef": 0.0,
                  "tie_word_embeddings": True, "torch_dtype": "bfloat16", "transformers_version": "4.46.0.dev0",
                  "use_cache": True, "vocab_size": VOCAB},
        llama_attention(4, 2, 6, 24), lm_head=False)

    # granite-4.0-h-tiny's keys (granitemoehybrid): Mamba-2 layers (mamba.*) and attention layers, each with
    # the experts and the shared MLP (shared_mlp.input_linear / output_linear, d_ff shared_intermediate_size).
    def granite4_mixer(layer_types, d, mamba_heads, mamba_head_dim, d_state, d_conv):
        def add(t, name):  # name: "model.layers.<i>.self_attn"
            if layer_types[int(name.split(".")[2])] == "attention":
                t.attention(name, d, 4, 2, d // 4)
                return
            m, inner = name.rsplit(".", 1)[0] + ".mamba", mamba_heads * mamba_head_dim
            conv = inner + 2 * d_state  # one group
            t.lin(f"{m}.in_proj", inner + conv + mamba_heads, d)
            t[f"{m}.conv1d.weight"], t[f"{m}.conv1d.bias"] = small(conv, 1, d_conv), small(conv)
            t[f"{m}.dt_bias"], t[f"{m}.A_log"], t[f"{m}.D"] = small(mamba_heads), small(mamba_heads), small(mamba_heads)
            t.rms(f"{m}.norm", inner)
            t.lin(f"{m}.out_proj", d, inner)
        return add

    def granite4_config(layer_types, experts, d_ff, shared):
        return {"architectures": ["GraniteMoeHybridForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                "attention_multiplier": 0.0078125, "bos_token_id": 100257, "embedding_multiplier": 12,
                "eos_token_id": 100257, "hidden_act": "silu", "hidden_size": 24, "init_method": "mup",
                "initializer_range": 0.1, "intermediate_size": d_ff, "layer_types": layer_types,
                "logits_scaling": 6, "mamba_chunk_size": 256, "mamba_conv_bias": True, "mamba_d_conv": 4,
                "mamba_d_head": 12, "mamba_d_state": 8, "mamba_expand": 2, "mamba_n_groups": 1, "mamba_n_heads": 4,
                "mamba_proj_bias": False, "max_position_embeddings": 128, "model_type": "granitemoehybrid",
                "normalization_function": "rmsnorm", "num_attention_heads": 4, "num_experts_per_tok": 2,
                "num_hidden_layers": len(layer_types), "num_key_value_heads": 2, "num_local_experts": experts,
                "output_router_logits": False, "pad_token_id": 100256, "position_embedding_type": "nope",
                "residual_multiplier": 0.246, "rms_norm_eps": 1e-05, "rope_theta": 10000,
                "router_aux_loss_coef": 0.0, "shared_intermediate_size": shared, "tie_word_embeddings": True,
                "torch_dtype": "bfloat16", "transformers_version": "4.56.0", "use_cache": True, "vocab_size": VOCAB}

    s = moe_settings(2, 24, 8, 2, 16, names=GRANITE_NAMES, router="granite", granite=True, shared=20, d_dense=20,
                     residual_multiplier=0.246, eps=1e-5)
    specs["granitemoehybrid"] = moe(bf16, s, granite4_config(["mamba", "attention"], 8, 16, 20),
                                    granite4_mixer(["mamba", "attention"], 24, 4, 12, 8, 4), lm_head=False)
    # granite-4.0-micro's layout: no experts (num_local_experts 0), every layer's MLP the shared one.
    s = moe_settings(2, 24, 0, 2, 16, names=GRANITE_NAMES, router="granite", granite=True, shared=32, d_dense=32,
                     sparse=[False, False], residual_multiplier=0.246, eps=1e-5)
    specs["granitemoehybrid_dense"] = moe(bf16, s, granite4_config(["attention", "attention"], 0, 16, 32),
                                          granite4_mixer(["attention", "attention"], 24, 4, 12, 8, 4), lm_head=False)

    # -- Phi-3.5-MoE (seeds after the above): Phi-3.5-MoE-instruct's keys, Mixtral's names and experts,
    # nn.LayerNorm with its bias (eps rms_norm_eps) before the mixture, the sparsemixer. router_jitter_noise
    # 0.25 here (0.01 in the release, where almost every token keeps one expert a step: weights of 1) so
    # that each step's softmax spans several experts for some tokens.
    s = moe_settings(2, 24, 8, 2, 16, names=MIXTRAL_NAMES, router="sparsemixer", renorm=False, norm="layer",
                     jitter=0.25, eps=1e-5)
    specs["phimoe"] = moe(
        bf16, s, {"architectures": ["PhiMoEForCausalLM"], "attention_bias": True, "attention_dropout": 0.0,
                  "bos_token_id": 1, "eos_token_id": 32000, "hidden_act": "silu", "hidden_dropout": 0.0,
                  "hidden_size": 24, "initializer_range": 0.02, "input_jitter_noise": 0.01, "intermediate_size": 16,
                  "lm_head_bias": False, "max_position_embeddings": 128, "model_type": "phimoe",
                  "num_attention_heads": 4, "num_experts_per_tok": 2, "num_hidden_layers": 2,
                  "num_key_value_heads": 2, "num_local_experts": 8, "original_max_position_embeddings": 64,
                  "output_router_logits": False, "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 10000.0,
                  "router_aux_loss_coef": 0.0, "router_jitter_noise": 0.25, "sliding_window": 128,
                  "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.43.3",
                  "use_cache": True, "vocab_size": VOCAB},
        llama_attention(4, 2, 6, 24, qkv_bias=True))

    # -- Llama 4 (seeds after the above): Llama4TextMoe's router (the sigmoid of the top-k logits weighing
    # each expert's input), the experts stacked for bmm (E, d, 2 d_ff) and (E, d_ff, d), the shared expert,
    # all at feed_forward; dense layers intermediate_size_mlp wide. llama4: Llama-4-Maverick's layout, a
    # vision-language model (text_config; language_model.model.layers) whose layers alternate dense and MoE
    # (interleave_moe_layer_step 2, moe_layers null), one expert a token.
    def llama4_text_config(dtype, d, d_ff, d_mlp, layers, experts, k, **layout):
        c = {"attention_bias": False, "attention_chunk_size": 8192, "attention_dropout": 0.0, "bos_token_id": 1,
             "eos_token_id": 2, "head_dim": 6, "hidden_act": "silu", "hidden_size": d, "initializer_range": 0.02,
             "intermediate_size": d_ff, "intermediate_size_mlp": d_mlp, "max_position_embeddings": 128,
             "model_type": "llama4_text", "num_attention_heads": 4, "num_experts_per_tok": k,
             "num_hidden_layers": layers, "num_key_value_heads": 2, "num_local_experts": experts,
             "output_router_logits": False, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
             "router_aux_loss_coef": 0.001, "router_jitter_noise": 0.0, "torch_dtype": TORCH_DTYPE[dtype],
             "use_cache": True, "use_qk_norm": True, "vocab_size": VOCAB}
        c.update(layout)
        return c

    s = moe_settings(2, 24, 4, 1, 16, names=LLAMA4_NAMES, router="llama4", renorm=False, d_dense=40,
                     sparse=[False, True], shared=16, shared_name="feed_forward.shared_expert.", eps=1e-5,
                     mlp="feed_forward.", weigh_input=True)
    specs["llama4"] = moe(
        bf16, s, {"architectures": ["Llama4ForConditionalGeneration"], "boi_token_index": 200080,
                  "eoi_token_index": 200081, "image_token_index": 200092, "model_type": "llama4",
                  "text_config": llama4_text_config(bf16, 24, 16, 40, 2, 4, 1, interleave_moe_layer_step=2,
                                                    moe_layers=None),
                  "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.51.0",
                  "vision_config": {"hidden_size": 16, "intermediate_size": 32, "model_type": "llama4_vision_model",
                                    "num_hidden_layers": 1, "vision_output_dim": 16}},
        llama_attention(4, 2, 6, 24), lm="language_model.model.",
        around={"vision_model.model.layers.0.mlp.fc1.weight": (32, 16), "vision_model.model.layers.0.mlp.fc1.bias":
                (32,), "multi_modal_projector.linear_1.weight": (24, 16)})
    # llama4_text: Llama4ForCausalLM, MoE layers listed (moe_layers [0, 2] of 3: interleave_moe_layer_step 1
    # would make layer 1 one too), two experts a token, f32.
    s = moe_settings(3, 16, 8, 2, 12, names=LLAMA4_NAMES, router="llama4", renorm=False, d_dense=32,
                     sparse=[True, False, True], shared=12, shared_name="feed_forward.shared_expert.", eps=1e-5,
                     mlp="feed_forward.", weigh_input=True)
    config = llama4_text_config(f32, 16, 12, 32, 3, 8, 2, interleave_moe_layer_step=1, moe_layers=[0, 2])
    config.update({"architectures": ["Llama4ForCausalLM"], "head_dim": 4, "transformers_version": "4.51.0"})
    specs["llama4_text"] = moe(f32, s, config, llama_attention(4, 2, 4, 16))

    # -- Jamba (seeds after the above): AI21-Jamba-1.5-Mini's keys; Mamba layers (mamba.*) but for every
    # attn_layer_period-th, the mixture of experts (Mixtral's, per expert, softmax top-2 not renormalised)
    # in every expert_layer_period-th from expert_layer_offset, the others a gated MLP as wide; all at
    # feed_forward, after pre_ff_layernorm.
    def jamba_mixer(d, attention_layers, d_state, d_conv, expand, dt_rank):
        def add(t, name):  # name: "model.layers.<i>.self_attn"
            if int(name.split(".")[2]) in attention_layers:
                t.attention(name, d, 4, 2, d // 4)
                return
            m, inner = name.rsplit(".", 1)[0] + ".mamba", expand * d
            t.lin(f"{m}.in_proj", 2 * inner, d)
            t[f"{m}.conv1d.weight"], t[f"{m}.conv1d.bias"] = small(inner, 1, d_conv), small(inner)
            t.lin(f"{m}.x_proj", dt_rank + 2 * d_state, inner)
            t.lin(f"{m}.dt_proj", inner, dt_rank, with_bias=True)
            t[f"{m}.A_log"], t[f"{m}.D"] = small(inner, d_state), small(inner)
            for norm, n in (("dt_layernorm", dt_rank), ("b_layernorm", d_state), ("c_layernorm", d_state)):
                t.rms(f"{m}.{norm}", n)
            t.lin(f"{m}.out_proj", d, inner)
        return add

    s = moe_settings(4, 24, 8, 2, 16, names=JAMBA_NAMES, renorm=False, d_dense=16, sparse=[False, True, False, True],
                     mlp="feed_forward.", ff_norm="pre_ff_layernorm")
    specs["jamba"] = moe(
        bf16, s, {"architectures": ["JambaForCausalLM"], "attention_dropout": 0.0, "attn_layer_offset": 2,
                  "attn_layer_period": 4, "bos_token_id": 1, "eos_token_id": 2, "expert_layer_offset": 1,
                  "expert_layer_period": 2, "hidden_act": "silu", "hidden_size": 24, "initializer_range": 0.02,
                  "intermediate_size": 16, "mamba_conv_bias": True, "mamba_d_conv": 4, "mamba_d_state": 8,
                  "mamba_dt_rank": 2, "mamba_expand": 2, "mamba_proj_bias": False, "max_position_embeddings": 128,
                  "model_type": "jamba", "num_attention_heads": 4, "num_experts": 8, "num_experts_per_tok": 2,
                  "num_hidden_layers": 4, "num_key_value_heads": 2, "num_logits_to_keep": 1,
                  "output_router_logits": False, "pad_token_id": 0, "rms_norm_eps": 1e-06,
                  "router_aux_loss_coef": 0.001, "sliding_window": None, "tie_word_embeddings": False,
                  "torch_dtype": "bfloat16", "transformers_version": "4.40.1", "use_cache": True,
                  "use_mamba_kernels": True, "vocab_size": VOCAB},
        jamba_mixer(24, {2}, 8, 4, 2, 2))

    # -- DBRX (seeds after the above): dbrx-instruct's keys, the MLP's in ffn_config (moe_normalize_expert_weights
    # left out: DbrxFFNConfig's 1.0, the top k divided by their sum); transformer.blocks.N., norm_attn_norm.norm_2
    # (nn.LayerNorm without bias), the experts' w1, v1, w2 each (E d_ff, d).
    def dbrx_tensors(s):
        d, f, e = s["d"], s["d_expert"], s["experts"]
        t = Tensors({"transformer.wte.weight": small(VOCAB, d)})
        for i in range(s["layers"]):
            p = f"transformer.blocks.{i}."
            t[f"{p}norm_attn_norm.norm_1.weight"] = norm_weight(d)
            t.lin(f"{p}norm_attn_norm.attn.Wqkv", d + 2 * 2 * (d // 4), d)  # 4 heads, 2 of keys and values
            t.lin(f"{p}norm_attn_norm.attn.out_proj", d, d)
            t[f"{p}norm_attn_norm.norm_2.weight"] = norm_weight(d)
            t[f"{p}ffn.router.layer.weight"] = linear(e, d, scale=2)
            t[f"{p}ffn.experts.mlp.w1"] = torch.cat([linear(f, d, scale=3) for _ in range(e)])
            t[f"{p}ffn.experts.mlp.v1"] = torch.cat([linear(f, d) for _ in range(e)])
            t[f"{p}ffn.experts.mlp.w2"] = torch.cat([linear(d, f).t() for _ in range(e)])
        t["transformer.norm_f.weight"] = norm_weight(d)
        t["lm_head.weight"] = small(VOCAB, d)
        return t

    s = moe_settings(2, 24, 8, 2, 16, names=DBRX_NAMES, eps=1e-5, norm="layer_nobias", ff_norm="norm_attn_norm.norm_2")
    specs["dbrx"] = dict(
        dtype=bf16, tokens=T_MOE, tensors=lambda s=s: dbrx_tensors(s),
        config={"architectures": ["DbrxForCausalLM"], "attn_config": {"clip_qkv": 8, "kv_n_heads": 2, "model_type": "",
                                                                     "rope_theta": 500000},
                "d_model": 24, "emb_pdrop": 0.0,
                "ffn_config": {"ffn_hidden_size": 16, "model_type": "", "moe_jitter_eps": 0.01,
                               "moe_loss_weight": 0.05, "moe_num_experts": 8, "moe_top_k": 2},
                "initializer_range": 0.02, "max_seq_len": 128, "model_type": "dbrx", "n_heads": 4, "n_layers": 2,
                "output_router_logits": False, "resid_pdrop": 0.0, "router_aux_loss_coef": 0.05,
                "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.38.2",
                "use_cache": True, "vocab_size": VOCAB},
        stacks=[dict(name=None, layer="transformer.blocks.{}.", layers=2, d=24, kind="moe", settings=s)])

    # -- DeepSeek-V3's FP8 format with blocks that are not square (seeds after the above): weight_block_size
    # [4, 8], so that a reader swapping the block's rows and columns, or the scales', reads other scales.
    specs["deepseek_v3_fp8_blocks"] = deepseek_v3_fp8((4, 8))

    # -- gpt-oss (seeds after the above): gpt-oss-20b's config.json keys without its quantization_config (the BF16
    # checkpoints Transformers saves once it has dequantized the MXFP4 experts), every layer a mixture of experts:
    # a router with a bias, the experts' gate and up columns alternating, with biases, the clamped SwiGLU.
    # experts_per_token (OpenAI's key, 4 as gpt-oss-20b's) is not num_experts_per_tok, which Transformers reads.
    def gpt_oss_config(d, d_ff, layers, experts, k):
        return {"architectures": ["GptOssForCausalLM"], "attention_bias": True, "attention_dropout": 0.0,
                "eos_token_id": 200002, "experts_per_token": 4, "head_dim": 6, "hidden_act": "silu", "hidden_size": d,
                "initial_context_length": 4096, "initializer_range": 0.02, "intermediate_size": d_ff,
                "layer_types": ["sliding_attention", "full_attention"][:layers], "max_position_embeddings": 131072,
                "model_type": "gpt_oss", "num_attention_heads": 4, "num_experts_per_tok": k,
                "num_hidden_layers": layers, "num_key_value_heads": 2, "num_local_experts": experts,
                "output_router_logits": False, "pad_token_id": 199999, "rms_norm_eps": 1e-05,
                "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                                 "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": False},
                "rope_theta": 150000, "router_aux_loss_coef": 0.9, "sliding_window": 128, "swiglu_limit": 7.0,
                "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.55.0.dev0",
                "use_cache": True, "vocab_size": VOCAB}

    s = moe_settings(2, 24, 8, 2, 16, names=GPT_OSS_NAMES, router="gpt_oss", eps=1e-5)
    specs["gpt_oss"] = moe(bf16, s, gpt_oss_config(24, 16, 2, 8, 2), llama_attention(4, 2, 6, 24, qkv_bias=True))

    # -- gpt-oss as released (seeds after the above): the experts' weights in MXFP4, gate_up_proj_blocks (E, 2 d_ff,
    # d / 32, 16) and _scales (E, 2 d_ff, d / 32), down_proj's likewise, U8; quantization_config's quant_method
    # "mxfp4" (gpt-oss-20b's); the rest BF16. d and d_ff 64, two blocks of 32 a row. The reference is the
    # dequantised model.
    c = gpt_oss_config(64, 64, 2, 4, 2)
    c["quantization_config"] = {"modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                           "model.embed_tokens", "lm_head"], "quant_method": "mxfp4"}
    s = moe_settings(2, 64, 4, 2, 64, names=GPT_OSS_NAMES, router="gpt_oss", eps=1e-5)
    specs["gpt_oss_mxfp4"] = dict(moe(bf16, s, c, llama_attention(4, 2, 16, 64, qkv_bias=True)), mxfp4=True)
    return specs


def fp8_quantized(name):
    """The weights DeepSeek-V3's release stores in FP8: every nn.Linear of attention and MLP (experts and
    shared experts included); not the embeddings, lm_head, norms, the router (mlp.gate.weight) or its bias."""
    return name.startswith("model.layers.") and name.endswith("_proj.weight") or name.endswith("_proj_with_mqa.weight")


def layer_params(tensors, spec, i):
    """Layer i's tensors, by their names below the layer prefix, widened to float64; the legacy
    LayerNorm.gamma/.beta under the names the blocks use."""
    prefix, p = spec["layer"].format(i), {}
    for name, value in tensors.items():
        if name.startswith(prefix):
            short = name[len(prefix):]
            if spec.get("legacy"):
                short = short.replace("LayerNorm.gamma", "LayerNorm.weight")
                short = short.replace("LayerNorm.beta", "LayerNorm.bias")
            p[short] = value.to(torch.float64)
    return p


def reference(tensors, spec, x, i):
    with torch.no_grad():
        return spec["block"](x.to(torch.float64), layer_params(tensors, spec, i), spec["config"]).numpy()


# ---- safetensors, written from its specification

def tensor_bytes(t):
    """The tensor's little-endian C-order bytes; bfloat16 as its bits (torch rounds to nearest even)."""
    if isinstance(t, F8E4M3):
        return t.bits.contiguous().numpy().tobytes()
    t = t.contiguous()
    a = t.view(torch.int16).numpy() if t.dtype == torch.bfloat16 else t.numpy()
    return a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()


# The reference writer's dtype order (its Dtype enum, by alignment): tensors go by descending rank, then name.
ST_RANK = {name: rank for rank, name in enumerate(
    ["BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0", "I16", "U16", "F16", "BF16",
     "I32", "U32", "F32", "F64", "I64", "U64"])}


def st_dtype(t):
    return t.st_dtype if isinstance(t, F8E4M3) else ST_DTYPE[t.dtype]


def write_safetensors(path, tensors):
    """Header: __metadata__ first, then the tensors in the order of their data: as the reference writer
    orders them, by descending dtype rank (I64, F32, BF16, F16, F8_E4M3, ...), then by name (by name
    alone in a file of one dtype). Padded with spaces to 8 bytes."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors, key=lambda n: (-ST_RANK[st_dtype(tensors[n])], n)):
        t = tensors[name]
        blob = tensor_bytes(t)
        header[name] = {"dtype": st_dtype(t), "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    return offset


def split_shards(tensors):
    """Two shards in state-dict order, as save_pretrained fills them up to max_shard_size: the cut is
    inside the last layer's MLP, after gate_proj, so that up_proj and down_proj are in the second."""
    names = list(tensors)
    cut = names.index(f"model.layers.{LAYERS - 1}.mlp.gate_proj.weight") + 1
    return [{n: tensors[n] for n in names[:cut]}, {n: tensors[n] for n in names[cut:]}]


def write_json(path, obj):
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def write_model(name, spec, seed):
    torch.manual_seed(seed)
    # Stored in the checkpoint's dtype; the references are computed from these stored values.
    tensors = {k: v.to(spec["dtype"]) for k, v in spec["tensors"]().items()}
    d = spec["config"].get("hidden_size", spec["config"].get("n_embd"))
    x = (torch.randn(TOKENS, d) * 2).to(torch.float32)
    out = OUT / name
    (out / "reference").mkdir(parents=True, exist_ok=True)
    for stale in out.glob("*.safetensors*"):
        stale.unlink()
    write_json(out / "config.json", spec["config"])
    if spec.get("shards"):
        shards = split_shards(tensors)
        files = [f"model-{k + 1:05d}-of-{len(shards):05d}.safetensors" for k in range(len(shards))]
        total = sum(write_safetensors(out / f, s) for f, s in zip(files, shards))
        weight_map = {n: f for f, s in zip(files, shards) for n in s}
        index = {"metadata": {"total_size": total}, "weight_map": weight_map}
        write_json(out / "model.safetensors.index.json", index)
    else:
        write_safetensors(out / "model.safetensors", tensors)
    np.save(out / "reference" / "X.npy", x.numpy())
    for i in range(LAYERS):
        np.save(out / "reference" / f"Y_layer{i}.npy", reference(tensors, spec, x, i))
    print("wrote", out)


# ---- --check: an independent reader

# safetensors dtype -> (numpy little-endian type read, bytes per element)
READ_DTYPE = {"F64": ("<f8", 8), "F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2), "I64": ("<i8", 8),
              "F8_E4M3": ("u1", 1), "U8": ("u1", 1)}  # F8_E4M3: the codes, decoded by np_e4m3; U8: MXFP4's


def read_safetensors(path):
    """({name: numpy array (BF16 widened to float32)}, {name: dtype}, __metadata__, bytes of data),
    checking the file's structure on the way."""
    raw = path.read_bytes()
    assert len(raw) >= 8, f"{path}: shorter than the header length"
    (n,) = struct.unpack("<Q", raw[:8])
    assert 8 + n <= len(raw), f"{path}: header length {n} past the end"
    assert n % 8 == 0, f"{path}: the data does not start at a multiple of 8"
    text = raw[8:8 + n].decode("utf-8")
    assert text.startswith("{") and text.rstrip(" ").endswith("}"), f"{path}: header not a padded JSON object"
    header = json.loads(text)
    meta = header.pop("__metadata__", {})
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()), f"{path}: __metadata__"
    data, end, out, dtypes = raw[8 + n:], 0, {}, {}
    for name, entry in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
        assert set(entry) == {"dtype", "shape", "data_offsets"}, f"{path}: {name}: keys {sorted(entry)}"
        begin, stop = entry["data_offsets"]
        assert begin == end, f"{path}: {name} starts at {begin}, not at {end}"
        assert stop <= len(data), f"{path}: {name} ends at {stop}, past the end of the data ({len(data)})"
        np_type, size = READ_DTYPE[entry["dtype"]]
        assert stop - begin == size * math.prod(entry["shape"]), f"{path}: {name}: size"
        a = np.frombuffer(data[begin:stop], dtype=np_type).reshape(entry["shape"])
        if entry["dtype"] == "BF16":  # bfloat16 is float32's top half
            a = (a.astype(np.uint32) << 16).view(np.float32)
        out[name], dtypes[name], end = a, entry["dtype"], stop
    assert end == len(data), f"{path}: {len(data) - end} bytes after the last tensor"
    return out, dtypes, meta, end


def check_model(name, spec):
    out, config = OUT / name, spec["config"]
    assert json.loads((out / "config.json").read_text()) == config, f"{name}: config.json"
    index = out / "model.safetensors.index.json"
    tensors, dtypes = {}, {}
    if index.exists():
        idx = json.loads(index.read_text())
        assert set(idx) == {"metadata", "weight_map"}, f"{name}: index keys"
        files, total = sorted(set(idx["weight_map"].values())), 0
        for f in files:
            part, types, meta, size = read_safetensors(out / f)
            assert meta == {"format": "pt"}, f"{name}/{f}: metadata"
            assert all(idx["weight_map"][t] == f for t in part), f"{name}/{f}: tensor in the wrong shard"
            assert not set(part) & set(tensors), f"{name}: a tensor in two shards"
            tensors.update(part)
            dtypes.update(types)
            total += size
        assert set(tensors) == set(idx["weight_map"]), f"{name}: the weight map and the shards differ"
        assert idx["metadata"] == {"total_size": total}, f"{name}: {idx['metadata']}, data {total} bytes"
        gate = f"model.layers.{LAYERS - 1}.mlp."
        assert idx["weight_map"][gate + "gate_proj.weight"] != idx["weight_map"][gate + "up_proj.weight"]
    else:
        tensors, dtypes, meta, _ = read_safetensors(out / "model.safetensors")
        assert meta == {"format": "pt"}, f"{name}: metadata"
    assert list(out.glob("*.safetensors")) and not (index.exists() and (out / "model.safetensors").exists())
    x = np.load(out / "reference" / "X.npy")
    d = config.get("hidden_size", config.get("n_embd"))
    assert x.dtype == np.float32 and x.shape == (TOKENS, d), f"{name}: X.npy"
    back = {k: torch.from_numpy(np.array(v)) for k, v in tensors.items()}
    assert set(dtypes.values()) == {ST_DTYPE[spec["dtype"]]}, f"{name}: dtypes {set(dtypes.values())}"
    assert TORCH_DTYPE[spec["dtype"]] == config["torch_dtype"], f"{name}: torch_dtype"
    for i in range(LAYERS):
        check_shapes(config, layer_params(back, spec, i), f"{name}: layer {i}")
        y = np.load(out / "reference" / f"Y_layer{i}.npy")
        assert y.dtype == np.float64 and y.shape == (TOKENS, d), f"{name}: Y_layer{i}.npy"
        again = reference(back, spec, torch.from_numpy(x), i)
        assert again.tobytes() == y.tobytes(), f"{name}: layer {i}: the reference from the file differs"
        assert abs(numpy_block(config, layer_params(back, spec, i), x.astype(np.float64)) - y).max() \
            <= 1e-12 * max(1.0, abs(y).max()), f"{name}: layer {i}: the numpy recomputation differs"
    print("checked", out, f"({len(tensors)} tensors)")


def check_shapes(config, p, what):
    """The MLP's shapes against config.json, read as a loader reads it (n_inner null: 4 * n_embd)."""
    if "n_embd" in config:  # GPT-2's Conv1D: (in, out)
        d, d_ff = config["n_embd"], config["n_inner"] or 4 * config["n_embd"]
        want = {"mlp.c_fc.weight": (d, d_ff), "mlp.c_fc.bias": (d_ff,), "mlp.c_proj.weight": (d_ff, d),
                "mlp.c_proj.bias": (d,), "ln_2.weight": (d,), "ln_2.bias": (d,)}
    elif "layer_norm_eps" in config:
        d, d_ff = config["hidden_size"], config["intermediate_size"]
        want = {"intermediate.dense.weight": (d_ff, d), "intermediate.dense.bias": (d_ff,),
                "output.dense.weight": (d, d_ff), "output.dense.bias": (d,),
                "output.LayerNorm.weight": (d,), "output.LayerNorm.bias": (d,)}
    else:
        d, d_ff = config["hidden_size"], config["intermediate_size"]
        want = {"mlp.gate_proj.weight": (d_ff, d), "mlp.up_proj.weight": (d_ff, d),
                "mlp.down_proj.weight": (d, d_ff), "post_attention_layernorm.weight": (d,)}
    got = {k: tuple(p[k].shape) for k in want if k in p}
    assert got == want, f"{what}: shapes {got}, config says {want}"


def numpy_block(config, p, x):
    """The blocks again in numpy, from the formulas: a check on the torch code's transcription."""
    p = {k: v.numpy() for k, v in p.items()}
    erf = np.vectorize(math.erf)
    exact = lambda v: 0.5 * v * (1 + erf(v / math.sqrt(2)))
    tanh = lambda v: 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))

    def ln(v, w, b, eps):
        mu = v.mean(-1, keepdims=True)
        return (v - mu) / np.sqrt(((v - mu) ** 2).mean(-1, keepdims=True) + eps) * w + b

    act = {"gelu": exact, "gelu_new": tanh, "silu": lambda v: v / (1 + np.exp(-v))}[
        config.get("hidden_act", config.get("activation_function"))]
    if config["model_type"] == "gemma":  # gelu in Gemma 1.0's config; the model runs the tanh form
        act = tanh
    if "layer_norm_eps" in config:  # BERT, RoBERTa: the weights are (out, in)
        h = act(x @ p["intermediate.dense.weight"].T + p["intermediate.dense.bias"])
        h = h @ p["output.dense.weight"].T + p["output.dense.bias"]
        return ln(x + h, p["output.LayerNorm.weight"], p["output.LayerNorm.bias"], config["layer_norm_eps"])
    if "layer_norm_epsilon" in config:  # GPT-2: Conv1D weights are (in, out)
        h = ln(x, p["ln_2.weight"], p["ln_2.bias"], config["layer_norm_epsilon"])
        h = act(h @ p["mlp.c_fc.weight"] + p["mlp.c_fc.bias"])
        return x + h @ p["mlp.c_proj.weight"] + p["mlp.c_proj.bias"]
    w = p["post_attention_layernorm.weight"]
    w = 1 + w if config["model_type"] == "gemma" else w
    h = x / np.sqrt((x ** 2).mean(-1, keepdims=True) + config["rms_norm_eps"]) * w
    h = act(h @ p["mlp.gate_proj.weight"].T) * (h @ p["mlp.up_proj.weight"].T)
    return x + h @ p["mlp.down_proj.weight"].T


# ---- writing the second round's checkpoints

def stored_tensors(spec):
    """The tensors as the checkpoint stores them: floating ones in the checkpoint's dtype (but those
    spec["keep"] names, e.g. DeepSeek-V3's float32 e_score_correction_bias; int64 buffers as they are),
    then, for FP8, the release's weights quantised with their weight_scale_inv."""
    keep = spec.get("keep", lambda name: False)
    t = {k: v.to(spec["dtype"]) if v.is_floating_point() and not keep(k) else v
         for k, v in spec["tensors"]().items()}
    if spec.get("fp8"):
        for name in [n for n in t if fp8_quantized(n)]:
            t[name], t[name + "_scale_inv"] = quantize_fp8(t[name], spec["fp8"])
    if spec.get("mxfp4"):  # (E, in, out) as GptOssExperts holds them, (E, out, in) as the release stores them
        for name in [n for n in t if mxfp4_quantized(n)]:
            t[name + "_blocks"], t[name + "_scales"] = quantize_mxfp4(t.pop(name).transpose(1, 2))
    return t


def prefixed(tensors, prefix):
    """The tensors under prefix, by their names below it, widened to float64."""
    return {k[len(prefix):]: v.to(torch.float64) for k, v in tensors.items() if k.startswith(prefix)}


def reference_name(stack_name, what, i=None):
    base = what if stack_name is None else f"{what}_{stack_name}"
    return base if i is None else f"{base}_layer{i}"


def references(tensors, spec, xs):
    """{file stem: array} for every stack and layer, and the first reason to draw again (MoE), or None.
    The weights are the stored ones, 16-bit values widened exactly, FP8 ones dequantised."""
    weights = dequantize_fp8(tensors, spec["fp8"]) if spec.get("fp8") else dict(tensors)
    for name in [n[:-len("_blocks")] for n in tensors if n.endswith("_blocks")]:  # MXFP4, as GptOssExperts holds it
        weights[name] = torch.from_numpy(
            dequantize_mxfp4(weights.pop(name + "_blocks"), weights.pop(name + "_scales"))).transpose(1, 2)
    refs, problem = {}, None
    with torch.no_grad():
        for st in spec["stacks"]:
            x = xs[st["name"]].to(torch.float64)
            for i in range(st["layers"]):
                p, s = prefixed(weights, st["layer"].format(i)), st["settings"]
                if st["kind"] == "moe":
                    y, experts, w = moe_block(x, p, s, i)
                    if experts is not None:
                        refs[f"experts_layer{i}"], refs[f"weights_layer{i}"] = experts.numpy(), w.numpy()
                        problem = problem or routing_problems(moe_norm(x, p, s), p, s)
                else:
                    y = BLOCKS[st["kind"]](x, p, st["settings"])
                refs[reference_name(st["name"], "Y", i)] = y.numpy()
    return refs, problem


def split_at(tensors, cut):
    """Two shards in state-dict order, cut after the tensor named cut."""
    names = list(tensors)
    k = names.index(cut) + 1
    return [{n: tensors[n] for n in names[:k]}, {n: tensors[n] for n in names[k:]}]


def write_new_model(name, spec, seed):
    """As write_model; a MoE draw with near-ties or idle experts is drawn again with seed + 1000."""
    tokens = spec.get("tokens", TOKENS)
    for attempt in range(200):
        torch.manual_seed(seed + 1000 * attempt)
        tensors = stored_tensors(spec)
        xs = {st["name"]: (torch.randn(tokens, st["d"]) * 2).to(torch.float32) for st in spec["stacks"]}
        refs, problem = references(tensors, spec, xs)
        if problem is None:
            break
    else:
        raise RuntimeError(f"{name}: no draw without near-ties in 200 ({problem})")
    out = OUT / name
    (out / "reference").mkdir(parents=True, exist_ok=True)
    for stale in list(out.glob("*.safetensors*")) + list((out / "reference").glob("*.npy")):
        stale.unlink()
    write_json(out / "config.json", spec["config"])
    if spec.get("shard_cut"):
        shards = split_at(tensors, spec["shard_cut"])
        files = [f"model-{k + 1:05d}-of-{len(shards):05d}.safetensors" for k in range(len(shards))]
        total = sum(write_safetensors(out / f, s) for f, s in zip(files, shards))
        index = {"metadata": {"total_size": total}, "weight_map": {n: f for f, s in zip(files, shards) for n in s}}
        write_json(out / "model.safetensors.index.json", index)
    else:
        write_safetensors(out / "model.safetensors", tensors)
    if spec.get("refuse"):
        (out / "reference").rmdir()
    else:
        for st in spec["stacks"]:
            np.save(out / "reference" / f"{reference_name(st['name'], 'X')}.npy", xs[st["name"]].numpy())
        for stem, a in refs.items():
            np.save(out / "reference" / f"{stem}.npy", a)
    print("wrote", out, f"(seed {seed + 1000 * attempt})")


# ---- --check for the second round

def read_checkpoint(out):
    """All tensors of a folder (one file, or the index's shards, each checked against the index)."""
    index = out / "model.safetensors.index.json"
    if not index.exists():
        tensors, dtypes, meta, _ = read_safetensors(out / "model.safetensors")
        assert meta == {"format": "pt"}, f"{out}: metadata"
        return tensors, dtypes
    idx = json.loads(index.read_text())
    assert set(idx) == {"metadata", "weight_map"}, f"{out}: index keys"
    assert not (out / "model.safetensors").exists()
    tensors, dtypes, total = {}, {}, 0
    for f in sorted(set(idx["weight_map"].values())):
        part, types, meta, size = read_safetensors(out / f)
        assert meta == {"format": "pt"}, f"{out}/{f}: metadata"
        assert all(idx["weight_map"][t] == f for t in part), f"{out}/{f}: tensor in the wrong shard"
        assert not set(part) & set(tensors), f"{out}: a tensor in two shards"
        tensors.update(part)
        dtypes.update(types)
        total += size
    assert set(tensors) == set(idx["weight_map"]), f"{out}: the weight map and the shards differ"
    assert idx["metadata"] == {"total_size": total}, f"{out}: {idx['metadata']}, data {total} bytes"
    return tensors, dtypes


def expected_dtype(spec, name):
    if name.endswith("e_score_correction_bias") or name.endswith("_scale_inv"):
        return "F32"
    if name.endswith("position_ids"):
        return "I64"
    if spec.get("fp8") and fp8_quantized(name):
        return "F8_E4M3"
    if spec.get("mxfp4") and (name.endswith("_blocks") or name.endswith("_scales")):
        return "U8"
    return ST_DTYPE[spec["dtype"]]


# The vision-language models' language models: the config class's default model_type for text_config.
VLM_TEXT = {"llava": "llama", "llava_next": "llama", "mistral3": "mistral", "paligemma": "gemma", "internvl": "qwen2",
            "idefics3": "llama", "smolvlm": "llama"}

# The config classes' defaults a loader needs for keys a config.json leaves out.
DEFAULTS = {
    "llama": dict(hidden_act="silu", rms_norm_eps=1e-6),
    "jamba": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, hidden_act="silu", rms_norm_eps=1e-6,
                  num_experts_per_tok=2, num_experts=16, expert_layer_period=2, expert_layer_offset=1),
    "gpt_oss": dict(num_hidden_layers=36, num_local_experts=128, hidden_size=2880, intermediate_size=2880,
                    hidden_act="silu", rms_norm_eps=1e-5, num_experts_per_tok=4, swiglu_limit=7.0, swiglu_alpha=1.702),
    "llama4_text": dict(hidden_size=5120, intermediate_size=8192, intermediate_size_mlp=16384, num_hidden_layers=48,
                        hidden_act="silu", rms_norm_eps=1e-5, num_experts_per_tok=1, num_local_experts=16,
                        moe_layers=None, interleave_moe_layer_step=1),
    "gemma": dict(hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6),
    "gemma2": dict(hidden_size=2304, intermediate_size=9216, num_hidden_layers=26, rms_norm_eps=1e-6,
                   hidden_activation="gelu_pytorch_tanh"),
    "gemma3_text": dict(hidden_size=2304, intermediate_size=9216, num_hidden_layers=26, rms_norm_eps=1e-6,
                        hidden_activation="gelu_pytorch_tanh"),
    "siglip_vision_model": dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                                layer_norm_eps=1e-6, hidden_act="gelu_pytorch_tanh"),
    "clip_text_model": dict(hidden_size=512, intermediate_size=2048, num_hidden_layers=12, layer_norm_eps=1e-5,
                            hidden_act="quick_gelu"),
    "clip_vision_model": dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, layer_norm_eps=1e-5,
                              hidden_act="quick_gelu"),
    "t5": dict(feed_forward_proj="relu", layer_norm_epsilon=1e-6, num_decoder_layers=None),
    "mt5": dict(feed_forward_proj="gated-gelu", layer_norm_epsilon=1e-6, num_decoder_layers=None),
    "umt5": dict(feed_forward_proj="gated-gelu", layer_norm_epsilon=1e-6, num_decoder_layers=None),
    "vit": dict(hidden_act="gelu", layer_norm_eps=1e-12),
    "gpt_neox": dict(hidden_act="gelu", layer_norm_eps=1e-5),
    "phi": dict(hidden_act="gelu_new", layer_norm_eps=1e-5),
    "mpnet": dict(hidden_act="gelu", layer_norm_eps=1e-12),
    "electra": dict(hidden_act="gelu", layer_norm_eps=1e-12),
    "deberta-v2": dict(hidden_act="gelu", layer_norm_eps=1e-7),
    "distilbert": dict(activation="gelu", dim=768, hidden_dim=3072, n_layers=6),
    "starcoder2": dict(hidden_act="gelu_pytorch_tanh", norm_epsilon=1e-5),
    "modernbert": dict(hidden_activation="gelu", norm_eps=1e-5, norm_bias=False),
    "gptj": dict(n_embd=4096, n_inner=None, n_layer=28, layer_norm_epsilon=1e-5, activation_function="gelu_new"),
    "gpt_bigcode": dict(n_embd=768, n_inner=None, n_layer=12, layer_norm_epsilon=1e-5,
                        activation_function="gelu_pytorch_tanh"),
    "bloom": dict(hidden_size=64, n_layer=2, layer_norm_epsilon=1e-5, apply_residual_connection_post_layernorm=False,
                  pretraining_tp=1, slow_but_exact=False),
    "falcon": dict(hidden_size=4544, num_hidden_layers=32, layer_norm_epsilon=1e-5, ffn_hidden_size=None,
                   activation="gelu", bias=False, parallel_attn=True, new_decoder_architecture=False,
                   num_ln_in_parallel_attn=None),
    "stablelm": dict(hidden_act="silu", layer_norm_eps=1e-5),
    "cohere": dict(hidden_act="silu", layer_norm_eps=1e-5),
    "olmo2": dict(hidden_act="silu", rms_norm_eps=1e-5),
    "granite": dict(hidden_act="silu", rms_norm_eps=1e-6, residual_multiplier=1.0),
    "glm4": dict(hidden_act="silu", rms_norm_eps=1.5625e-7),
    "qwen2_moe": dict(norm_topk_prob=False, decoder_sparse_step=1, mlp_only_layers=None,
                      shared_expert_intermediate_size=5632),
    "qwen3_moe": dict(norm_topk_prob=False, decoder_sparse_step=1, mlp_only_layers=None),
    "olmoe": dict(norm_topk_prob=False),
    "granitemoe": dict(num_local_experts=8, num_experts_per_tok=2, residual_multiplier=1.0),
    "phimoe": dict(num_local_experts=16, num_experts_per_tok=2, router_jitter_noise=0.01),
    "granitemoeshared": dict(num_local_experts=8, num_experts_per_tok=2, residual_multiplier=1.0,
                             shared_intermediate_size=0),
    "granitemoehybrid": dict(num_local_experts=8, num_experts_per_tok=2, residual_multiplier=1.0,
                             shared_intermediate_size=1024),
    "deepseek_v2": dict(first_k_dense_replace=0, routed_scaling_factor=1.0, topk_method="greedy",
                        n_shared_experts=2),
    "deepseek_v3": dict(first_k_dense_replace=3, routed_scaling_factor=2.5, n_group=8, topk_group=4,
                        norm_topk_prob=True, n_shared_experts=1),
}


def hf_settings(config, st):
    """A stack's block settings read from config.json as a loader must: in text_config / vision_config
    where the model keeps them, with the config classes' defaults for the keys left out, T5's
    feed_forward_proj parsed ("gated-gelu" is the tanh GELU), Whisper's LayerNorm eps (1e-5, fixed in
    code), Gemma's hidden_activation, the MoE layers' sparse/dense rule."""
    mt, name = config["model_type"], st["name"]
    if mt == "gemma3":
        c = config.get("text_config" if name == "text" else "vision_config", {})
        mt = c.get("model_type", "gemma3_text" if name == "text" else "siglip_vision_model")
    elif mt == "clip":
        c = config.get(f"{name}_config", {})
        mt = f"clip_{name}_model"
    elif mt == "llama4":  # Llama4Config: text_config, else Llama4TextConfig's defaults
        c = config.get("text_config") or {}
        mt = c.get("model_type", "llama4_text")
    elif mt in VLM_TEXT:  # the language model's config class: text_config's model_type, else the default
        c = config.get("text_config") or {}
        mt = c.get("model_type", VLM_TEXT[mt])
    elif mt in ("qwen2_vl", "qwen2_5_vl"):  # text_config, or (older configs) the top level
        c = config.get("text_config") or config
    else:
        c = config

    def get(key, fallback=None):
        return c[key] if key in c else DEFAULTS.get(mt, {}).get(key, fallback)

    if mt in ("gemma2", "gemma3_text", "gemma"):
        return dict(layers=get("num_hidden_layers"), d=get("hidden_size"), d_ff=get("intermediate_size"),
                    eps=get("rms_norm_eps"), act=get("hidden_activation"))
    if mt in ("llama", "mistral", "qwen2", "qwen2_vl", "qwen2_5_vl"):
        return dict(layers=get("num_hidden_layers"), d=get("hidden_size"), d_ff=get("intermediate_size"),
                    eps=get("rms_norm_eps"), act=get("hidden_act"))
    if mt == "starcoder2":
        return dict(layers=get("num_hidden_layers"), d=get("hidden_size"), d_ff=get("intermediate_size"),
                    eps=get("norm_epsilon"), act=get("hidden_act"))
    if mt in ("gptj", "gpt_bigcode"):  # n_inner null: 4 n_embd; GPT-J's parallel block reads ln_1
        d = get("n_embd")
        fc = ("mlp.fc_in", "mlp.fc_out") if mt == "gptj" else ("mlp.c_fc", "mlp.c_proj")
        return dict(layers=get("n_layer"), d=d, d_ff=get("n_inner") or 4 * d, eps=get("layer_norm_epsilon"),
                    act=get("activation_function"), names=("ln_1" if mt == "gptj" else "ln_2",) + fc)
    if mt == "bloom":  # BloomConfig: a legacy n_embed wins; 4 hidden_size and bloom_gelu in BloomMLP's code
        assert not get("apply_residual_connection_post_layernorm"), "its MLP's residual is LN(x): no fixture"
        assert not (get("pretraining_tp") > 1 and get("slow_but_exact")), "dense_4h_to_h without bias: no fixture"
        d = c.get("n_embed") or get("hidden_size")
        return dict(layers=get("num_hidden_layers", get("n_layer")), d=d, d_ff=4 * d, eps=get("layer_norm_epsilon"),
                    act="bloom_gelu", names=("post_attention_layernorm", "mlp.dense_h_to_4h", "mlp.dense_4h_to_h"))
    if mt == "falcon":  # FalconDecoderLayer: the LayerNorm its MLP reads, from three keys
        d = c.get("n_embed") or get("hidden_size")
        new_arch, parallel = get("new_decoder_architecture"), get("parallel_attn")
        norms = get("num_ln_in_parallel_attn") or (2 if new_arch else None)
        assert parallel or not new_arch, "the new architecture without parallel_attn fails in Transformers"
        assert not (parallel and new_arch and norms not in (1, 2)), "its forward leaves the MLP's input unset"
        assert not (parallel and not new_arch and norms == 2), "its forward reads input_layernorm, not built"
        norm = "post_attention_layernorm" if not parallel else "ln_mlp" if new_arch and norms == 2 \
            else "input_layernorm"
        return dict(layers=get("num_hidden_layers"), d=d, d_ff=get("ffn_hidden_size") or 4 * d,
                    eps=get("layer_norm_epsilon"), act=get("activation"), biases=get("bias"),
                    names=(norm, "mlp.dense_h_to_4h", "mlp.dense_4h_to_h"))
    if mt == "modernbert":
        return dict(layers=get("num_hidden_layers"), d=get("hidden_size"), d_ff=get("intermediate_size"),
                    eps=get("norm_eps"), act=get("hidden_activation"))
    if mt in ("stablelm", "cohere"):
        return dict(layers=get("num_hidden_layers"), d=get("hidden_size"), d_ff=get("intermediate_size"),
                    eps=get("layer_norm_eps"), act=get("hidden_act"))
    if mt == "olmo":  # OlmoLayerNorm's eps is fixed in code
        return dict(layers=get("num_hidden_layers"), d=get("hidden_size"), d_ff=get("intermediate_size"),
                    eps=1e-5, act=get("hidden_act"))
    if mt in ("olmo2", "glm4"):
        return dict(layers=get("num_hidden_layers"), d=get("hidden_size"), d_ff=get("intermediate_size"),
                    eps=get("rms_norm_eps"), act=get("hidden_act"))
    if mt == "granite":
        return dict(layers=get("num_hidden_layers"), d=get("hidden_size"), d_ff=get("intermediate_size"),
                    eps=get("rms_norm_eps"), act=get("hidden_act"), scale=get("residual_multiplier"))
    if mt == "distilbert":  # its LayerNorm eps is fixed in code
        return dict(layers=get("n_layers"), d=get("dim"), d_ff=get("hidden_dim"), eps=1e-12, act=get("activation"))
    if mt in ("siglip_vision_model", "clip_text_model", "clip_vision_model", "vit", "gpt_neox", "phi", "mpnet",
              "electra", "deberta-v2"):
        return dict(layers=get("num_hidden_layers"), d=get("hidden_size"), d_ff=get("intermediate_size"),
                    eps=get("layer_norm_eps"), act=get("hidden_act"))
    if mt in ("phi3", "qwen3"):
        return dict(layers=c["num_hidden_layers"], d=c["hidden_size"], d_ff=c["intermediate_size"],
                    eps=c["rms_norm_eps"], act=c["hidden_act"])
    if mt in ("t5", "mt5", "umt5"):
        proj = get("feed_forward_proj").split("-")
        assert len(proj) <= 2 and (len(proj) == 1 or proj[0] == "gated"), f"feed_forward_proj {proj}"
        act = "gelu_new" if get("feed_forward_proj") == "gated-gelu" else proj[-1]
        layers = c["num_layers"] if name == "encoder" else (get("num_decoder_layers") or c["num_layers"])
        return dict(layers=layers, d=c["d_model"], d_ff=c["d_ff"], eps=get("layer_norm_epsilon"), act=act,
                    gated=proj[0] == "gated")
    if mt == "whisper":
        return dict(layers=c[f"{name}_layers"], d=c["d_model"], d_ff=c[f"{name}_ffn_dim"], eps=1e-5,
                    act=c["activation_function"])
    if mt == "dbrx":  # DbrxConfig's and, for the MLP, DbrxFFNConfig's keys; nn.LayerNorm's eps, fixed in code
        ffn = c.get("ffn_config") or {}
        fget = lambda key, fallback: ffn[key] if key in ffn else fallback  # noqa: E731
        p = fget("moe_normalize_expert_weights", 1.0)
        assert p in (None, 1.0), "a p-norm other than 1: no fixture"
        n = get("n_layers", 24)
        return dict(layers=n, d=get("d_model", 2048), eps=1e-5, act=(fget("ffn_act_fn", None) or {}).get("name", "silu"),
                    k=fget("moe_top_k", 1), experts=fget("moe_num_experts", 4), d_expert=fget("ffn_hidden_size", 3584),
                    renorm=p is not None, router="softmax", sparse=[True] * n, norm="layer_nobias",
                    ff_norm="norm_attn_norm.norm_2")
    if mt == "jamba":  # JambaConfig.layers_num_experts: MoE where i % expert_layer_period == expert_layer_offset
        n, e = get("num_hidden_layers"), get("num_experts")
        period, offset = get("expert_layer_period"), get("expert_layer_offset")
        return dict(layers=n, d=get("hidden_size"), eps=get("rms_norm_eps"), act=get("hidden_act"),
                    k=get("num_experts_per_tok"), experts=e, d_expert=get("intermediate_size"),
                    d_dense=get("intermediate_size"), renorm=False, router="softmax",
                    sparse=[e > 1 and i % period == offset for i in range(n)])
    if mt == "gpt_oss":  # GptOssConfig: every layer a mixture of experts
        n = get("num_hidden_layers")
        assert get("swiglu_limit") == GPT_OSS_LIMIT and get("swiglu_alpha") == GPT_OSS_ALPHA, "no fixture"
        return dict(layers=n, d=get("hidden_size"), eps=get("rms_norm_eps"), act=get("hidden_act"),
                    k=get("num_experts_per_tok"), experts=get("num_local_experts"), d_expert=get("intermediate_size"),
                    router="gpt_oss", sparse=[True] * n)
    if mt == "llama4_text":  # Llama4TextConfig: moe_layers, else every interleave_moe_layer_step-th layer
        n, step = get("num_hidden_layers"), get("interleave_moe_layer_step")
        moe = get("moe_layers")
        moe = moe if moe is not None else list(range(step - 1, n, step))
        return dict(layers=n, d=get("hidden_size"), eps=get("rms_norm_eps"), act=get("hidden_act"),
                    k=get("num_experts_per_tok"), experts=get("num_local_experts"), d_expert=get("intermediate_size"),
                    d_dense=get("intermediate_size_mlp"), shared=get("intermediate_size"), renorm=False,
                    router="llama4", sparse=[i in moe for i in range(n)], weigh_input=True)
    n = c["num_hidden_layers"]
    s = dict(layers=n, d=c["hidden_size"], eps=c["rms_norm_eps"], act=c["hidden_act"], k=c["num_experts_per_tok"])
    if mt == "mixtral":
        s.update(experts=c["num_local_experts"], d_expert=c["intermediate_size"], renorm=True, router="softmax",
                 sparse=[True] * n)
    elif mt == "olmoe":
        s.update(experts=c["num_experts"], d_expert=c["intermediate_size"], renorm=get("norm_topk_prob"),
                 router="softmax", sparse=[True] * n)
    elif mt in ("qwen2_moe", "qwen3_moe"):
        only, step = get("mlp_only_layers") or [], get("decoder_sparse_step")
        s.update(experts=c["num_experts"], d_expert=c["moe_intermediate_size"], d_dense=c["intermediate_size"],
                 renorm=get("norm_topk_prob"), router="softmax",
                 sparse=[i not in only and c["num_experts"] > 0 and (i + 1) % step == 0 for i in range(n)])
        if mt == "qwen2_moe":
            s.update(shared=get("shared_expert_intermediate_size"), shared_gate=True)
    elif mt == "phimoe":  # PhimoeDecoderLayer: nn.LayerNorm(eps=rms_norm_eps); the sparsemixer picks two
        s.update(experts=get("num_local_experts"), d_expert=c["intermediate_size"], renorm=False, router="sparsemixer",
                 sparse=[True] * n, norm="layer", jitter=get("router_jitter_noise"))
    elif mt in ("granitemoe", "granitemoeshared", "granitemoehybrid"):
        e = get("num_local_experts")
        s.update(experts=e, d_expert=c["intermediate_size"], renorm=True, router="granite", sparse=[e > 0] * n,
                 granite=True, residual_multiplier=get("residual_multiplier"), k=get("num_experts_per_tok"))
        if mt != "granitemoe":  # (GraniteMoeSharedMLP: none for 0)
            s.update(shared=get("shared_intermediate_size"))
        if mt == "granitemoehybrid":  # the dense layers of Granite 4 without experts: the shared MLP
            s.update(d_dense=get("shared_intermediate_size"))
    else:  # deepseek_v2, deepseek_v3: moe_layer_freq is not read by Transformers
        s.update(experts=c["n_routed_experts"], d_expert=c["moe_intermediate_size"], d_dense=c["intermediate_size"],
                 scale=get("routed_scaling_factor"), shared=c["moe_intermediate_size"] * get("n_shared_experts"),
                 sparse=[i >= get("first_k_dense_replace") for i in range(n)])
        if mt == "deepseek_v2":
            assert get("topk_method") == "greedy", "group_limited_greedy: no fixture"
            s.update(router="deepseek_v2", renorm=False)
        else:
            s.update(router="deepseek_v3", renorm=get("norm_topk_prob"), groups=get("n_group"),
                     topk_group=get("topk_group"))
    return s


def check_settings(config, st, what):
    got = hf_settings(config, st)
    want = dict({k: st["settings"][k] for k in got if k != "layers"}, layers=st["layers"])
    assert got == want, f"{what}: config.json says {got}, the fixture was made with {want}"


def block_shapes(kind, s, p, what):
    """The layer's feed-forward tensors against the settings (checked against config.json above)."""
    d, want = s["d"], {}
    if kind in ("gemma2", "gated", "gemma"):
        f = s["d_ff"]
        want = {"mlp.gate_proj.weight": (f, d), "mlp.up_proj.weight": (f, d), "mlp.down_proj.weight": (d, f)}
        norms = ("pre_feedforward_layernorm", "post_feedforward_layernorm") if kind == "gemma2" \
            else ("post_attention_layernorm",)
        want.update({f"{n}.weight": (d,) for n in norms})
    elif kind == "phi3":
        f = s["d_ff"]
        want = {"mlp.gate_up_proj.weight": (2 * f, d), "mlp.down_proj.weight": (d, f),
                "post_attention_layernorm.weight": (d,)}
    elif kind == "t5":
        f = s["d_ff"]
        wi = ("wi_0", "wi_1") if s["gated"] else ("wi",)
        want = dict({f"DenseReluDense.{w}.weight": (f, d) for w in wi},
                    **{"DenseReluDense.wo.weight": (d, f), "layer_norm.weight": (d,)})
    elif kind == "ln_gated":
        (gate, up, down), f, norm = s["names"], s["d_ff"], s["norm"]
        want = {f"{gate}.weight": (2 * f if up is None else f, d), f"{down}.weight": (d, f)}
        if up is not None:
            want[f"{up}.weight"] = (f, d)
        if norm:
            want[f"{norm}.weight"] = (d,)
            if s["norm_bias"]:
                want[f"{norm}.bias"] = (d,)
        assert not (norm and not s["norm_bias"] and f"{norm}.bias" in p), f"{what}: a bias the config says is not"
    elif kind == "granite":
        f = s["d_ff"]
        want = {"mlp.gate_proj.weight": (f, d), "mlp.up_proj.weight": (f, d), "mlp.down_proj.weight": (d, f),
                "post_attention_layernorm.weight": (d,)}
    elif kind == "glm4":
        f = s["d_ff"]
        want = {"mlp.gate_up_proj.weight": (2 * f, d), "mlp.down_proj.weight": (d, f),
                "post_attention_layernorm.weight": (d,), "post_mlp_layernorm.weight": (d,)}
    elif kind == "olmo2":
        f = s["d_ff"]
        want = {"mlp.gate_proj.weight": (f, d), "mlp.up_proj.weight": (f, d), "mlp.down_proj.weight": (d, f),
                "post_feedforward_layernorm.weight": (d,)}
    elif kind in ("ln_mlp", "post_ln_mlp"):
        (norm, fc1, fc2), f = s["names"], s["d_ff"]
        want = {f"{norm}.weight": (d,), f"{norm}.bias": (d,), f"{fc1}.weight": (f, d), f"{fc2}.weight": (d, f)}
        if s.get("biases", True):
            want.update({f"{fc1}.bias": (f,), f"{fc2}.bias": (d,)})
        assert s.get("biases", True) or f"{fc1}.bias" not in p, f"{what}: a bias the config says is not"
    got = {k: tuple(p[k].shape) for k in want if k in p}
    assert got == want, f"{what}: shapes {got}, config says {want}"


def moe_shapes(s, p, i, what):
    d, e, f, names = s["d"], s["experts"], s["d_expert"], s["names"]
    want = {s["ff_norm"] + ".weight": (d,)}
    if s["norm"] == "layer":
        want[s["ff_norm"] + ".bias"] = (d,)
    if not s["sparse"][i]:
        g = s["d_dense"]
        if s["granite"]:
            want.update({GRANITE_MLP + "input_linear.weight": (2 * g, d), GRANITE_MLP + "output_linear.weight": (d, g)})
        else:
            m = s["mlp"]
            want.update({f"{m}gate_proj.weight": (g, d), f"{m}up_proj.weight": (g, d), f"{m}down_proj.weight": (d, g)})
        assert not any(".experts." in k or "block_sparse_moe." in k or "router" in k for k in p), \
            f"{what}: experts in a dense layer"
    else:
        want[names["router"]] = (e, d)
        if "rows" in names:
            want.update({n: (e * f, d) for n in names["rows"]})
        elif "gate_up" in names and names.get("in_out"):
            want.update({names["gate_up"]: (e, d, 2 * f), names["down"]: (e, f, d)})
            if names.get("interleaved"):
                want.update({names["gate_up"] + "_bias": (e, 2 * f), names["down"] + "_bias": (e, d)})
        elif "gate_up" in names:
            want.update({names["gate_up"]: (e, 2 * f, d), names["down"]: (e, d, f)})
        else:
            for j in range(e):
                gate, up, down = (names["expert"].format(j) + n + ".weight" for n in names["proj"])
                want.update({gate: (f, d), up: (f, d), down: (d, f)})
        if s["shared"] and s["granite"]:
            g = s["shared"]
            want.update({GRANITE_MLP + "input_linear.weight": (2 * g, d), GRANITE_MLP + "output_linear.weight": (d, g)})
        elif s["shared"]:
            n, g = s["shared_name"], s["shared"]
            want.update({f"{n}gate_proj.weight": (g, d), f"{n}up_proj.weight": (g, d), f"{n}down_proj.weight": (d, g)})
        if s["shared_gate"]:
            want["mlp.shared_expert_gate.weight"] = (1, d)
        if s["router"] == "deepseek_v3":
            want["mlp.gate.e_score_correction_bias"] = (e,)
        if "router_bias" in names:
            want[names["router_bias"]] = (e,)
    got = {k: tuple(p[k].shape) for k in want if k in p}
    assert got == want, f"{what}: shapes {got}, config says {want}"


def np_e4m3(codes):
    """E4M3FN codes -> float64, from the format: sign, 4 exponent bits (bias 7), 3 mantissa bits."""
    c = codes.astype(np.int64)
    e, m = (c >> 3) & 0xF, (c & 7).astype(np.float64)
    v = np.where(e == 0, m / 8 * 2.0 ** -6, (1 + m / 8) * 2.0 ** (e - 7))
    v = np.where((c & 0x7F) == 0x7F, np.nan, v)
    return np.where(c & 0x80, -v, v)


def np_weights(tensors, dtypes, block):
    """float64 weights; F8_E4M3 ones times their weight_scale_inv, tile by tile; MXFP4 ones (U8 _blocks and
    _scales) decoded nibble by nibble, under the weight's own name as GptOssExperts holds it, (E, in, out)."""
    out = {}
    for name, a in tensors.items():
        if name.endswith("_blocks") and dtypes[name] == "U8":
            scales, w = tensors[name[:-len("_blocks")] + "_scales"], np.zeros(a.shape[:2] + (a.shape[2] * 32,))
            for e, row, g, byte in np.ndindex(*a.shape):
                for nibble, code in enumerate((int(a[e, row, g, byte]) & 15, int(a[e, row, g, byte]) >> 4)):
                    value = E2M1_VALUES[code & 7] * (-1 if code & 8 else 1)
                    w[e, row, 32 * g + 2 * byte + nibble] = math.ldexp(value, int(scales[e, row, g]) - 127)
            out[name[:-len("_blocks")]] = w.transpose(0, 2, 1)
        elif name.endswith("_scales") and dtypes[name] == "U8":
            continue
        elif dtypes[name] == "F8_E4M3":
            s = tensors[name + "_scale_inv"].astype(np.float64)
            rows, cols = np.arange(a.shape[0]) // block[0], np.arange(a.shape[1]) // block[1]
            out[name] = np_e4m3(a) * s[rows][:, cols]
        elif not name.endswith("_scale_inv") and dtypes[name] != "I64":
            out[name] = a.astype(np.float64)
    return out


def np_act(name):
    erf = np.vectorize(math.erf)
    return {"gelu": lambda v: 0.5 * v * (1 + erf(v / math.sqrt(2))),
            "gelu_new": lambda v: 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3))),
            "gelu_pytorch_tanh": lambda v: 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3))),
            "silu": lambda v: v / (1 + np.exp(-v)),
            "quick_gelu": lambda v: v / (1 + np.exp(-1.702 * v)),
            "relu": lambda v: np.maximum(v, 0),
            "bloom_gelu": lambda v: v * 0.5 * (1 + np.tanh(0.79788456 * v * (1 + 0.044715 * v * v)))}[name]


def np_rms(v, w, eps):
    return v / np.sqrt((v ** 2).mean(-1, keepdims=True) + eps) * w


def np_moe_norm(x, p, s):
    w = p[s["ff_norm"] + ".weight"]
    if s["norm"] == "rms":
        return np_rms(x, w, s["eps"])
    mu = x.mean(-1, keepdims=True)
    b = p[s["ff_norm"] + ".bias"] if s["norm"] == "layer" else 0
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + s["eps"]) * w + b


def np_route(s, p, h):
    """The routing in float64 numpy, from the formulas: (experts (T, k) by descending score, weights)."""
    logits, k = h @ p[s["names"]["router"]].T, s["k"]
    if "router_bias" in s["names"]:
        logits = logits + p[s["names"]["router_bias"]]
    if s["router"] == "sparsemixer":  # each step: the best logit left, the softmax over those near it
        experts, w = np.zeros((len(h), 2), dtype=np.int64), np.zeros((len(h), 2))
        for t, row in enumerate(logits):
            left = np.ones(len(row), dtype=bool)
            for step in range(2):
                b = max(np.flatnonzero(left), key=lambda e: row[e])
                with np.errstate(invalid="ignore"):  # 0 / 0 is NaN, which is not above: kept
                    near = left & ~((row[b] - row) / np.maximum(np.abs(row), row[b]) > 2 * s["jitter"])
                experts[t, step], w[t, step] = b, 1 / np.exp(row[near] - row[b]).sum()
                left[b] = False
        return experts, w
    if s["router"] == "gpt_oss":  # the best k logits, the softmax of those
        experts = np.argsort(-logits, axis=-1, kind="stable")[:, :k]
        top = np.take_along_axis(logits, experts, -1)
        w = np.exp(top - top.max(-1, keepdims=True))
        return experts, w / w.sum(-1, keepdims=True)
    if s["router"] == "llama4":  # the best k logits, each weighed by its sigmoid
        experts = np.argsort(-logits, axis=-1, kind="stable")[:, :k]
        return experts, 1 / (1 + np.exp(-np.take_along_axis(logits, experts, -1)))
    if s["router"] == "deepseek_v3":
        scores = 1 / (1 + np.exp(-logits))
        choice = scores + p["mlp.gate.e_score_correction_bias"]
        grouped = choice.reshape(len(h), s["groups"], -1)
        group_scores = np.sort(grouped, axis=-1)[..., -2:].sum(-1)
        keep = np.argsort(-group_scores, axis=-1)[:, :s["topk_group"]]
        allowed = np.zeros_like(group_scores, dtype=bool)
        np.put_along_axis(allowed, keep, True, axis=-1)
        masked = np.where(np.repeat(allowed, grouped.shape[-1], axis=-1), choice, 0.0)
        experts = np.argsort(-masked, axis=-1, kind="stable")[:, :k]
        w = np.take_along_axis(scores, experts, -1)
        if s["renorm"]:
            w = w / (w.sum(-1, keepdims=True) + 1e-20)
        return experts, w * s["scale"]
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    experts = np.argsort(-probs, axis=-1, kind="stable")[:, :k]
    w = np.take_along_axis(probs, experts, -1)
    if s["router"] == "deepseek_v2":
        return experts, w * s["scale"]
    return experts, w / w.sum(-1, keepdims=True) if s["renorm"] else w


def np_new_block(kind, s, p, x, experts=None, weights=None):
    """The blocks again in numpy (MoE: from the experts and weights given)."""
    act = np_act(s["act"])
    if kind == "ln_mlp":
        norm, fc1, fc2 = s["names"]
        mu = x.mean(-1, keepdims=True)
        h = (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + s["eps"]) * p[f"{norm}.weight"] \
            + p[f"{norm}.bias"]
        b1, b2 = (p[f"{fc1}.bias"], p[f"{fc2}.bias"]) if s.get("biases", True) else (0, 0)
        return x + act(h @ p[f"{fc1}.weight"].T + b1) @ p[f"{fc2}.weight"].T + b2
    if kind == "post_ln_mlp":
        norm, fc1, fc2 = s["names"]
        z = x + act(x @ p[f"{fc1}.weight"].T + p[f"{fc1}.bias"]) @ p[f"{fc2}.weight"].T + p[f"{fc2}.bias"]
        mu = z.mean(-1, keepdims=True)
        return (z - mu) / np.sqrt(((z - mu) ** 2).mean(-1, keepdims=True) + s["eps"]) * p[f"{norm}.weight"] \
            + p[f"{norm}.bias"]
    if kind == "ln_gated":
        (gate, up, down), f, norm = s["names"], s["d_ff"], s["norm"]
        mu = x.mean(-1, keepdims=True)
        h = (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + s["eps"])
        if norm:
            h = h * p[f"{norm}.weight"] + (p[f"{norm}.bias"] if s["norm_bias"] else 0)
        if up is None:
            gu = h @ p[f"{gate}.weight"].T
            g, u = gu[:, :f], gu[:, f:]
        else:
            g, u = h @ p[f"{gate}.weight"].T, h @ p[f"{up}.weight"].T
        return x + (act(g) * u) @ p[f"{down}.weight"].T
    if kind == "granite":
        h = np_rms(x, p["post_attention_layernorm.weight"], s["eps"])
        h = (act(h @ p["mlp.gate_proj.weight"].T) * (h @ p["mlp.up_proj.weight"].T)) @ p["mlp.down_proj.weight"].T
        return x + h * s["scale"]
    if kind == "glm4":
        h = np_rms(x, p["post_attention_layernorm.weight"], s["eps"])
        gu, f = h @ p["mlp.gate_up_proj.weight"].T, s["d_ff"]
        h = (gu[:, f:] * act(gu[:, :f])) @ p["mlp.down_proj.weight"].T
        return x + np_rms(h, p["post_mlp_layernorm.weight"], s["eps"])
    if kind == "olmo2":
        h = (act(x @ p["mlp.gate_proj.weight"].T) * (x @ p["mlp.up_proj.weight"].T)) @ p["mlp.down_proj.weight"].T
        return x + np_rms(h, p["post_feedforward_layernorm.weight"], s["eps"])
    if kind == "t5":
        h = np_rms(x, p["layer_norm.weight"], s["eps"])
        a = act(h @ p["DenseReluDense.wi_0.weight" if s["gated"] else "DenseReluDense.wi.weight"].T)
        if s["gated"]:
            a = a * (h @ p["DenseReluDense.wi_1.weight"].T)
        return x + a @ p["DenseReluDense.wo.weight"].T
    if kind == "phi3":
        h = np_rms(x, p["post_attention_layernorm.weight"], s["eps"])
        gu, f = h @ p["mlp.gate_up_proj.weight"].T, s["d_ff"]
        return x + (gu[:, f:] * act(gu[:, :f])) @ p["mlp.down_proj.weight"].T

    def mlp(h, prefix):
        if s.get("granite"):  # Granite's shared MLP, whatever the prefix
            gu, f = h @ p[GRANITE_MLP + "input_linear.weight"].T, p[GRANITE_MLP + "output_linear.weight"].shape[1]
            return (act(gu[:, :f]) * gu[:, f:]) @ p[GRANITE_MLP + "output_linear.weight"].T
        return (act(h @ p[f"{prefix}gate_proj.weight"].T) * (h @ p[f"{prefix}up_proj.weight"].T)) \
            @ p[f"{prefix}down_proj.weight"].T

    if kind == "gemma2":
        h = mlp(np_rms(x, 1 + p["pre_feedforward_layernorm.weight"], s["eps"]), "mlp.")
        return x + np_rms(h, 1 + p["post_feedforward_layernorm.weight"], s["eps"])
    w = p.get("post_attention_layernorm.weight")
    h = np_moe_norm(x, p, s) if kind == "moe" else np_rms(x, 1 + w if kind == "gemma" else w, s["eps"])
    multiplier = s.get("residual_multiplier", 1.0)
    if experts is None:
        return x + mlp(h, s.get("mlp", "mlp.")) * multiplier
    out, names = np.zeros_like(h), s["names"]
    for t in range(len(h)):
        for j, w in zip(experts[t], weights[t]):
            if "rows" in names:  # DBRX: rows [j d_ff, (j + 1) d_ff) of w1, v1, w2 (the down product h @ w2_j)
                f = s["d_expert"]
                w1, v1, w2 = (p[n][j * f:(j + 1) * f] for n in names["rows"])
                out[t] += w * ((act(w1 @ h[t]) * (v1 @ h[t])) @ w2)
            elif names.get("interleaved"):  # gpt-oss: biases, the gate and up alternating, clamped
                gu = h[t] @ p[names["gate_up"]][j] + p[names["gate_up"] + "_bias"][j]
                g, u = np.minimum(gu[0::2], GPT_OSS_LIMIT), np.clip(gu[1::2], -GPT_OSS_LIMIT, GPT_OSS_LIMIT)
                glu = g / (1 + np.exp(-GPT_OSS_ALPHA * g))
                out[t] += w * (((u + 1) * glu) @ p[names["down"]][j] + p[names["down"] + "_bias"][j])
            elif names.get("in_out"):  # Llama 4: the expert's input weighed, its output not
                gate_up, f = p[names["gate_up"]][j], s["d_expert"]
                v = w * h[t]
                out[t] += (act(v @ gate_up[:, :f]) * (v @ gate_up[:, f:])) @ p[names["down"]][j]
            elif "gate_up" in names:
                gate_up, f = p[names["gate_up"]][j], s["d_expert"]
                down = p[names["down"]][j]
                out[t] += w * ((act(gate_up[:f] @ h[t]) * (gate_up[f:] @ h[t])) @ down.T)
            else:
                e = names["expert"].format(j)
                gate, up, down = (p[f"{e}{n}.weight"] for n in names["proj"])
                out[t] += w * ((act(gate @ h[t]) * (up @ h[t])) @ down.T)
    if s["shared"]:
        shared = mlp(h, s["shared_name"])
        if s["shared_gate"]:
            shared = shared / (1 + np.exp(-(h @ p["mlp.shared_expert_gate.weight"].T)))
        out += shared
    return x + out * multiplier


def check_new_model(name, spec):
    out, config = OUT / name, spec["config"]
    assert json.loads((out / "config.json").read_text()) == config, f"{name}: config.json"
    tensors, dtypes = read_checkpoint(out)
    wrong = {k: (t, expected_dtype(spec, k)) for k, t in dtypes.items() if t != expected_dtype(spec, k)}
    assert not wrong, f"{name}: dtypes {wrong}"
    declared = config.get("torch_dtype", config.get("dtype"))  # t5-v1_1's and t5-small's configs have neither
    assert declared in (None, TORCH_DTYPE[spec["dtype"]]), f"{name}: torch_dtype {declared}"
    if spec.get("shard_cut"):
        weight_map = json.loads((out / "model.safetensors.index.json").read_text())["weight_map"]
        names = list(stored_tensors_names(spec))
        after = names[names.index(spec["shard_cut"]) + 1]
        assert weight_map[spec["shard_cut"]] != weight_map[after], f"{name}: the cut is not between shards"
    # back in torch (F8 codes wrapped again), for the references from the files
    back = {k: F8E4M3(torch.from_numpy(np.array(v))) if dtypes[k] == "F8_E4M3" else torch.from_numpy(np.array(v))
            for k, v in tensors.items()}
    npw = np_weights(tensors, dtypes, spec.get("fp8"))
    for st in spec["stacks"]:
        check_settings(config, st, f"{name}: {st['name'] or 'layers'}")
    tokens = spec.get("tokens", TOKENS)
    xs = {}
    if spec.get("refuse"):
        assert not (out / "reference").exists(), f"{name}: a reference for a checkpoint to be refused"
    else:
        for st in spec["stacks"]:
            x = np.load(out / "reference" / f"{reference_name(st['name'], 'X')}.npy")
            assert x.dtype == np.float32 and x.shape == (tokens, st["d"]), f"{name}: X {st['name']}"
            xs[st["name"]] = torch.from_numpy(x)
        again, _ = references(back, spec, xs)
        files = sorted(f.stem for f in (out / "reference").glob("*.npy"))
        assert files == sorted(list(again) + [reference_name(st["name"], "X") for st in spec["stacks"]]), \
            f"{name}: reference files {files}"
    for st in spec["stacks"]:
        s = st["settings"]
        for i in range(st["layers"]):
            what = f"{name}: {st['name'] or 'layer'} {i}"
            p = {k: torch.from_numpy(v) for k, v in npw.items()}
            p = prefixed(p, st["layer"].format(i))
            moe_shapes(s, p, i, what) if st["kind"] == "moe" else block_shapes(st["kind"], s, p, what)
            if spec.get("refuse"):
                continue
            y_name = reference_name(st["name"], "Y", i)
            y = np.load(out / "reference" / f"{y_name}.npy")
            assert y.dtype == np.float64 and y.shape == (tokens, st["d"]), f"{what}: {y_name}.npy"
            assert again[y_name].tobytes() == y.tobytes(), f"{what}: the reference from the file differs"
            p = {k: v.numpy() for k, v in p.items()}
            x = xs[st["name"]].numpy().astype(np.float64)
            experts = weights = None
            if st["kind"] == "moe" and s["sparse"][i]:
                experts, weights = (np.load(out / "reference" / f"{w}_layer{i}.npy") for w in ("experts", "weights"))
                assert experts.dtype == np.int64 and experts.shape == (tokens, s["k"]), f"{what}: experts"
                assert weights.dtype == np.float64 and weights.shape == (tokens, s["k"]), f"{what}: weights"
                assert again[f"experts_layer{i}"].tobytes() == experts.tobytes(), f"{what}: experts from the file"
                assert again[f"weights_layer{i}"].tobytes() == weights.tobytes(), f"{what}: weights from the file"
                e64, w64 = np_route(s, p, np_moe_norm(x, p, s))
                order, order64 = np.argsort(experts, -1), np.argsort(e64, -1)
                assert (np.take_along_axis(experts, order, -1) == np.take_along_axis(e64, order64, -1)).all(), \
                    f"{what}: numpy routes otherwise"
                assert np.allclose(np.take_along_axis(weights, order, -1), np.take_along_axis(w64, order64, -1),
                                   rtol=1e-5, atol=0), f"{what}: numpy's routing weights differ"
            z = np_new_block(st["kind"], s, p, x, experts, weights)
            assert abs(z - y).max() <= 1e-12 * max(1.0, abs(y).max()), f"{what}: the numpy recomputation differs"
    print("checked", out, f"({len(tensors)} tensors)")


def stored_tensors_names(spec):
    """The state-dict order of a spec's tensors, without drawing its values."""
    state = torch.random.get_rng_state()
    try:
        return list(stored_tensors(spec))
    finally:
        torch.random.set_rng_state(state)


def main():
    specs = models()
    if "--check" not in sys.argv[1:]:
        for seed, (name, spec) in enumerate(specs.items()):
            (write_new_model if "stacks" in spec else write_model)(name, spec, 9000 + seed)
    for name, spec in specs.items():
        (check_new_model if "stacks" in spec else check_model)(name, spec)


if __name__ == "__main__":
    main()
