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
FORMAT = 1  # bump when the files change, so that bench/onnxruntime/run makes them anew
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

    def reference(x):
        x = x.astype(np.float64)
        n = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps) * w["norm"]
        g = n @ w["gate_proj"].T.astype(np.float64)
        u = n @ w["up_proj"].T.astype(np.float64)
        return x + (g / (1.0 + np.exp(-g)) * u) @ w["down_proj"].T.astype(np.float64)

    return dict(d_model=d, d_ff=d_ff, eps=eps, weights=w, graph=graph, reference=reference)


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
    for number, (name, make) in enumerate((("bert_ffn", bert_ffn), ("llama_mlp", llama_mlp))):
        directory = out / name
        directory.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng([SEED, number])
        block = make(rng)
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
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"make_models: wrote {out / 'manifest.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
