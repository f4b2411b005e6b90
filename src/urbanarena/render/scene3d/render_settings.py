"""The renderer's settings (:class:`RenderSettings`: light, sky, quality, condition, style, population; part of every
cache key) and the render style names they accept (:mod:`.styles` says what each style looks like)."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass

import numpy as np

RENDER_STYLES = ("realistic", "flat", "photo")
DEFAULT_RENDER_STYLE = "photo"


def check_style(style: str) -> str:
    """``style`` when it is a known style.

    Raises:
        ValueError: unknown style (the message lists the known ones).
    """
    if style not in RENDER_STYLES:
        raise ValueError(f"render style must be one of {', '.join(RENDER_STYLES)}, got {style!r}")
    return style


@dataclass(frozen=True)
class RenderSettings:
    """Lighting and quality settings (part of the cache key).

    Attributes:
        sun_azimuth_deg, sun_elevation_deg: direction towards the sun (compass / above horizon).
        ambient, sun: light intensities (see :mod:`.shaders`).
        sign_ambient: brightness of sign faces (backlit boxes).
        horizon_rgb, zenith_rgb: sky gradient; the horizon colour is also the fog colour.
        fog_m: fog distance: the scene keeps ``1 / (1 + (d / fog_m)^2)`` of its colour at distance ``d``.
        near_m, far_m: clip planes.
        samples: MSAA samples (0 or 1 = off).
        floor_h_m, ground_h_m: storey heights used for window rows.
        sign_px_per_m: sign texture resolution (pixels per metre of sign).
        object_distance_m: street objects (and sign bodies) in ground tiles farther than this
            are not drawn (a 0.5 m object 200 m away spans under 1 px of a 2048 px panorama).
        weather: ``clear``, ``cloudy``, ``rain`` or ``fog``; time_of_day: ``day``, ``dusk`` or ``night``
            (:mod:`.conditions`: what each changes, on top of the settings above, which describe the clear
            day). rain_seed: seed of the rain streaks. style: ``flat`` (the original look; this class's
            default), ``realistic`` (:mod:`.styles`; the commands' default) or ``photo`` (realistic with the
            fetched textured people and vehicles, :mod:`.population_photo`). :meth:`for_condition` builds settings from a name
            (``night``, ``rain+dusk``); :attr:`condition` names them. The clear day (the default) draws
            with the original shaders: exactly the pixels and cache keys of the renderer before conditions.
        population: ``none`` (this class's default) or ``snapshot``: the people and vehicles of each node's
            panorama (:mod:`.population`; drawn by the panorama store, not by :meth:`SceneRenderer.render_view`),
            seeded with ``population_seed``.
    Raises:
        ValueError: unknown weather or time of day.
    """

    sun_azimuth_deg: float = 200.0
    sun_elevation_deg: float = 40.0
    ambient: float = 0.62
    sun: float = 0.5
    sign_ambient: float = 0.95
    horizon_rgb: tuple[int, int, int] = (205, 220, 236)
    zenith_rgb: tuple[int, int, int] = (92, 142, 212)
    fog_m: float = 900.0
    near_m: float = 0.2
    far_m: float = 3000.0
    samples: int = 0
    floor_h_m: float = 3.2
    ground_h_m: float = 3.6
    sign_px_per_m: float = 128.0
    object_distance_m: float = 200.0
    weather: str = "clear"
    time_of_day: str = "day"
    rain_seed: int = 0
    style: str = "flat"
    population: str = "none"
    population_seed: int = 0

    def __post_init__(self) -> None:
        from urbanarena.render.scene3d.conditions import TIMES_OF_DAY, WEATHERS
        from urbanarena.render.scene3d.population import check_population

        check_style(self.style)
        check_population(self.population)

        if self.weather not in WEATHERS:
            raise ValueError(f"weather must be one of {', '.join(WEATHERS)}, got {self.weather!r}")
        if self.time_of_day not in TIMES_OF_DAY:
            raise ValueError(f"time_of_day must be one of {', '.join(TIMES_OF_DAY)}, got {self.time_of_day!r}")

    @classmethod
    def for_condition(cls, condition: str, **fields) -> "RenderSettings":
        """Settings for a named condition (``clear``, ``cloudy``, ``rain``, ``fog``, ``dusk``, ``night`` or
        ``WEATHER+TIME``; :func:`.conditions.parse_condition`), other fields as given or default.

        Raises:
            ValueError: unknown condition.
        """
        from urbanarena.render.scene3d.conditions import parse_condition

        weather, time_of_day = parse_condition(condition)
        return cls(**{**fields, "weather": weather, "time_of_day": time_of_day})

    @property
    def condition(self) -> str:
        """Name of the condition (``clear``, ``night``, ``rain+dusk``; :func:`.conditions.condition_name`)."""
        from urbanarena.render.scene3d.conditions import condition_name

        return condition_name(self.weather, self.time_of_day)

    @property
    def is_realistic(self) -> bool:
        """True for the ``realistic`` style and for ``photo``, which starts from it (:mod:`.styles`)."""
        return self.style in ("realistic", "photo")

    @property
    def is_clear_day(self) -> bool:
        """True for the default condition (drawn with the original shaders)."""
        return self.weather == "clear" and self.time_of_day == "day"

    def identity_dict(self) -> dict:
        """The fields that determine pixels: all of them, except the condition fields while they hold their
        defaults (any other condition changes the dict, hence the key). The ``style`` field is always there:
        adding it changed every cache key once (the flat style's pixels did not change). ``population`` and
        ``population_seed`` are left out at their defaults (``none``, 0), so keys without people are unchanged."""
        d = asdict(self)
        for name, default in (("weather", "clear"), ("time_of_day", "day"), ("rain_seed", 0),
                              ("population", "none"), ("population_seed", 0)):
            if d[name] == default:
                del d[name]
        return d

    def key(self) -> str:
        """Short stable hash of the settings (:meth:`identity_dict`)."""
        return hashlib.sha256(json.dumps(self.identity_dict(), sort_keys=True).encode()).hexdigest()[:16]

    @property
    def sun_dir(self) -> np.ndarray:
        a, e = math.radians(self.sun_azimuth_deg), math.radians(self.sun_elevation_deg)
        return np.array([math.sin(a) * math.cos(e), math.cos(a) * math.cos(e), math.sin(e)])


__all__ = ["DEFAULT_RENDER_STYLE", "RENDER_STYLES", "RenderSettings", "check_style"]
