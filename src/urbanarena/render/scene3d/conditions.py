"""Weather and time of day of the scene renderer: named conditions and the lighting they imply.

A condition is a weather (``clear``, ``cloudy``, ``rain``, ``fog``) times a time of day
(``day``, ``dusk``, ``night``), the fields ``weather`` and ``time_of_day`` of
:class:`~urbanarena.render.scene3d.render_settings.RenderSettings`. The six named conditions
(:data:`CONDITIONS`) are ``clear`` (= clear day, the default), ``cloudy``, ``rain``, ``fog``
(daytime), ``dusk`` and ``night`` (clear sky); any other pair is named ``WEATHER+TIME``
(``rain+night``, ``fog+dusk``); :func:`parse_condition` reads either order and ``,`` too.

:func:`lighting` turns the settings into the uniforms of the ``WEATHER`` shader variant
(:mod:`.shaders`). The clear day never uses it: the default settings draw with the
original shaders, so their pixels (and the cache keys) are exactly those of the renderer
before conditions existed. Rules (``base`` = the settings' own sun, ambient and sky: the
clear day):

* **Time of day** sets the sun and the sky. ``day``: the base sun
  (``sun_elevation_deg``, default 40 degrees), white. ``dusk``: the sun 4 degrees above
  the horizon, 90 degrees clockwise of the base azimuth (an evening sun in the west),
  reddened (sunlight through a long air mass loses its blue: RGB ``(1, .62, .36)``)
  and weaker; a bluish skylight ambient; a warm horizon, deep blue zenith and a glow around the sun.
  ``night``: no sun; a faint bluish ambient (moon and city sky glow, 0.075 of 1); a dark sky
  with a lighter, warmer horizon (light pollution).
* **Weather** filters the sun and replaces the sky. ``cloudy``: 12 % of the direct sun
  gets through, diffuse skylight from above (hemisphere weight 0.35 instead of 0.2), a grey
  sky with the CIE standard overcast luminance distribution ``L(e) = L_z (1 + 2 sin e) / 3``
  (Moon & Spencer 1942; CIE S 011/E:2003 sky type 1). ``rain``: overcast with no direct
  sun, darker, heavy-rain visibility (MOR 800 m), wet surfaces (ground albedo x 0.55, walls
  and objects x 0.8, Schlick-Fresnel reflection of the sky with ``F0 = 0.02`` for water
  on the ground) and rain streaks (:data:`RAIN_LAYERS_M`) drawn deterministically from
  ``rain_seed`` (the ``photo`` style draws no streaks: wet ground and puddles, :mod:`.photo_atmosphere`). ``fog``: very dense fog, meteorological optical range 12 m; 8 % of the sun.
  (OCR reads a sign up to about the MOR -- at 15 m MOR every sign of the 20-POI legibility sample
  is read at 10 m, at 10 m MOR none is -- so ``fog`` is the fog in which 10 m signs start to fail.)
* **Extinction**: the scene keeps ``exp(-sigma d)`` of its colour at distance ``d``
  (Beer-Lambert, homogeneous fog) with ``sigma = ln(20) / MOR`` -- the WMO meteorological
  optical range is the distance at which a black object's contrast falls to 5 %
  (WMO-No. 8, CIMO Guide, vol. I ch. 9) -- on top of the base haze ``1 / (1 + (d / fog_m)^2)``;
  the rest is the horizon (fog) colour. The sky shows through ``exp(-sigma * 500 m)`` of
  fog (:data:`SKY_FOG_PATH_M`).
* **Lights** (dusk and night): street lamps are point lights at the heads of the scene's
  ``street_lamp`` objects (up to :data:`MAX_LAMPS` nearest to the camera within
  :data:`LAMP_RANGE_M`), warm white, with a street-light intensity distribution
  ``I(g) = I0 min(1 / cos^3 g, 2.5)`` of the angle ``g`` from the nadir (``1 / cos^3``
  gives uniform ground illuminance; the cap is a batwing peak of 2.5 I0), fading to zero
  between 60 and 80 degrees (a full cut-off luminaire), inverse-square falloff windowed
  by ``(1 - (d / R)^4)^2`` (Karis 2013, "Real Shading in Unreal Engine 4") with ``R =
  LAMP_RANGE_M``. ``I0`` gives 0.55 (of the albedo) of illuminance on the ground under a
  lamp. Lamp heads glow. Shop signs are light boxes: they emit ``glow * (floor + (1 - floor)
  * texture)`` -- the dark letters transmit ``floor`` of the light too, so the lit sign has
  less contrast than by day (night: glow 0.6, floor 0.3; dusk: 0.35, 0.3) -- plus the
  (dim) ambient and lamp light. Not every shop's sign is on: a per-sign hash lights 60 % at night
  and 40 % at dusk; the others are lit only by the ambient and the lamps. A fraction of windows is lit (night 35 %, dusk 15 %; shop windows 80 % and 40 %),
  chosen per window by the facade shader's integer hash.
* **Camera noise**: an auto-ISO camera raises its gain as light falls, ``G = E_clear / E`` of the
  horizontal illuminance (:func:`sensor_gain`; clamped to 1..16: night about 14.7, dusk 2.9, rain 1.6,
  fog 1.3, cloudy 1.2), and the image gets the photon-transfer noise of that gain
  (:meth:`.weather.WeatherPass.sensor_noise`: variance ``G K v + (G r)^2`` at level ``v``, ``K =
  0.05``, ``r = 0.5``), deterministic from ``rain_seed``. The clear day is rendered noise-free (its
  noise at ``G = 1``, a standard deviation of about 2 levels, is left out to keep its pixels).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

WEATHERS: tuple[str, ...] = ("clear", "cloudy", "rain", "fog")
TIMES_OF_DAY: tuple[str, ...] = ("day", "dusk", "night")
#: the named conditions (weather alone = daytime; a time of day alone = clear sky)
CONDITIONS: tuple[str, ...] = ("clear", "cloudy", "rain", "fog", "dusk", "night")

#: meteorological optical range (metres) of each weather (``inf`` = only the base haze)
VISIBILITY_M: dict[str, float] = {"clear": math.inf, "cloudy": math.inf, "rain": 800.0, "fog": 12.0}
#: metres of fog the sky is seen through (how much fog hides the sky)
SKY_FOG_PATH_M = 500.0
#: street lamps passed to the shaders per view (nearest to the camera first)
MAX_LAMPS = 48
#: a lamp's light reaches this far (metres; windowed falloff)
LAMP_RANGE_M = 40.0
#: ground illuminance under a lamp, fraction of full light (sets ``I0 = E h^2``)
LAMP_GROUND_E = 0.55
#: warm-white lamp colour (LED street lights of about 3000 K)
LAMP_RGB = (1.0, 0.86, 0.66)
#: largest camera gain (auto-ISO limit)
MAX_GAIN = 16.0
#: distances (metres) of the rain-streak layers from the camera
RAIN_LAYERS_M: tuple[float, ...] = (1.5, 3.0, 6.0)


def condition_name(weather: str, time_of_day: str) -> str:
    """Name of a weather x time-of-day pair: ``clear`` for the clear day, the weather alone by day, the
    time alone under a clear sky, else ``WEATHER+TIME`` (``rain+night``)."""
    if time_of_day == "day":
        return weather
    if weather == "clear":
        return time_of_day
    return f"{weather}+{time_of_day}"


def parse_condition(text: str) -> tuple[str, str]:
    """``(weather, time_of_day)`` of a condition name: one of :data:`CONDITIONS`, a time of day alone
    (``day`` = ``clear``) or a weather and a time joined by ``+`` or ``,`` in either order.

    Raises:
        ValueError: unknown words, two weathers or two times.
    """
    parts = [p.strip().lower() for p in str(text).replace(",", "+").split("+") if p.strip()]
    if not parts or len(parts) > 2:
        raise ValueError(f"condition {text!r}: expected WEATHER, TIME or WEATHER+TIME "
                         f"(weather: {', '.join(WEATHERS)}; time: {', '.join(TIMES_OF_DAY)})")
    weather = time = None
    for p in parts:
        if p in WEATHERS and weather is None:
            weather = p
        elif p in TIMES_OF_DAY and time is None:
            time = p
        else:
            raise ValueError(f"condition {text!r}: {p!r} is not a weather ({', '.join(WEATHERS)}) or time of day "
                             f"({', '.join(TIMES_OF_DAY)}), or repeats one")
    return weather or "clear", time or "day"


def _lin(c: float) -> float:
    """sRGB -> linear (IEC 61966-2-1)."""
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def _srgb(c: float) -> float:
    """linear -> sRGB (IEC 61966-2-1)."""
    c = min(max(c, 0.0), 1.0)
    return 12.92 * c if c <= 0.0031308 else 1.055 * c ** (1 / 2.4) - 0.055


def _unit(rgb) -> tuple[float, float, float]:
    return tuple(float(c) / 255.0 for c in rgb)  # type: ignore[return-value]


@dataclass(frozen=True)
class Lighting:
    """Uniform values of the ``WEATHER`` shaders (colours 0..1 sRGB unless said otherwise; module docstring).

    Attributes:
        sun_dir: unit vector towards the sun (x east, y north, z up).
        sun, sun_rgb: direct sunlight intensity and colour.
        ambient, ambient_rgb, hemi: ambient ``ambient * (1 - hemi + hemi * n_z)`` in colour ``ambient_rgb``.
        horizon, zenith: sky colours; ``horizon`` is also the fog colour.
        overcast: 1 = CIE overcast sky gradient, 0 = the clear gradient.
        sun_glow: strength of the glow around the sun in the sky.
        sigma_per_m: extinction coefficient; inv_fog2: base haze ``1 / fog_m^2``; sky_clear: sky visibility.
        wet: 0..1 wet surfaces; rain: rain streaks on/off.
        lamps: street-lamp intensity ``I0`` (0 = off); lamp_rgb: its colour.
        sign_ambient: sign faces' ambient; sign_glow, sign_floor: light-box emission (module docstring).
        window_lit, shop_lit: fractions of lit windows; window_glow: their brightness.
        sign_lit: fraction of shop signs lit (light boxes switched on).
        sensor_gain: camera gain relative to the clear day (:func:`sensor_gain`; noise model in :mod:`.weather`).
    """

    sun_dir: tuple[float, float, float]
    sun: float
    sun_rgb: tuple[float, float, float]
    ambient: float
    ambient_rgb: tuple[float, float, float]
    hemi: float
    horizon: tuple[float, float, float]
    zenith: tuple[float, float, float]
    overcast: float
    sun_glow: float
    sigma_per_m: float
    inv_fog2: float
    sky_clear: float
    wet: float
    rain: bool
    lamps: float
    lamp_rgb: tuple[float, float, float]
    sign_ambient: float
    sign_glow: float
    sign_floor: float
    window_lit: float
    shop_lit: float
    window_glow: float
    sign_lit: float
    sensor_gain: float


#: time of day -> sun elevation (None = base), azimuth offset, intensity factor, colour; ambient, its colour;
#: clear sky horizon, zenith (None = base); sun glow; lamps, sign glow, window / shop lit fractions, window glow
_TIME = {
    "day": dict(elev=None, az_off=0.0, sun=1.0, sun_rgb=(1.0, 1.0, 1.0), amb=1.0, amb_rgb=(1.0, 1.0, 1.0),
                horizon=None, zenith=None, glow=0.0, lamps=False, sign_glow=0.0, window=0.0, shop=0.0,
                window_glow=0.0, sign_lit=0.0, overcast_zenith=(226, 229, 233), fog=(196, 199, 202), rain_zenith=(168, 173, 180)),
    "dusk": dict(elev=4.0, az_off=90.0, sun=0.84, sun_rgb=(1.0, 0.62, 0.36), amb=0.55, amb_rgb=(0.82, 0.84, 1.0),
                 horizon=(238, 158, 104), zenith=(52, 72, 128), glow=0.5, lamps=True, sign_glow=0.35, window=0.15,
                 shop=0.4, window_glow=0.5, sign_lit=0.4, overcast_zenith=(150, 132, 128), fog=(150, 136, 130),
                 rain_zenith=(112, 102, 102)),
    "night": dict(elev=None, az_off=0.0, sun=0.0, sun_rgb=(1.0, 1.0, 1.0), amb=0.075 / 0.62,
                  amb_rgb=(0.7, 0.8, 1.05), horizon=(46, 42, 52), zenith=(6, 10, 24), glow=0.0, lamps=True,
                  sign_glow=0.6, window=0.35, shop=0.8, window_glow=0.6, sign_lit=0.6, overcast_zenith=(58, 50, 50),
                  fog=(34, 33, 38), rain_zenith=(44, 40, 42)),
}

#: weather -> fraction of direct sun, ambient factor, hemisphere weight, wetness, rain streaks
_WEATHER = {
    "clear": dict(sun=1.0, amb=1.0, hemi=0.2, wet=0.0, rain=False),
    "cloudy": dict(sun=0.12, amb=1.16, hemi=0.35, wet=0.0, rain=False),
    "rain": dict(sun=0.0, amb=0.95, hemi=0.35, wet=1.0, rain=True),
    "fog": dict(sun=0.08, amb=1.1, hemi=0.3, wet=0.0, rain=False),
}


def lighting(settings) -> Lighting:
    """The ``WEATHER`` shader uniforms of ``settings`` (a :class:`~.renderer.RenderSettings`; module docstring).

    Raises:
        ValueError: unknown weather or time of day.
    """
    weather, tod = settings.weather, settings.time_of_day
    if weather not in _WEATHER or tod not in _TIME:
        raise ValueError(f"unknown condition weather={weather!r} time_of_day={tod!r}")
    t, w = _TIME[tod], _WEATHER[weather]
    elev = settings.sun_elevation_deg if t["elev"] is None else t["elev"]
    az = (settings.sun_azimuth_deg + t["az_off"]) % 360.0
    a, e = math.radians(az), math.radians(elev)
    sun_dir = (math.sin(a) * math.cos(e), math.cos(a) * math.cos(e), math.sin(e))
    horizon = _unit(settings.horizon_rgb if t["horizon"] is None else t["horizon"])
    zenith = _unit(settings.zenith_rgb if t["zenith"] is None else t["zenith"])
    overcast = 0.0
    glow = t["glow"]
    if weather in ("cloudy", "rain"):
        z = _unit(t["overcast_zenith"] if weather == "cloudy" else t["rain_zenith"])
        # CIE overcast: the horizon has a third of the zenith's luminance (linear light)
        horizon = tuple(_srgb(_lin(c) / 3.0) for c in z)  # type: ignore[assignment]
        zenith, overcast, glow = z, 1.0, 0.0
    elif weather == "fog":
        horizon = zenith = _unit(t["fog"])
        glow = 0.0
    mor = VISIBILITY_M[weather]
    sigma = 0.0 if math.isinf(mor) else math.log(20.0) / mor
    lamp_h = 4.9  # light centre height of the street-lamp mesh (meshes.object_mesh)
    light = Lighting(
        sun_dir=sun_dir, sun=settings.sun * t["sun"] * w["sun"], sun_rgb=t["sun_rgb"],
        ambient=settings.ambient * t["amb"] * w["amb"], ambient_rgb=t["amb_rgb"], hemi=w["hemi"],
        horizon=horizon, zenith=zenith, overcast=overcast, sun_glow=glow, sigma_per_m=sigma,
        inv_fog2=1.0 / (settings.fog_m * settings.fog_m), sky_clear=math.exp(-sigma * SKY_FOG_PATH_M),
        wet=w["wet"], rain=w["rain"], lamps=LAMP_GROUND_E * lamp_h * lamp_h if t["lamps"] else 0.0,
        lamp_rgb=LAMP_RGB, sign_ambient=settings.sign_ambient * t["amb"] * w["amb"],
        sign_glow=t["sign_glow"], sign_floor=0.3, window_lit=t["window"], shop_lit=t["shop"],
        window_glow=t["window_glow"], sign_lit=t["sign_lit"], sensor_gain=1.0,
    )
    from dataclasses import replace

    return replace(light, sensor_gain=sensor_gain(settings, light))


def illuminance(sun: float, sun_rgb, sun_elevation_deg: float, ambient: float, ambient_rgb) -> float:
    """Light on a horizontal surface (render units, albedo 1): ``ambient * mean(ambient_rgb) + sun *
    mean(sun_rgb) * max(sin(elevation), 0)`` (the shaders' lighting with the normal up)."""
    return (ambient * sum(ambient_rgb) / 3.0
            + sun * sum(sun_rgb) / 3.0 * max(math.sin(math.radians(sun_elevation_deg)), 0.0))


def sensor_gain(settings, light: Lighting) -> float:
    """Camera gain of a condition: an auto-ISO camera raises its gain as the light falls, ``G = E_clear / E``
    (:func:`illuminance` of the clear day over the condition's), clamped to ``[1, MAX_GAIN]``."""
    e_day = illuminance(settings.sun, (1.0, 1.0, 1.0), settings.sun_elevation_deg, settings.ambient, (1.0, 1.0, 1.0))
    elev = math.degrees(math.asin(max(-1.0, min(1.0, light.sun_dir[2]))))
    e = illuminance(light.sun, light.sun_rgb, elev, light.ambient, light.ambient_rgb)
    return float(min(max(e_day / max(e, 1e-6), 1.0), MAX_GAIN))


__all__ = ["CONDITIONS", "LAMP_RANGE_M", "Lighting", "MAX_LAMPS", "RAIN_LAYERS_M", "TIMES_OF_DAY", "WEATHERS",
           "condition_name", "lighting", "parse_condition"]
