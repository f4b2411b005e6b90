"""The behaviour-cloning network (PyTorch; the ``train`` extra).

Image branch: three 3 x 3 convolutions (16 channels; strides 1, 2, 1; ReLU) then a spatial softmax
(Levine et al., "End-to-End Training of Deep Visuomotor Policies", JMLR 2016, sec. 4.1): per channel
the expected image coordinates ``(x, y)`` in [-1, 1] under a softmax over its positions, so each
channel becomes a learned keypoint (markers on the maps). A linear layer reads from the keypoints the
agent's and the goal's map positions (``aux``, trained with an auxiliary regression loss on the true
positions during training only); from them the goal direction (a unit vector, east / north) and
distance, and per branch key the cosine between the branch's bearing and the goal direction
(``geometry``, 6 numbers). Head: keypoints, ``aux``, ``geometry`` and the vector features through two
hidden layers of 128 (ReLU) to one logit per action; actions the mask forbids get ``-1e9``.
A second branch (strides 2, 2, 1) reads the 64 px crop around the agent marker; a linear layer
reads from its keypoints the marker's heading (sin, cos; auxiliary target the camera yaw), which gives
the goal direction relative to the heading (cos, sin; 2 more numbers for the head).
``blind=True`` is the same network with the images replaced by zeros (its keypoints, positions and
geometry are then constants).
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


def _branch(in_channels: int, channels: int, first_stride: int = 2) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(in_channels, channels, 3, stride=first_stride, padding=1), nn.ReLU(),
        nn.Conv2d(channels, channels, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(channels, channels, 3, stride=1, padding=1),
        SpatialSoftmax(),
    )


class BCPolicy(nn.Module):
    """Args: image channels (9: the 6 map channels, then the 3 crop channels), vector size, number of
    actions, ``blind``, conv channels, hidden width."""

    def __init__(self, in_channels: int, n_vector: int, n_actions: int, blind: bool = False, channels: int = 16,
                 hidden: int = 128):
        super().__init__()
        self.blind = bool(blind)
        self.split = 6
        self.conv = _branch(self.split, channels, first_stride=1)  # markers are 1-2 px at 64 px: keep detail
        self.crop_conv = _branch(in_channels - self.split, channels)
        self.aux = nn.Linear(2 * channels, 4)
        self.heading = nn.Linear(2 * channels, 2)
        self.head = nn.Sequential(nn.Linear(4 * channels + 4 + 6 + 2 + 2 + n_vector, hidden), nn.ReLU(),
                                  nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, n_actions))

    @staticmethod
    def geometry(aux: torch.Tensor, vector: torch.Tensor) -> torch.Tensor:
        """Goal direction (east, north; image v points south), distance, and per LEFT/RIGHT/UP the cosine
        between its bearing (``vector[5i + 1: 5i + 3]`` = sin, cos) and the goal direction."""
        east = aux[:, 2] - aux[:, 0]
        north = aux[:, 1] - aux[:, 3]
        dist = torch.sqrt(east ** 2 + north ** 2 + 1e-6)
        ue, un = east / dist, north / dist
        cos = [vector[:, 5 * i + 1] * ue + vector[:, 5 * i + 2] * un for i in range(3)]
        return torch.stack([ue, un, dist, *cos], dim=1)

    def forward(self, images: torch.Tensor, vector: torch.Tensor, mask: torch.Tensor,
                with_aux: bool = False):
        if self.blind:
            images = torch.zeros_like(images)
        kp = self.conv(images[:, :self.split])
        kc = self.crop_conv(images[:, self.split:])
        aux = self.aux(kp)
        head = self.heading(kc)  # (sin, cos) of the marker's heading
        geo = self.geometry(aux, vector)
        rel = torch.stack([head[:, 0] * geo[:, 0] + head[:, 1] * geo[:, 1],
                           head[:, 1] * geo[:, 0] - head[:, 0] * geo[:, 1]], dim=1)  # cos, sin goal vs heading
        z = torch.cat([kp, kc, aux, geo, head, rel, vector], dim=1)
        logits = self.head(z).masked_fill(mask <= 0, -1e9)
        return (logits, torch.cat([aux, head], dim=1)) if with_aux else logits


__all__ = ["BCPolicy", "SpatialSoftmax"]
