"""What the three registered environments share: text and image encodings, the task source and rewards.

Text (``gymnasium.spaces.Text``): task texts hold spaces, punctuation and non-ASCII letters (street
and POI names), which the Text space's default alphanumeric charset refuses. :data:`CHARSET` is every
printable character of the Basic Multilingual Plane below U+3000 plus newline and tab; a character
outside it (rare: CJK, emoji) is replaced by ``?`` (:func:`encode_text`), and text longer than the
space's ``max_length`` is cut there. Both are counted in ``info["text_replaced_chars"]``.

Images (``Box(0, 255, (H, W, 3), uint8)``): observations are resized with OpenCV's area filter
(:func:`fit_image`) to the env's ``image_size``; a missing image is all zeros.

Task source (:class:`TaskSource`): ``reset(seed=s)`` draws a task of the split with
``numpy.random.default_rng(s)`` (so the same seed gives the same task), from tasks generated on the
split's own area (:mod:`urbanarena.tasks.generators.splits`): ``split="train"`` on ``city="helsinki"``
means the city ``helsinki-train`` (built on first use from the pinned Helsinki extract), ``val``
``helsinki-val``, ``test`` ``helsinki-test``: each split's area cropped as a city of its own, so an agent
that leaves its route never walks another split's streets (the frozen suite of the whole default city,
``helsinki-arena7-v4``, runs through ``urbanarena run --city helsinki``; ``city="helsinki-core",
split="test"`` is the core, whose frozen suites v1/v2 ``tasks="mini"`` reaches). Generated tasks are cached under
``$URBANARENA_HOME/gym/``. The generators run here without the oracle verification that ``urbanarena
tasks generate`` adds (the oracle lives in the agents layer, above this one), so a drawn task is not
guaranteed solvable within the step limit; pass ``tasks=FILE`` (a verified task file of the same city)
to use a verified suite. Frozen suites (``tasks="mini"`` ...) are test-split only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from urbanarena.errors import UrbanArenaError
from urbanarena.tasks.schema import Task
from urbanarena.world.city import City

#: characters the Text spaces accept (module docstring)
CHARSET: str = "\n\t" + "".join(ch for ch in map(chr, range(32, 0x3000)) if ch.isprintable())
_CHARSET_SET = frozenset(CHARSET)
#: longest task / state text in an observation (characters)
MAX_TEXT = 4096
#: the observation keywords every env accepts
OBSERVATIONS = ("text", "rgb", "map", "rgb+map")
#: reward keywords (module docstrings of the envs give the per-family definition)
REWARDS = ("sparse", "shaped")


class GymConfigError(UrbanArenaError, ValueError):
    """A bad keyword of a registered environment (the message names it and the accepted values)."""


class GymActionError(UrbanArenaError, ValueError):
    """An action outside the env's action space (the message names the env, the action and the space).

    ``step`` raises it before anything happens, as Gymnasium's own envs refuse an action their
    ``action_space.contains`` rejects; the episode goes on and the same env may be stepped again."""


def discrete_action(action: Any, n: int, env_id: str) -> int:
    """``action`` as an ``int`` in ``[0, n)``, the members of ``Discrete(n)``.

    Accepted: a Python ``int``, a NumPy integer scalar, or a 0-d integer array. Refused (the value would
    otherwise be truncated or wrapped): floats (``2.5``, and ``2.0`` too), bools, strings, arrays of any
    other shape or dtype, and integers outside ``[0, n)``.

    Raises:
        GymActionError: naming ``env_id``, the action and ``Discrete(n)``.
    """
    space = f"Discrete({n})"
    value = action
    if isinstance(value, np.ndarray):
        if value.shape != () or not np.issubdtype(value.dtype, np.integer):
            raise GymActionError(f"{env_id}: action array of shape {value.shape} and dtype {value.dtype} is not "
                                 f"a member of {space} (give one integer)")
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise GymActionError(f"{env_id}: action {_short(action)} of type {type(action).__name__} is not a member "
                             f"of {space} (give an integer in [0, {n - 1}])")
    a = int(value)
    if not 0 <= a < n:
        raise GymActionError(f"{env_id}: action {a} is outside {space} (integers 0 to {n - 1})")
    return a


def text_action(action: Any, max_length: int, env_id: str) -> str:
    """``action`` when it is a member of ``Text(max_length, charset=CHARSET)``: a ``str`` of at most
    ``max_length`` characters, each in :data:`CHARSET`.

    Raises:
        GymActionError: naming ``env_id``, the length or the first character outside the charset.
    """
    if not isinstance(action, str):
        raise GymActionError(f"{env_id}: the action is JSON text (a str), got {type(action).__name__}")
    if len(action) > max_length:
        raise GymActionError(f"{env_id}: action text of {len(action)} characters is outside "
                             f"Text({max_length}) (at most {max_length} characters)")
    for i, c in enumerate(action):
        if c not in _CHARSET_SET:
            raise GymActionError(f"{env_id}: action text holds U+{ord(c):04X} at character {i}, outside the "
                                 "Text space's charset (printable characters below U+3000, newline and tab)")
    return action


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def encode_text(text: str, max_length: int = MAX_TEXT) -> tuple[str, int]:
    """``(text in CHARSET, replaced + cut characters)`` (module docstring)."""
    out = "".join(c if c in _CHARSET_SET else "?" for c in str(text))
    bad = sum(1 for c in str(text) if c not in _CHARSET_SET)
    if len(out) > max_length:
        bad += len(out) - max_length
        out = out[:max_length]
    return out, bad


def fit_image(img: np.ndarray | None, size: tuple[int, int]) -> np.ndarray:
    """``img`` (RGB uint8 ``(h, w, 3)``, or ``None``) as ``(H, W, 3)`` uint8 for ``size = (W, H)``."""
    w, h = int(size[0]), int(size[1])
    if img is None:
        return np.zeros((h, w, 3), np.uint8)
    a = np.asarray(img)
    if a.ndim == 2:
        a = np.repeat(a[:, :, None], 3, axis=2)
    a = a[:, :, :3]
    if a.shape[0] == h and a.shape[1] == w:
        return np.ascontiguousarray(a, dtype=np.uint8)
    import cv2

    return cv2.resize(np.ascontiguousarray(a, dtype=np.uint8), (w, h), interpolation=cv2.INTER_AREA)


def check_choice(name: str, value: str, allowed: Sequence[str]) -> str:
    """``value`` when it is one of ``allowed``, else :class:`GymConfigError`."""
    if value not in allowed:
        raise GymConfigError(f"{name}={value!r}: one of {', '.join(map(repr, allowed))}")
    return value


def split_city_name(city: str, split: str | None) -> str:
    """The city a split means: on ``helsinki`` the split's area (module docstring), else ``city``."""
    if city == "helsinki" and split in ("train", "val", "test"):
        return f"helsinki-{split}"
    return city


