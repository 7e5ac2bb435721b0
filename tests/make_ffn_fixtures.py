#!/usr/bin/env python3
"""Writes the PyTorch golden fixtures for the feed-forward block test.

    /usr/bin/python3 tests/make_ffn_fixtures.py     # Debian: python3-torch, python3-numpy

For each GELU form it builds Y = LayerNorm(X + W2 gelu(W1 X + b1) + b2) from
nn.Linear, nn.GELU(approximate=...) and nn.LayerNorm(eps=1e-12) at d_model=64,
d_ff=256, T=7, and saves, in tests/data/ffn_<form>/:
  W1.npy (d_ff, d)  b1.npy (d_ff,)  W2.npy (d, d_ff)  b2.npy (d,)  gamma.npy, beta.npy (d,)
  X.npy (T, d)      Y.npy (T, d): the block in float32     Y_f64.npy: the same weights in float64
The outputs are committed; CI does not need PyTorch.
"""
import pathlib

import numpy as np
import torch
from torch import nn

D_MODEL, D_FF, TOKENS = 64, 256, 7
HERE = pathlib.Path(__file__).resolve().parent


def block(approximate, dtype, params, x):
    lin1, lin2 = nn.Linear(D_MODEL, D_FF).to(dtype), nn.Linear(D_FF, D_MODEL).to(dtype)
    norm = nn.LayerNorm(D_MODEL, eps=1e-12).to(dtype)
    with torch.no_grad():
        lin1.weight.copy_(params["W1"]), lin1.bias.copy_(params["b1"])
        lin2.weight.copy_(params["W2"]), lin2.bias.copy_(params["b2"])
        norm.weight.copy_(params["gamma"]), norm.bias.copy_(params["beta"])
        x = x.to(dtype)
        return norm(x + lin2(nn.GELU(approximate=approximate)(lin1(x))))


def main():
    for seed, (form, approximate) in enumerate((("tanh", "tanh"), ("exact", "none"))):
        torch.manual_seed(1234 + seed)
        lin1, lin2 = nn.Linear(D_MODEL, D_FF), nn.Linear(D_FF, D_MODEL)
        params = {
            "W1": lin1.weight.detach() * 4, "b1": lin1.bias.detach(),  # x4: reach GELU's negative tail
            "W2": lin2.weight.detach(), "b2": lin2.bias.detach(),
            "gamma": 1 + 0.1 * torch.randn(D_MODEL), "beta": 0.1 * torch.randn(D_MODEL),
        }
        x = torch.randn(TOKENS, D_MODEL)
        out = HERE / "data" / f"ffn_{form}"
        out.mkdir(parents=True, exist_ok=True)
        for name, value in params.items():
            np.save(out / f"{name}.npy", value.numpy().astype(np.float32))
        np.save(out / "X.npy", x.numpy().astype(np.float32))
        params64 = {k: v.to(torch.float64) for k, v in params.items()}
        np.save(out / "Y.npy", block(approximate, torch.float32, params, x).numpy().astype(np.float32))
        np.save(out / "Y_f64.npy", block(approximate, torch.float64, params64, x).numpy())
        print("wrote", out)


if __name__ == "__main__":
    main()
