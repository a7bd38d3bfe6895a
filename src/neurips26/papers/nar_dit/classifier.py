"""The FD_cls feature network: a small CNN classifier trained in the DAG on the same kind of
images. Inception weights cannot be had offline, so Frechet distance and KID are computed in
this network's penultimate features (FD_cls, never called FID)."""

from __future__ import annotations

import torch
from torch import nn


class FeatureCNN(nn.Module):
    def __init__(self, in_channels: int = 3, width: int = 32, features: int = 64, num_classes: int = 10):
        super().__init__()
        self.num_features = features
        self.body = nn.Sequential(
            nn.Conv2d(in_channels, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(2 * width, 2 * width, 3, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
            nn.Linear(2 * width, features),
        )
        self.head = nn.Sequential(nn.ReLU(), nn.Linear(features, num_classes))

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Penultimate features of images in [0, 1]."""
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


@torch.no_grad()
def accuracy(net: FeatureCNN, x: torch.Tensor, y: torch.Tensor, batch: int = 512) -> float:
    net.eval()
    correct = 0
    for i in range(0, len(x), batch):
        correct += (net(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum().item()
    return correct / len(x)
