#!/usr/bin/python3
"""Writes the two feed-forward blocks as ONNX models for ONNX Runtime, with their weights,
inputs and float64 references as .npy files, for bench/onnxruntime/time_blocks.js.

    /usr/bin/python3 bench/onnxruntime/make_models.py [--if-needed] [OUT]   # OUT: build-ort/models

--if-needed: do nothing when OUT already holds this script's files (of its FORMAT).

Needs Debian's python3-onnx and python3-numpy (bench/onnxruntime/setup installs them); runs no
ONNX Runtime. Writes, under OUT (about 330 MB; never into the source tree):

  bert_ffn/model.onnx     BERT-base's feed-forward block (d_model 768, d_ff 3072), written as ORT's
                          transformer optimizer writes a real BERT's:
                            MatMul(X, W1ᵀ) -> com.microsoft.BiasGelu(·, b1)      (exact, erf GELU)
                            -> MatMul(·, W2ᵀ) -> com.microsoft.SkipLayerNormalization(·, X, gamma, beta, b2)
                          epsilon 1e-12: Y = LayerNorm(X + W2 gelu(W1 X + b1) + b2).
  llama_mlp/model.onnx    TinyLlama-1.1B's MLP with its RMSNorm and residual (d_model 2048, d_ff 5632):
                            Y = X + down(silu(gate(N(X))) * up(N(X))), N = RMSNorm (weight, eps 1e-5):
                            SimplifiedLayerNormalization (onnx domain, as ORT's fusions emit it; ORT has a
                            CPU kernel for it since opset 1), MatMul (gate), MatMul (up), SiLU as
                            Sigmoid + Mul (as PyTorch exports F.silu), Mul, MatMul (down), Add.
                          ORT 1.30's optimizer (level 'all', CPU) turns it into
                            SimplifiedLayerNormalization, MatMul, QuickGelu (alpha 1: the Sigmoid + Mul
                            fused), MatMul, Mul, Gemm (the down MatMul and the residual Add fused, the
                            residual as Gemm's C);
                          time_blocks.js prints the graph it ran (optimizedModelFilePath).
  llama_mlp_q4_0/model.onnx        the same TinyLlama MLP with its three MatMuls as com.microsoft.MatMulNBits
  llama_mlp_q4_0/model_int8.onnx   (bits 4, block_size 32, no zero_points input: ORT's default zero point 8),
                          the weights of llama_mlp quantized as ggml's Q4_0 would (quantize_row_q4_0_ref:
                          d = max / -8 with max the signed value of largest magnitude, q = min(15,
                          trunc(x * (1/d) + 8.5)), d rounded to f16), so that egelu's Q4_0 blocks, ggml and
                          ORT multiply the same numbers: scales = the f16 d as float32, B = the same 4-bit codes
                          re-paired into ORT's order (byte j of a block: element 2j low, 2j+1 high; ggml's byte j
                          holds elements j and j + 16). model.onnx has accuracy_level 0 (A stays f32: MLAS's
                          CompFp32 path; levels 1-3 take the same path for float A), model_int8.onnx
                          accuracy_level 4 (A quantized to int8 per 32-block: CompInt8). Inputs are llama_mlp's
                          (T = 1, 32, 128); the references are float64 with the dequantized weights, and
                          manifest.json gives each block the tolerance time_blocks.js checks (1e-4; 2e-2 with
                          int8 activations, whose rounding costs ~8e-3 here).
  llama_mlp_q4_0/<name>.q4_0  ggml's bytes of each weight (block_q4_0 rows, 18 bytes a block), for a byte
                          comparison with egelu's quantizer; <name>_dequantized.npy the weights ORT multiplies.
  <block>/*.npy           the weights in egelu's load() names and nn.Linear's layout (out x in), float32:
                          FeedForward<float>::load(dir, GeluForm::exact) and
                          GatedFeedForward<float>::load(dir, GatedForm::swiglu, 1e-5f) read them;
                          x_T<T>.npy the input tokens (T x d_model, float32: egelu's d_model x T bytes),
                          ref_T<T>.npy the float64 reference output for the rows listed in manifest.json.
  manifest.json           what time_blocks.js reads: shapes, files, reference rows.

The numbers are drawn as bench/bench_blocks.hpp draws its own (Eigen's Random, uniform in [-1, 1],
divided by the same constants), from a fixed numpy seed; the inputs are uniform in [-1, 1].
The model's tokens are a dynamic first dimension T of a (T, d_model) matrix.
"""
import json
import math
import pathlib
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
TOKENS = [1, 32, 128, 512]
SEED = 20261201
FORMAT = 2  # bump when the files change, so that bench/onnxruntime/run makes them anew
Q4_TOKENS = [1, 32, 128]  # the MatMulNBits models' token counts
OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]


