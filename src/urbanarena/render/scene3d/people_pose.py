"""A walking stride for the ``photo`` style's standing people models (issue 24: "all in one standing pose").

Ours, photo style only (:mod:`.population_photo` calls it for people who walk, :func:`.people_look.walkers`): the
package's people stand; a walker's legs are swung apart in the walking plane by rotating the corners below the
hip about the hip's horizontal axis (x, through ``(y = 0, z = HIP_Z)``, model frame: unit height, x right,
y forward, z up):

* the left leg (``x > 0`` after the model's centring: the model faces +y, so its left is -x ... either way one
  leg forward, one back) turns by ``+a``, the right one by ``-a``, with ``a = STRIDE_DEG * sin(phase)`` and the
  phase a hash of the placement's ``variant`` (:func:`stride_deg`), so people are caught at different moments
  of their step; across the crotch (``|x| < SIDE_BLEND``) the angle blends linearly between the legs;
* the weight of the turn grows from 0 at ``HIP_Z`` to 1 at ``HIP_Z - HIP_BLEND`` (a smoothstep), so the
  trousers bend at the hip instead of tearing;
* normals turn with their corners; the legs are then moved vertically, each corner by its weight times the
  change of the model's lowest point, so that the lowest corner (a foot, weight 1) stands where it stood (a swung
  leg's foot rises by ``(1 - cos a)`` of the leg, a heel or toe off the axis can dip) while nothing above the hip
  moves: the person keeps its height.

The arms are left as modelled (the package's arms hang at the sides or hold something; swinging them would need
the arm separated from the torso, which the models' meshes do not mark).
"""

from __future__ import annotations

import math

import numpy as np

from urbanarena.render.scene3d.people_look import unit

#: hip height (fraction of the model's height) about which the legs swing
HIP_Z = 0.5
#: the swing's weight grows from 0 at HIP_Z to 1 this far below it (fraction of the height)
HIP_BLEND = 0.08
#: half-width (fraction of the height) of the band around x = 0 in which the two legs' angles blend
SIDE_BLEND = 0.03
#: largest swing of a leg from the vertical, degrees (a leisurely step: about 0.6 m between the feet)
STRIDE_DEG = 17.0


def stride_deg(variant: int) -> float:
    """The left leg's swing (degrees, forward positive) of the placement ``variant``: ``STRIDE_DEG * sin(2 pi
    u)`` with ``u`` a hash of the variant."""
    return STRIDE_DEG * math.sin(2.0 * math.pi * unit(variant, "stride"))


def _smoothstep(e0: float, e1: float, x: np.ndarray) -> np.ndarray:
    t = np.clip((x - e0) / (e1 - e0), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def walk_pose(positions: np.ndarray, normals: np.ndarray, angle_deg: float) -> tuple[np.ndarray, np.ndarray]:
    """``(positions, normals)`` ``(N, 3)`` float32 of a person model (unit height, standing on ``z = 0``) with
    its legs swung by ``angle_deg`` (module docstring: the ``x > 0`` leg forward by it, the other back)."""
    p = positions.astype(np.float64)
    n = normals.astype(np.float64)
    w = 1.0 - _smoothstep(HIP_Z - HIP_BLEND, HIP_Z, p[:, 2])
    side = np.clip(p[:, 0] / SIDE_BLEND, -1.0, 1.0)            # +1 the x > 0 leg, -1 the other
    a = np.radians(angle_deg) * side * w
    c, s = np.cos(a), np.sin(a)
    dy, dz = p[:, 1], p[:, 2] - HIP_Z
    out = p.copy()
    out[:, 1] = dy * c - dz * s
    out[:, 2] = HIP_Z + dy * s + dz * c
    nn = n.copy()
    nn[:, 1] = n[:, 1] * c - n[:, 2] * s
    nn[:, 2] = n[:, 1] * s + n[:, 2] * c
    out[:, 2] -= w * (out[:, 2].min() - p[:, 2].min())
    return out.astype(np.float32), nn.astype(np.float32)


__all__ = ["HIP_BLEND", "HIP_Z", "SIDE_BLEND", "STRIDE_DEG", "stride_deg", "walk_pose"]
