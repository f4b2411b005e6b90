"""The behaviour-cloning network (PyTorch; the ``train`` extra).

Image branch: three 3 x 3 convolutions (16 channels; strides 2, 2, 1; ReLU) then a spatial softmax
(Levine et al., "End-to-End Training of Deep Visuomotor Policies", JMLR 2016, sec. 4.1): per channel
the expected image coordinates ``(x, y)`` in [-1, 1] under a softmax over its positions, so each
channel becomes a learned keypoint (markers on the maps). Head: the keypoints (32 numbers) and the
vector features through two hidden layers of 128 (ReLU) to one logit per action; actions the mask
forbids get ``-1e9``. ``blind=True`` is the same network with the images replaced by zeros.
"""

from __future__ import annotations

import torch
from torch import nn


class SpatialSoftmax(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        p = torch.softmax(x.reshape(n, c, h * w), dim=-1).reshape(n, c, h, w)
        ys = torch.linspace(-1.0, 1.0, h, device=x.device)
        xs = torch.linspace(-1.0, 1.0, w, device=x.device)
        ex = (p.sum(dim=2) * xs).sum(dim=-1)
        ey = (p.sum(dim=3) * ys).sum(dim=-1)
        return torch.cat([ex, ey], dim=1)


class BCPolicy(nn.Module):
    """Args: image channels, vector size, number of actions, ``blind``, conv channels, hidden width."""

    def __init__(self, in_channels: int, n_vector: int, n_actions: int, blind: bool = False, channels: int = 16,
                 hidden: int = 128):
        super().__init__()
        self.blind = bool(blind)
        self.conv = nn.Sequential(
            nn.Conv2d(in_channels, channels, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(channels, channels, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(channels, channels, 3, stride=1, padding=1),
            SpatialSoftmax(),
        )
        self.head = nn.Sequential(nn.Linear(2 * channels + n_vector, hidden), nn.ReLU(),
                                  nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, n_actions))

    def forward(self, images: torch.Tensor, vector: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if self.blind:
            images = torch.zeros_like(images)
        z = torch.cat([self.conv(images), vector], dim=1)
        logits = self.head(z)
        return logits.masked_fill(mask <= 0, -1e9)


__all__ = ["BCPolicy", "SpatialSoftmax"]
