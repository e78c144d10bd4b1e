#!/usr/bin/env python3
"""Defines LeNet-5 or troupe's mlp in PyTorch, scripts and saves it for troupe.

    /usr/bin/python3 export_lenet.py [OUT.pt] [--seed=N] [--model=lenet|mlp]

troupe trains the saved module with --model=torchscript:OUT.pt (README.md
beside this file). The module takes a batch of Fashion-MNIST images as
[B, 1, 28, 28] and returns [B, 10] logits; troupe adds the softmax
cross-entropy. Its initial weights are PyTorch's default initialization
under the seed, and troupe starts from them. --model=mlp saves troupe's
built-in mlp instead (bench/compare_torchscript trains both); OUT.pt then
defaults to mlp.pt.
"""

import argparse

import torch
from torch import nn


class LeNet(nn.Module):
    """troupe's built-in lenet (models/lenet.json), written in PyTorch."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 6, kernel_size=5, padding=2), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(6, 16, kernel_size=5), nn.ReLU(),
            nn.MaxPool2d(2))
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
            nn.Linear(120, 84), nn.ReLU(),
            nn.Linear(84, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


class MLP(nn.Module):
    """troupe's built-in mlp (models/mlp.json), written in PyTorch. troupe
    hands a TorchScript module Fashion-MNIST's images as [B, 1, 28, 28]
    (their sample shape), so the module flattens them itself."""

    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Flatten(),
            nn.Linear(28 * 28, 256), nn.ReLU(),
            nn.Linear(256, 128), nn.ReLU(),
            nn.Linear(128, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


MODELS = {"lenet": LeNet, "mlp": MLP}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default=None,
                        help="where to save it (default: MODEL.pt)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--model", choices=sorted(MODELS), default="lenet")
    args = parser.parse_args()
    out = args.out or f"{args.model}.pt"
    torch.manual_seed(args.seed)
    cls = MODELS[args.model]
    module = torch.jit.script(cls())
    # Checked as troupe checks it: one zero image in, ten logits out.
    assert module(torch.zeros(1, 1, 28, 28)).shape == (1, 10)
    torch.jit.save(module, out)
    count = sum(p.numel() for p in module.parameters())
    print(f"{out}: {cls.__name__}, {count} parameters")


if __name__ == "__main__":
    main()
