"""Control modes for VLM agents: the same agent and prompts with its pictures withheld or replaced.

Reports use them to separate perception from reasoning (issue 4):

===========================  ==================================================================
mode (``urbanarena run``)    what the model gets instead of pictures
===========================  ==================================================================
normal                       every picture (camera view, maps, reference images, panoramas)
``--blind``                  no picture at all; each image part is replaced by the line
                             :data:`NO_IMAGE_TEXT`, the rest of every prompt is unchanged (how far
                             does a text-only model get on names it knows from pre-training?)
``--no-map``                 no map picture (current-location map, 5 x 5 grid map, start/goal
                             map); each is replaced by :data:`NO_MAP_TEXT`
``--oracle-perception``      no picture; every scene picture (camera view, panorama, crop,
                             reference photo) is replaced by the list of annotated POIs and
                             street objects it shows (:func:`urbanarena.env.perception.features_in_view`:
                             name, category, bearing relative to the picture's centre, distance
                             in metres) and every map by :data:`NO_MAP_TEXT`
===========================  ==================================================================

``--no-map`` combines with either of the others (it changes nothing more there: neither sends a
map); ``--blind`` and ``--oracle-perception`` exclude each other.

How it composes. The mode is a value (:class:`ControlMode`) the VLM agents hold
(``control`` parameter) and ask for the message parts of each picture
(:meth:`ControlMode.parts`): a strategy around the observation, no branches on flags in the
agents' prompts. Scene features for the arena's camera view come from the env itself:
:meth:`ControlMode.env_wrapper` wraps the arena env in
:class:`~urbanarena.env.perception.FeaturesInViewWrapper`, which adds
``observation["features_in_view"]``. Agents that withhold the camera view set
``uses_images = False``, so the runner does not even render it.

Where it is recorded. The mode enters the agent's ``config()`` (key ``control``, only when it is
not normal, so normal configs keep their hashes) and the run's episode config
(:class:`~urbanarena.runner.config.EpisodeConfig` ``control``): part of the config hash, so a
blind run never shares store keys with a normal one, and shown by ``summary`` (``config``) and
in ``run.json``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable, Mapping, Sequence

from urbanarena.agents.clients import Image, Text

#: roles of pictures in a request
VIEW, MAP, REFERENCE_PHOTO, REFERENCE_MAP, PANORAMA, CROP = (
    "view", "map", "reference_photo", "reference_map", "panorama", "crop")
SCENE_ROLES = frozenset({VIEW, REFERENCE_PHOTO, PANORAMA, CROP})
MAP_ROLES = frozenset({MAP, REFERENCE_MAP})
#: task kinds whose reference images are maps (5 x 5 grid map; start/goal map)
MAP_REFERENCE_KINDS = frozenset({"localization", "map_navigation"})

NO_IMAGE_TEXT = "[No image is available: images are withheld in this run.]"
NO_MAP_TEXT = "[No map is available in this run.]"
FEATURES_HEADER = ("[The picture is withheld; instead, the places and objects it shows (bearing relative to "
                   "the picture's centre, negative = left; distance from the camera):]")
NO_FEATURES_TEXT = "(no annotated place or object in view)"
#: flag names of the ``run`` command, by field
FLAGS = {"blind": "--blind", "no_map": "--no-map", "oracle_perception": "--oracle-perception"}


def describe_features(features: Sequence[Mapping[str, Any]]) -> str:
    """The text that stands for a picture under oracle perception: a header line, then one line per
    feature ``- "Name" (shop=bakery): 12 deg right, 8.3 m`` (unnamed: ``- bench: ...``), nearest first;
    ``(no annotated place or object in view)`` when there is none."""
    lines = [FEATURES_HEADER]
    if not features:
        lines.append(NO_FEATURES_TEXT)
    for f in features:
        rel = float(f["relative_deg"])
        side = "ahead" if abs(rel) < 0.5 else f"{abs(rel):.0f} deg {'left' if rel < 0 else 'right'}"
        what = f'"{f["name"]}" ({f["category"]})' if f.get("name") else str(f["category"])
        lines.append(f"- {what}: {side}, {float(f['distance_m']):.1f} m")
    return "\n".join(lines)


@dataclass(frozen=True)
class ControlMode:
    """What an agent is shown instead of its pictures (module docstring).

    Attributes:
        blind: withhold every picture.
        no_map: withhold map pictures.
        oracle_perception: replace scene pictures with the features they show.
        perception_range_m: range of the oracle's features, metres.
    Raises:
        ValueError: ``blind`` together with ``oracle_perception``, or a range <= 0.
    """

    blind: bool = False
    no_map: bool = False
    oracle_perception: bool = False
    perception_range_m: float = 50.0

    def __post_init__(self):
        for k in ("blind", "no_map", "oracle_perception"):
            if not isinstance(getattr(self, k), bool):
                raise ValueError(f"control mode {k} must be true or false, got {getattr(self, k)!r}")
        if self.blind and self.oracle_perception:
            raise ValueError("--blind and --oracle-perception exclude each other (blind withholds what oracle "
                             "perception describes)")
        if not float(self.perception_range_m) > 0:
            raise ValueError(f"perception_range_m must be > 0, got {self.perception_range_m}")

    @classmethod
    def from_value(cls, value: "ControlMode | Mapping[str, Any] | str | None") -> "ControlMode":
        """A mode from ``None`` (normal), a mode, a mapping of its fields, or a string such as
        ``"blind"``, ``"no-map+oracle-perception"`` or ``"normal"``.

        Raises: ``ValueError`` for unknown fields or names.
        """
        if value is None:
            return cls()
        if isinstance(value, ControlMode):
            return value
        if isinstance(value, str):
            names = [n.strip() for n in value.replace(",", "+").split("+") if n.strip()]
            by_flag = {v.lstrip("-"): k for k, v in FLAGS.items()}
            unknown = [n for n in names if n != "normal" and n not in by_flag]
            if unknown:
                raise ValueError(f"unknown control mode {unknown[0]!r}; known: normal, {', '.join(by_flag)}")
            return cls(**{by_flag[n]: True for n in names if n != "normal"})
        if isinstance(value, Mapping):
            unknown = sorted(set(value) - {"blind", "no_map", "oracle_perception", "perception_range_m"})
            if unknown:
                raise ValueError(f"unknown control-mode field(s) {', '.join(unknown)}")
            return cls(**dict(value))
        raise ValueError(f"control mode must be a mapping, a name or None, got {type(value).__name__}")

    @property
    def is_normal(self) -> bool:
        return not (self.blind or self.no_map or self.oracle_perception)

    @property
    def shows_view(self) -> bool:
        """Whether the camera view's pixels are sent (else the runner need not render it)."""
        return not (self.blind or self.oracle_perception)

    def label(self) -> str:
        """``normal``, or the flags joined by ``+`` (``blind+no-map``)."""
        on = [FLAGS[k].lstrip("-") for k in FLAGS if getattr(self, k)]
        return "+".join(on) if on else "normal"

    def flags(self) -> list[str]:
        """The ``urbanarena run`` flags of this mode."""
        return [FLAGS[k] for k in FLAGS if getattr(self, k)]

    def fields(self) -> dict[str, Any]:
        """The fields (``ControlMode(**mode.fields()) == mode``)."""
        return asdict(self)

    def as_dict(self) -> dict[str, Any]:
        """JSON-able fields plus ``label`` (what configs store and hash)."""
        return {**asdict(self), "label": self.label()}

    # ------------------------------------------------------------ pictures
    def parts(self, role: str, image: Any, features: Sequence[Mapping[str, Any]] | None = None) -> list[Text | Image]:
        """The message parts that stand for one picture.

        Args:
            role: :data:`VIEW`, :data:`MAP`, :data:`REFERENCE_PHOTO`, :data:`REFERENCE_MAP`,
                :data:`PANORAMA` or :data:`CROP`.
            image: the picture (RGB array), or ``None`` when it was not produced (a mode that
                withholds it).
            features: under oracle perception, the features the picture shows (dicts of
                :class:`~urbanarena.env.perception.Feature`); ``None`` when unknown (a reference
                photo without a recorded camera is then withheld with :data:`NO_IMAGE_TEXT`).
        Returns: ``[Image(image)]`` in normal mode, else one :class:`Text` part.
        Raises:
            ValueError: unknown role; the camera view under oracle perception without features
                (the env was not wrapped with :meth:`env_wrapper`); a picture that should be sent
                is ``None``.
        """
        if role not in SCENE_ROLES | MAP_ROLES:
            raise ValueError(f"unknown picture role {role!r}")
        if self.blind:
            return [Text(NO_IMAGE_TEXT)]
        if role in MAP_ROLES and (self.no_map or self.oracle_perception):
            return [Text(NO_MAP_TEXT)]
        if self.oracle_perception:
            if features is None:
                if role == VIEW:
                    raise ValueError("oracle perception: the observation has no 'features_in_view' (wrap the arena "
                                     "env with ControlMode.env_wrapper)")
                return [Text(NO_IMAGE_TEXT)]
            return [Text(describe_features(features))]
        if image is None:
            raise ValueError(f"no {role.replace('_', ' ')} picture to send")
        return [Image(image)]

    def env_wrapper(self, hfov_deg: float = 90.0) -> Callable[[Any], Any] | None:
        """A function wrapping an arena env so its observations carry ``features_in_view`` (oracle
        perception only, else ``None``); ``hfov_deg`` is the camera view's field of view."""
        if not self.oracle_perception:
            return None
        from urbanarena.env.perception import FeaturesInViewWrapper

        rng = float(self.perception_range_m)
        return lambda env: FeaturesInViewWrapper(env, hfov_deg=hfov_deg, max_distance_m=rng)