def load_split_city(city: str | City, split: str | None) -> City:
    """The city of ``split`` (built from the pinned Helsinki extract on first use for the built-in names).

    Raises:
        SplitError: the city is another split's area, or has no split plan while a split is asked.
        UnknownCityError / DefaultCityUnavailableError: the city cannot be found or built.
    """
    from urbanarena.tasks.generators.splits import check_split, helsinki_cities
    from urbanarena.errors import UnknownCityError
    from urbanarena.world.resolve import resolve_city, save_named

    if isinstance(city, City):
        c = city
    else:
        name = split_city_name(city, split)
        try:
            c = resolve_city(name)
        except UnknownCityError:
            builtin = helsinki_cities()
            if name not in builtin:
                raise
            from urbanarena.world.default_city import build_helsinki

            c = build_helsinki(bbox=builtin[name], name=name)
            save_named(c, name)
            c = resolve_city(name)
    check_split(c, split)
    return c


@dataclass
class TaskSource:
    """The tasks an env draws from (module docstring).

    Attributes:
        city: the split's city.
        tasks: the tasks (non-empty).
        base_dir: folder of the task file (reference images resolve against it), or ``None``.
        origin: where the tasks came from (a path, a frozen suite name or ``"generated:<file>"``).
    """

    city: City
    tasks: list[Task]
    base_dir: Path | None
    origin: str

    def draw(self, rng: np.random.Generator) -> Task:
        """A task drawn uniformly with ``rng``."""
        return self.tasks[int(rng.integers(len(self.tasks)))]

    def by_id(self, task_id: str) -> Task:
        for t in self.tasks:
            if t.task_id == task_id:
                return t
        raise GymConfigError(f"task {task_id!r} is not among the env's {len(self.tasks)} tasks ({self.origin})")

    def pick(self, rng: np.random.Generator, options: dict[str, Any] | None) -> Task:
        """``options["task"]`` (a :class:`Task`), ``options["task_id"]``, or a draw with ``rng``."""
        o = options or {}
        if isinstance(o.get("task"), Task):
            return o["task"]
        if o.get("task_id") is not None:
            return self.by_id(str(o["task_id"]))
        return self.draw(rng)


def generated_dir(city: City, mode: str, family: str, n: int, seed: int) -> Path:
    """Cache folder of generated tasks: ``$URBANARENA_HOME/gym/<city>-<hash12>/<mode>-<family>-n<n>-s<seed>``."""
    from urbanarena import paths

    return paths.home() / "gym" / f"{city.name}-{city.content_hash[:12]}" / f"{mode}-{family}-n{n}-s{seed}"


