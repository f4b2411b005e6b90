"""City data: the pose graph, its geometry helpers, on-disk format and importers."""

from urbanarena.world.city import City
from urbanarena.world.geo import LocalFrame, geodesic_distance_m, wrap_deg, angle_diff_deg

__all__ = ["City", "LocalFrame", "geodesic_distance_m", "wrap_deg", "angle_diff_deg"]
