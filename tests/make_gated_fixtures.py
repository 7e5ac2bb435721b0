#!/usr/bin/env python3
"""Writes the PyTorch golden fixtures for the gated feed-forward block test.

    /usr/bin/python3 tests/make_gated_fixtures.py     # Debian: python3-torch, python3-numpy

Two blocks, each Y = X + MLP(RMSNorm(X)) with the MLP as Hugging Face writes it,
down_proj(act(gate_proj(x)) * up_proj(x)), at d_model=64, d_ff=176, T=9:
  swiglu  LlamaMLP:  act = F.silu,                      LlamaRMSNorm (eps 1e-5)
  geglu   GemmaMLP:  act = F.gelu(approximate='tanh'),  GemmaRMSNorm (eps 1e-6),
          which multiplies by (1 + weight): norm.npy holds 1 + weight, the factor egelu takes.
The RMSNorms are written as transformers writes them (in float32, x * rsqrt(mean(x^2) +
eps), then the weight). In tests/data/gated_<form>/:
  gate_proj.npy, up_proj.npy (d_ff, d)  down_proj.npy (d, d_ff)  norm.npy (d,)
  X.npy (T, d)  Y.npy (T, d): the block in float32   Y_f64.npy: the same weights in float64
  eps.npy (1,): the RMSNorm epsilon
The outputs are committed; CI does not need PyTorch.
"""
import pathlib

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

D_MODEL, D_FF, TOKENS = 64, 176, 9
HERE = pathlib.Path(__file__).resolve().parent


def rms_norm(x, factor, eps):
    """LlamaRMSNorm's forward (GemmaRMSNorm's with factor = 1 + weight)."""
    variance = x.pow(2).mean(-1, keepdim=True)
    return factor * (x * torch.rsqrt(variance + eps))


def block(act, dtype, params, x, eps):
    gate, up, down = (nn.Linear(D_MODEL, D_FF, bias=False), nn.Linear(D_MODEL, D_FF, bias=False),
                      nn.Linear(D_FF, D_MODEL, bias=False))
    with torch.no_grad():
        for layer, name in ((gate, "gate_proj"), (up, "up_proj"), (down, "down_proj")):
            layer.to(dtype).weight.copy_(params[name])
        x = x.to(dtype)
        h = rms_norm(x, params["norm"].to(dtype), eps)
        return x + down(act(gate(h)) * up(h))


def main():
    forms = (("swiglu", F.silu, 1e-5), ("geglu", lambda v: F.gelu(v, approximate="tanh"), 1e-6))
    for seed, (form, act, eps) in enumerate(forms):
        torch.manual_seed(4321 + seed)
        params = {
            # x3 on the gate: its activation's negative tail is reached
            "gate_proj": nn.Linear(D_MODEL, D_FF, bias=False).weight.detach() * 3,
            "up_proj": nn.Linear(D_MODEL, D_FF, bias=False).weight.detach(),
            "down_proj": nn.Linear(D_FF, D_MODEL, bias=False).weight.detach(),
            "norm": 1 + 0.1 * torch.randn(D_MODEL),
        }
        x = torch.randn(TOKENS, D_MODEL) * 2
        out = HERE / "data" / f"gated_{form}"
        out.mkdir(parents=True, exist_ok=True)
        for name, value in params.items():
            np.save(out / f"{name}.npy", value.numpy().astype(np.float32))
        np.save(out / "X.npy", x.numpy().astype(np.float32))
        np.save(out / "eps.npy", np.array([eps], dtype=np.float64))
        p32 = {k: v.to(torch.float32) for k, v in params.items()}
        p64 = {k: v.to(torch.float64) for k, v in params.items()}
        np.save(out / "Y.npy", block(act, torch.float32, p32, x, eps).numpy().astype(np.float32))
        np.save(out / "Y_f64.npy", block(act, torch.float64, p64, x, eps).numpy())
        print("wrote", out)


if __name__ == "__main__":
    main()