def load_tasks(city: City, split: str | None, tasks: str | Sequence[Task] | None, generate, *, mode: str,
               family: str, n_tasks: int, task_seed: int) -> TaskSource:
    """Resolve the env's ``tasks`` argument (module docstring).

    Args:
        tasks: ``None`` (generate), a task list, or a TASKS spec (file path; frozen names test-split only).
        generate: ``(city, out_path) -> None`` writing a task file there (called when not cached).
    Raises:
        GymConfigError: a frozen suite asked for a split other than test; no task of the family.
    """
    from urbanarena.tasks.resolve import FROZEN_SPECS, resolve_task_set

    if tasks is not None and not isinstance(tasks, (str, Path)):
        ts = list(tasks)
        if not ts:
            raise GymConfigError("tasks: an empty list")
        return TaskSource(city, ts, None, "list")
    if tasks is not None:
        spec = str(tasks)
        if (spec in FROZEN_SPECS or spec == "default") and split not in (None, "test"):
            raise GymConfigError(f"tasks={spec!r}: frozen suites are test-split only (split={split!r})")
        ts = resolve_task_set(spec, city)
        base = ts.source_files[0].parent if ts.source_files else None
        return TaskSource(city, list(ts.tasks), base, spec)
    d = generated_dir(city, mode, family, n_tasks, task_seed)
    out = d / "tasks.json"
    if not out.is_file():
        d.mkdir(parents=True, exist_ok=True)
        generate(city, out)
    ts = resolve_task_set(str(out), city)
    if not ts.tasks:
        raise GymConfigError(f"no {family} task could be generated on {city.name}")
    return TaskSource(city, list(ts.tasks), out.parent, f"generated:{out}")


def init_task_source(env, city: str | City, split: str | None, tasks, keep, *, mode: str, family: str,
                     n_tasks: int, task_seed: int, task_dir: str | Path | None = None) -> None:
    """What every registered env does first: ``env.city`` (:func:`load_split_city`), the generation settings
    its ``_generate(city, out)`` reads (``_n_gen``, ``_seed_gen``, ``_split``), and ``env.source``
    (:func:`load_tasks`) kept to the tasks where ``keep(task)`` holds, reference images resolved against
    ``task_dir`` when given. Then :func:`clear_episode`.

    Raises: GymConfigError (no task of ``family`` left, or :func:`load_tasks`'s), SplitError.
    """
    env.city = load_split_city(city, split)
    env._n_gen, env._seed_gen, env._split = int(n_tasks), int(task_seed), split
    env.source = load_tasks(env.city, split, tasks, env._generate, mode=mode, family=family, n_tasks=int(n_tasks),
                            task_seed=int(task_seed))
    if task_dir is not None:
        env.source.base_dir = Path(task_dir)
    env.source.tasks = [t for t in env.source.tasks if keep(t)]
    if not env.source.tasks:
        raise GymConfigError(f"no {family} task among the tasks ({env.source.origin})")
    clear_episode(env)


def clear_episode(env) -> None:
    """No episode running: ``task``, ``raw_obs`` and ``score`` ``None``, ``step`` refused until ``reset``."""
    env.task = None
    env.raw_obs = None
    env.score = None
    env._done = True


#: ``info`` keys whose value is a dict whenever it is present (kept as dicts by :func:`vector_info`)
DICT_INFO_KEYS = frozenset({"pose", "counters", "score", "goal_distance_m", "dynamics"})


def vector_info(info: dict[str, Any]) -> dict[str, Any]:
    """The ``info`` a registered env returns: the inner env's, without ``None`` values and without dict values
    outside :data:`DICT_INFO_KEYS`, and those dicts without ``None``, dict or list entries (such types change
    between steps, which Gymnasium's vector envs cannot merge); the inner env's full ``info`` stays in the
    env's ``last_info`` and the full final score in its ``score``."""
    out = {}
    for k, v in info.items():
        if v is None or (isinstance(v, dict) and k not in DICT_INFO_KEYS):
            continue
        out[k] = {a: b for a, b in v.items() if b is not None and not isinstance(b, (dict, list))} \
            if isinstance(v, dict) else v
    return out


class ImageTaskEnv:
    """What ``Arena-v1`` and ``Continuous-v1`` share: ``render`` (the raw view, else the raw map), the
    observation encoding (the subclass's ``encode(raw, observation, image_size, map_size, max_steps)``) and
    the stable-typed ``info`` (:func:`vector_info`, plus ``task_id``)."""

    raw_obs: dict[str, Any] | None = None

    def render(self):
        if self.raw_obs is None:
            return None
        for k in ("view", "map"):
            if self.raw_obs.get(k) is not None:
                return np.asarray(self.raw_obs[k])
        return None

    def _obs(self, raw: dict[str, Any]) -> dict[str, Any]:
        self.raw_obs = raw
        return type(self).encode(raw, self.observation_kind, self.image_size, self.map_size, self.max_steps)

    def _info(self, info: dict[str, Any]) -> dict[str, Any]:
        self.last_info = info
        out = vector_info(info)
        out["task_id"] = self.task.task_id if self.task is not None else ""
        return out


def progress_reward(before_m: float | None, after_m: float | None, scale_m: float) -> float:
    """Shaped progress term: metres of goal distance gained divided by ``scale_m`` (0 when either is missing
    or infinite)."""
    if before_m is None or after_m is None or not (math.isfinite(before_m) and math.isfinite(after_m)):
        return 0.0
    return (float(before_m) - float(after_m)) / float(scale_m)


__all__ = ["CHARSET", "GymConfigError", "ImageTaskEnv", "MAX_TEXT", "OBSERVATIONS", "REWARDS", "TaskSource", "check_choice",
           "clear_episode", "encode_text", "fit_image", "generated_dir", "init_task_source", "load_split_city", "load_tasks", "progress_reward",
           "split_city_name", "vector_info"]
