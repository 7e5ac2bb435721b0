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

The safetensors files are written here from the format's specification (no safetensors package):
8-byte little-endian header length N, N bytes of compact JSON ("__metadata__": {"format": "pt"} first,
then the tensors in the order of their data), padded with spaces to a multiple of 8, then the
tensors' little-endian C-order bytes, contiguous from offset 0; sorted by name, as the reference
writer sorts tensors of one dtype. --check re-reads every file with a separate parser (numpy only)
and recomputes every reference from the tensors read back, which must give the same bits.
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
ST_DTYPE = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64"}
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


# ---- the ten checkpoints

def models():
    """name -> dict(dtype, tensors (thunk), config, layer prefix, block, shards)."""
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
    return {
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
    t = t.contiguous()
    a = t.view(torch.int16).numpy() if t.dtype == torch.bfloat16 else t.numpy()
    return a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()


def write_safetensors(path, tensors):
    """Header: __metadata__ first, then the tensors in the order of their data; sorted by name (one dtype
    per file here; the reference writer sorts by alignment, then name). Padded with spaces to 8 bytes."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        t = tensors[name]
        blob = tensor_bytes(t)
        header[name] = {"dtype": ST_DTYPE[t.dtype], "shape": list(t.shape),
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
READ_DTYPE = {"F64": ("<f8", 8), "F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2)}


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


def main():
    specs = models()
    if "--check" not in sys.argv[1:]:
        for seed, (name, spec) in enumerate(specs.items()):
            write_model(name, spec, 9000 + seed)
    for name, spec in specs.items():
        check_model(name, spec)


if __name__ == "__main__":
    main()