def uniform(rng, shape, scale=1.0):
    """Eigen's Random (uniform in [-1, 1]) times scale, in float32."""
    return (rng.uniform(-1.0, 1.0, size=shape).astype(np.float32) * np.float32(scale)).astype(np.float32)


def reference_rows(t):
    return sorted({0, 1, t // 2, t - 1} & set(range(t)))


def tokens_input(d):
    return helper.make_tensor_value_info("X", TensorProto.FLOAT, ["T", d])


def save_model(graph, path):
    model = helper.make_model(graph, opset_imports=OPSETS, producer_name="egelu bench/onnxruntime/make_models.py")
    model.ir_version = 8
    onnx.save_model(model, str(path))


def gelu_exact(h):
    erf = np.frompyfunc(math.erf, 1, 1)
    return 0.5 * h * (1.0 + erf(h / math.sqrt(2.0)).astype(np.float64))


def bert_ffn(rng):
    d, d_ff = 768, 3072
    w = {"W1": uniform(rng, (d_ff, d), 1 / 28), "W2": uniform(rng, (d, d_ff), 1 / 55),
         "b1": uniform(rng, d_ff), "b2": uniform(rng, d, 0.1),
         "gamma": np.ones(d, np.float32), "beta": np.zeros(d, np.float32)}
    eps = 1e-12
    init = [numpy_helper.from_array(np.ascontiguousarray(w["W1"].T), "W1T"), numpy_helper.from_array(w["b1"], "b1"),
            numpy_helper.from_array(np.ascontiguousarray(w["W2"].T), "W2T"), numpy_helper.from_array(w["b2"], "b2"),
            numpy_helper.from_array(w["gamma"], "gamma"), numpy_helper.from_array(w["beta"], "beta")]
    nodes = [helper.make_node("MatMul", ["X", "W1T"], ["h"], name="fc1"),
             helper.make_node("BiasGelu", ["h", "b1"], ["g"], name="gelu", domain="com.microsoft"),
             helper.make_node("MatMul", ["g", "W2T"], ["f"], name="fc2"),
             helper.make_node("SkipLayerNormalization", ["f", "X", "gamma", "beta", "b2"], ["Y"], name="add_norm",
                              domain="com.microsoft", epsilon=eps)]
    graph = helper.make_graph(nodes, "bert_base_ffn", [tokens_input(d)],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["T", d])], init)

    def reference(x):
        x = x.astype(np.float64)
        h = x @ w["W1"].T.astype(np.float64) + w["b1"]
        z = x + gelu_exact(h) @ w["W2"].T.astype(np.float64) + w["b2"]
        mean = z.mean(axis=1, keepdims=True)
        var = ((z - mean) ** 2).mean(axis=1, keepdims=True)
        return (z - mean) / np.sqrt(var + eps) * w["gamma"] + w["beta"]

    return dict(d_model=d, d_ff=d_ff, eps=eps, weights=w, graph=graph, reference=reference)


def llama_mlp(rng):
    d, d_ff = 2048, 5632
    w = {"gate_proj": uniform(rng, (d_ff, d), 1 / 22), "up_proj": uniform(rng, (d_ff, d), 1 / 45),
         "down_proj": uniform(rng, (d, d_ff), 1 / 75), "norm": np.ones(d, np.float32)}
    eps = 1e-5
    init = [numpy_helper.from_array(w["norm"], "norm"),
            numpy_helper.from_array(np.ascontiguousarray(w["gate_proj"].T), "gateT"),
            numpy_helper.from_array(np.ascontiguousarray(w["up_proj"].T), "upT"),
            numpy_helper.from_array(np.ascontiguousarray(w["down_proj"].T), "downT")]
    nodes = [helper.make_node("SimplifiedLayerNormalization", ["X", "norm"], ["n"], name="rms_norm", axis=-1,
                              epsilon=eps, stash_type=1),
             helper.make_node("MatMul", ["n", "gateT"], ["g"], name="gate_proj"),
             helper.make_node("MatMul", ["n", "upT"], ["u"], name="up_proj"),
             helper.make_node("Sigmoid", ["g"], ["sg"], name="silu_sigmoid"),
             helper.make_node("Mul", ["g", "sg"], ["s"], name="silu_mul"),
             helper.make_node("Mul", ["s", "u"], ["h"], name="gate_times_up"),
             helper.make_node("MatMul", ["h", "downT"], ["m"], name="down_proj"),
             helper.make_node("Add", ["X", "m"], ["Y"], name="residual")]
    graph = helper.make_graph(nodes, "tinyllama_mlp", [tokens_input(d)],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["T", d])], init)

    return dict(d_model=d, d_ff=d_ff, eps=eps, weights=w, graph=graph, reference=lambda x: llama_reference(x, w, eps))


