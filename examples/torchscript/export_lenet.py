#!/usr/bin/env python3
"""Defines LeNet-5 in PyTorch, scripts it and saves it for troupe.

    /usr/bin/python3 export_lenet.py [OUT.pt] [--seed=N]

troupe trains the saved module with --model=torchscript:OUT.pt (README.md
beside this file). The module takes a batch of Fashion-MNIST images as
[B, 1, 28, 28] and returns [B, 10] logits; troupe adds the softmax
cross-entropy. Its initial weights are PyTorch's default initialization
under the seed, and troupe starts from them.
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default="lenet.pt")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    module = torch.jit.script(LeNet())
    # Checked as troupe checks it: one zero image in, ten logits out.
    assert module(torch.zeros(1, 1, 28, 28)).shape == (1, 10)
    torch.jit.save(module, args.out)
    count = sum(p.numel() for p in module.parameters())
    print(f"{args.out}: LeNet, {count} parameters")


if __name__ == "__main__":
    main()
