"""The 3-layer CNN for MNIST: two hidden conv layers, each followed by the norm, and a linear layer.

    (B, 1, 28, 28) -> conv k x k, c1 -> norm -> ReLU -> maxpool 2    (B, c1, 14, 14)
                   -> conv k x k, c2 -> norm -> ReLU -> maxpool 2    (B, c2, 7, 7)
                   -> dropout -> linear c2*7*7 -> 10                 (B, 10)

Xu et al. report a 3-layer CNN for MNIST without its sizes; "3 layers" is read here as three
weight layers, so the norm sits after each of the two hidden layers (before the ReLU, where
BatchNorm sits in CNNs) and not after the output layer. Every norm is built with
``channels_first=True``: it normalizes over the c channels at each pixel (LayerNorm-style
variants) or, for batchnorm, per channel over the batch and pixels, and its per-channel gain and
bias broadcast over height and width.
"""

from __future__ import annotations

import torch
from torch import nn

from .transformer import NormFactory


class MNISTCNN(nn.Module):
    def __init__(
        self,
        norm: NormFactory,
        channels: tuple[int, int] = (32, 64),
        kernel: int = 5,
        dropout: float = 0.0,
        classes: int = 10,
        side: int = 28,
    ):
        super().__init__()
        if kernel % 2 == 0:
            raise ValueError(f"task.model.kernel must be odd (same-size padding), got {kernel}")
        if side % 4:
            raise ValueError(f"image side {side} must be divisible by 4 (two 2x2 poolings)")
        c1, c2 = channels
        self.conv1 = nn.Conv2d(1, c1, kernel, padding=kernel // 2)
        self.norm1 = norm(c1, channels_first=True)
        self.conv2 = nn.Conv2d(c1, c2, kernel, padding=kernel // 2)
        self.norm2 = norm(c2, channels_first=True)
        self.pool = nn.MaxPool2d(2)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(c2 * (side // 4) ** 2, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, 1, H, W) float -> (B, classes)
        x = self.pool(torch.relu(self.norm1(self.conv1(x))))
        x = self.pool(torch.relu(self.norm2(self.conv2(x))))
        return self.head(self.drop(x.flatten(1)))
