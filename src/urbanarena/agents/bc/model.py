"""The behaviour-cloning network (PyTorch; the ``train`` extra).

A multilayer perceptron over the feature vector (:mod:`urbanarena.agents.bc.features`): two hidden
layers of ``hidden`` units (ReLU) to one logit per action; actions the mask forbids get ``-1e9``. The
images reach it through the map reading of the featurizer (the goal's distance and bearing relative
to the heading and to each branch arrow); the blind ablation is the same network fed the features of
all-zero images.
"""

from __future__ import annotations

import torch
from torch import nn


class BCPolicy(nn.Module):
    """Args: vector size, number of actions, hidden width. ``forward(vector (N, n_vector), mask (N,
    n_actions))`` returns the masked logits ``(N, n_actions)``."""

    def __init__(self, n_vector: int, n_actions: int, hidden: int = 128):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_vector, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, n_actions))

    def forward(self, vector: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.net(vector).masked_fill(mask <= 0, -1e9)


__all__ = ["BCPolicy"]