def llama_reference(x, w, eps):
    """TinyLlama's MLP block in float64 with the weights w (out x in)."""
    x = x.astype(np.float64)
    n = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps) * w["norm"]
    g = n @ w["gate_proj"].T.astype(np.float64)
    u = n @ w["up_proj"].T.astype(np.float64)
    return x + (g / (1.0 + np.exp(-g)) * u) @ w["down_proj"].T.astype(np.float64)


def quantize_q4_0(w):
    """ggml's quantize_row_q4_0_ref on each row of w (float32, out x in, in % 32 == 0), in float32 arithmetic
    as ggml does it (no fused multiply-add). Returns (codes uint8 (out, in): 0..15 in element order,
    d float16 (out, in / 32))."""
    n, k = w.shape
    assert k % 32 == 0, "Q4_0 needs rows of a multiple of 32"
    x = w.reshape(n, k // 32, 32).astype(np.float32)
    # The signed value of largest magnitude; on a tie the first (ggml: `if (amax < fabsf(v))`, amax from 0).
    first = np.argmax(np.abs(x), axis=2)
    mx = np.take_along_axis(x, first[..., None], axis=2)[..., 0]
    mx = np.where(np.abs(mx) == 0, np.float32(0.0), mx).astype(np.float32)  # an all-zero block keeps max = +0.0
    d = (mx / np.float32(-8)).astype(np.float32)                             # so its d is -0.0 (f16 0x8000)
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, np.float32(1.0) / d, np.float32(0.0)).astype(np.float32)  # 1/d from the f32 d
    scaled = (x * inv[..., None]).astype(np.float32)                          # rounded once ...
    q = np.trunc((scaled + np.float32(8.5)).astype(np.float32))               # ... and again, then truncated
    q = np.minimum(q, 15).astype(np.uint8)
    return q.reshape(n, k), d.astype(np.float16)