def reference_role(task: Any) -> str:
    """:data:`REFERENCE_MAP` for tasks whose reference images are maps (localization, map navigation),
    else :data:`REFERENCE_PHOTO`."""
    kind = (getattr(task, "extra", None) or {}).get("task_kind")
    return REFERENCE_MAP if kind in MAP_REFERENCE_KINDS else REFERENCE_PHOTO


def reference_features(task: Any, city: Any, mode: ControlMode) -> list[dict[str, Any]] | None:
    """Under oracle perception, the features of a task's reference photo when the task records its
    camera (``extra.reference_view``: ``x_m``, ``y_m``, ``yaw_deg``, ``hfov_deg``; generated
    landmark-image tasks do), else ``None``."""
    view = (getattr(task, "extra", None) or {}).get("reference_view")
    if not mode.oracle_perception or not isinstance(view, Mapping):
        return None
    from urbanarena.env.perception import features_in_view

    feats = features_in_view(city, (float(view["x_m"]), float(view["y_m"]), float(view["yaw_deg"])),
                             float(view.get("hfov_deg", 70.0)), mode.perception_range_m)
    return [f.to_dict() for f in feats]


__all__ = ["CROP", "ControlMode", "FLAGS", "MAP", "NO_FEATURES_TEXT", "NO_IMAGE_TEXT", "NO_MAP_TEXT", "PANORAMA",
           "REFERENCE_MAP", "REFERENCE_PHOTO", "VIEW", "describe_features", "reference_features", "reference_role"]