def q4_0_ggml_bytes(q, d):
    """ggml's block_q4_0 rows: f16 d (little-endian), then byte j = element j | element j + 16 << 4."""
    n, k = q.shape
    qb = q.reshape(n, k // 32, 32)
    qs = (qb[..., :16] | (qb[..., 16:] << 4)).astype(np.uint8)
    blocks = np.concatenate([d.astype("<f2").view(np.uint8).reshape(n, k // 32, 2), qs], axis=2)
    return blocks.reshape(n, k // 32 * 18)


def q4_0_matmulnbits(q, d):
    """MatMulNBits' B (N, k_blocks, 16): byte j = element 2j | element 2j + 1 << 4; scales (N, k_blocks) float32."""
    n, k = q.shape
    qb = q.reshape(n, k // 32, 16, 2)
    return (qb[..., 0] | (qb[..., 1] << 4)).astype(np.uint8), d.astype(np.float32)


def q4_0_dequantize(q, d):
    n, k = q.shape
    return ((q.reshape(n, k // 32, 32).astype(np.float32) - 8) * d.astype(np.float32)[..., None]).reshape(n, k)


def llama_mlp_q4_0(base, accuracy_level):
    """base: llama_mlp()'s block. Its graph with the three MatMuls as MatMulNBits (4 bits, blocks of 32)."""
    d, d_ff, eps, w = base["d_model"], base["d_ff"], base["eps"], base["weights"]
    init, quantized, dequantized = [numpy_helper.from_array(w["norm"], "norm")], {}, {"norm": w["norm"]}
    for name in ("gate_proj", "up_proj", "down_proj"):
        q, scale = quantize_q4_0(w[name])
        b, scales = q4_0_matmulnbits(q, scale)
        quantized[name] = q4_0_ggml_bytes(q, scale)
        dequantized[name] = q4_0_dequantize(q, scale)
        init += [numpy_helper.from_array(b, f"{name}_B"), numpy_helper.from_array(scales, f"{name}_scales")]

    def nbits(name, a, y, n, k):
        return helper.make_node("MatMulNBits", [a, f"{name}_B", f"{name}_scales"], [y], name=name, domain="com.microsoft",
                                K=k, N=n, bits=4, block_size=32, accuracy_level=accuracy_level)

    nodes = [helper.make_node("SimplifiedLayerNormalization", ["X", "norm"], ["n"], name="rms_norm", axis=-1,
                              epsilon=eps, stash_type=1),
             nbits("gate_proj", "n", "g", d_ff, d),
             nbits("up_proj", "n", "u", d_ff, d),
             helper.make_node("Sigmoid", ["g"], ["sg"], name="silu_sigmoid"),
             helper.make_node("Mul", ["g", "sg"], ["s"], name="silu_mul"),
             helper.make_node("Mul", ["s", "u"], ["h"], name="gate_times_up"),
             nbits("down_proj", "h", "m", d, d_ff),
             helper.make_node("Add", ["X", "m"], ["Y"], name="residual")]
    graph = helper.make_graph(nodes, f"tinyllama_mlp_q4_0_accuracy{accuracy_level}", [tokens_input(d)],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["T", d])], init)
    return dict(graph=graph, quantized=quantized, dequantized=dequantized,
                reference=lambda x: llama_reference(x, dequantized, eps))


def up_to_date(out):
    """Whether out holds every file of a manifest of this FORMAT."""
    try:
        manifest = json.loads((out / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    if manifest.get("format") != FORMAT:
        return False
    files = [b["model"] for b in manifest["blocks"].values()]
    files += [f for b in manifest["blocks"].values() for f in b["inputs"].values()]
    files += [r["file"] for b in manifest["blocks"].values() for r in b["references"].values()]
    return all((out / f).is_file() for f in files)


def main():
    args = sys.argv[1:]
    if_needed = "--if-needed" in args
    args = [a for a in args if a != "--if-needed"]
    out = pathlib.Path(args[0]).resolve() if args else ROOT / "build-ort" / "models"
    if if_needed and up_to_date(out):
        print(f"make_models: {out} is up to date")
        return 0
    out.mkdir(parents=True, exist_ok=True)
    (out / "manifest.json").unlink(missing_ok=True)  # written last: a run cut short leaves none
    manifest = {"format": FORMAT, "seed": SEED, "onnx": onnx.__version__, "tokens": TOKENS, "blocks": {}}
    made = {}
    for number, (name, make) in enumerate((("bert_ffn", bert_ffn), ("llama_mlp", llama_mlp))):
        directory = out / name
        directory.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng([SEED, number])
        block = made[name] = make(rng)
        save_model(block["graph"], directory / "model.onnx")
        for key, array in block["weights"].items():
            np.save(directory / f"{key}.npy", array)
        x_all = uniform(rng, (max(TOKENS), block["d_model"]))
        entry = {"model": f"{name}/model.onnx", "d_model": block["d_model"], "d_ff": block["d_ff"],
                 "eps": block["eps"], "inputs": {}, "references": {}}
        for t in TOKENS:
            x = np.ascontiguousarray(x_all[:t])
            rows = reference_rows(t)
            np.save(directory / f"x_T{t}.npy", x)
            np.save(directory / f"ref_T{t}.npy", block["reference"](x[rows]))
            entry["inputs"][str(t)] = f"{name}/x_T{t}.npy"
            entry["references"][str(t)] = {"file": f"{name}/ref_T{t}.npy", "rows": rows}
        manifest["blocks"][name] = entry
        print(f"make_models: wrote {directory}/model.onnx ({(directory / 'model.onnx').stat().st_size >> 20} MB), "
              f"weights, inputs and references for T = {TOKENS}", flush=True)
    # TinyLlama's MLP with Q4_0 weights through MatMulNBits, f32 and int8 activations; llama_mlp's inputs.
    base, directory = made["llama_mlp"], out / "llama_mlp_q4_0"
    directory.mkdir(parents=True, exist_ok=True)
    for name, level, model in (("llama_mlp_q4_0", 0, "model.onnx"), ("llama_mlp_q4_0_int8", 4, "model_int8.onnx")):
        block = llama_mlp_q4_0(base, level)
        save_model(block["graph"], directory / model)
        entry = {"model": f"llama_mlp_q4_0/{model}", "d_model": base["d_model"], "d_ff": base["d_ff"], "eps": base["eps"],
                 "weights": "q4_0 (ggml quantize_row_q4_0_ref of llama_mlp's weights)", "accuracy_level": level,
                 # time_blocks.js's bound on max |diff| / (1 + |y|): int8 activations (observed 8e-3) or f32 (2e-6)
                 "tolerance": 2e-2 if level == 4 else 1e-4, "inputs": {}, "references": {}}
        if level == 0:
            for key, blob in block["quantized"].items():
                blob.tofile(directory / f"{key}.q4_0")
                np.save(directory / f"{key}_dequantized.npy", block["dequantized"][key])
            for t in Q4_TOKENS:
                rows = reference_rows(t)
                x = np.load(out / "llama_mlp" / f"x_T{t}.npy")
                np.save(directory / f"ref_T{t}.npy", block["reference"](x[rows]))
        for t in Q4_TOKENS:
            entry["inputs"][str(t)] = f"llama_mlp/x_T{t}.npy"
            entry["references"][str(t)] = {"file": f"llama_mlp_q4_0/ref_T{t}.npy", "rows": reference_rows(t)}
        manifest["blocks"][name] = entry
        print(f"make_models: wrote {directory / model} ({(directory / model).stat().st_size >> 20} MB, MatMulNBits 4 bits, "
              f"accuracy_level {level})", flush=True)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"make_models: wrote {out / 'manifest.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
