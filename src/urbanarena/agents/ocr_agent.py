"""``ocr``: an offline perception baseline for the arena that reads storefront signs with rapidocr.

What it may use. Only what any arena agent is given: the camera view
(``observation["view"]``, RGB), the branch arrows (``observation["arrows"]``:
absolute bearings, turns relative to the walking direction, keys), the outcome
of its own executed actions (``observation["recent_actions"]``: metres moved,
blocked) and the task text. It never reads the task's goals, annotations, node
positions or the ``info`` dict (which holds the goal distance); ``context.city``
is not touched. ``uses_images = True``: the runner gives it the camera view.

Landmark search by language (``extra.task_kind == "landmark_language"``; the
name is parsed from the instruction ``"Go to NAME. When you are standing in
front of it ..."``):

1. **Look.** The view of every step is read. Optionally (``max_scans``
   look-arounds per episode, the first at the start, later ones at
   intersections at least ``scan_spacing_m`` from every earlier one) the
   camera turns right by 90 degrees three times (``D LARGE``), so four views
   cover the full circle. Off by default: measured below, the four steps cost
   more than they find.
2. **Read and match.** rapidocr reads each view (text lines with their
   boxes); the goal name matches a line, an ordered pair of lines or a run of
   consecutive lines when its case-, diacritics- and punctuation-folded
   Levenshtein distance to a substring, divided by the name's length, is at
   most 0.2 (:mod:`urbanarena.world.text_match`, the definition of "a name is
   read" used everywhere in issue 4). Only the rows down to 20 px below the
   horizon row are read (signs hang above the eye, so in the agent's pitch-0
   views they lie above the horizon row; the same names are read about 1.5x
   faster). Reading is memoised by the pixels read (a deterministic function
   of the image, so revisited views are not read twice).
3. **Bearing and proximity.** The matched boxes' centre ``(u, v)`` gives the
   bearing ``yaw + theta`` with ``theta = atan((u - W/2) / f)`` and the pinhole
   focal length ``f = (W/2) / tan(hfov/2)`` (pitch-0 views, so the horizontal
   angle is exact), and the distance from the sign's elevation: a point
   ``dh = sign_height_m - eye_height_m`` above the eye at horizontal distance
   ``d`` has depth ``z = d cos(theta)`` and image row ``v = H/2 - f dh / z``, so
   ``d = f dh / ((H/2 - v) cos(theta))``. Priors (documented parameters, not
   per-task truth): storefront signs hang with their centre
   :data:`DEFAULT_SIGN_HEIGHT_M` (3.44 m) above the street (the renderer's
   placement: 95 % of the 325 signs of the default city at 3.38-3.44 m) and
   the camera is :data:`DEFAULT_EYE_HEIGHT_M` (1.7 m, the panoramas' eye
   height) above it. When the box centre is less than 4 px above the horizon
   row (beyond about 140 m) the box height ``h`` is used instead: ``z = f *
   text_box_height_m / h`` (a vertical segment of height ``H`` at depth ``z``
   spans ``f H / z`` pixels) with ``text_box_height_m`` = 0.9 m, the median box
   height rapidocr draws around the renderer's 0.35 m letters (151 sightings of
   30 Helsinki signs, interquartile range 0.83-0.98 m; it overestimates the
   height of signs seen obliquely, whose boxes are slanted). On those
   sightings ranging by elevation errs by 2.9 % (median absolute), by box height
   by 9.0 % (``benchmarks/bench_ocr_vs_random.py --calibrate``). Each sighting
   gives an estimate of the sign's position in the agent's own dead-reckoned
   frame; the estimate is the mean of the sightings weighted by ``1 / max(d,
   3 m)^2`` (near sightings are more precise).
4. **Steer.** Where arrows are shown the agent takes the branch whose bearing
   is closest to the bearing of the sign (turning the camera round first when
   the sign is behind); elsewhere it walks forward (``W`` with the magnitude
   whose metres best match the remaining distance along the street) or turns
   round (two ``D LARGE``) when the sign is behind. Before walking it turns
   the camera towards the sign (at most 60 degrees off the walking direction,
   so ``W`` still walks forward) when the sign would leave the view, so it is
   read again on the way.
5. **Stop.** ``ANSWER`` when the sign is estimated within ``stop_along_m``
   along the street (abreast of it) and at most ``max_front_m`` away: the
   goal is the point on the street in front of the storefront, success radius
   10 m.
6. **Explore** while the sign has not been seen, camera facing the walking
   direction (both sides of the street ahead are read): walk on along the
   street; at an intersection take the branch with the highest novelty (how
   far the point 20 m along it lies from every position walked through, at
   most 20 m), less 50 when that point lies outside the search disc of
   ``explore_radius_m`` (80 m) around the start ("it is not far from where
   you start"), ties to a branch never taken, then the straightest; more than
   30 m outside the disc, the branch towards the start; turn round at dead
   ends and where the street leaves the disc.

Choices measured on development suites (``tasks generate --families
landmark_language --per-family 25`` with seeds 1, 2 and 3, never the seed-0
suite of the acceptance; 75 tasks, all else as the defaults): signs are read up
to about 20 m (about half of the views 12-18 m from a sign, a fifth at 18-24
m, almost none beyond) while the sign is 30-75 m from the start even on easy
tasks, so success is decided by exploration. Search disc 80 m: 15/75 solved
without look-arounds, 13/75 with one at the start, 12/75 with up to two
(seeds 1-3); on seeds 1-2 (50 tasks) a 60 m disc solved 7, 70 m 9, 95 m 7 and
no disc (straight on, novel branches) 7; a camera turned 60 degrees to one
side, a camera alternating +-30 degrees, a preference for streets showing more
shop text, and sweeping the start street both ways solved 4-8 of 50.

Dead reckoning. The agent tracks its camera yaw and travel direction from its
own actions (A/D turn the yaw, S resets it, a branch turns both, W makes the
walking direction the travel direction) and its position from the metres each
``W`` moved. Its frame starts at its own start position with the start travel
direction as 0 degrees; at the first arrows it learns the true compass
direction (``arrow bearing - arrow turn``) and rotates its frame (and the
sightings) onto the compass; at later arrows it corrects its heading (bends
followed silently by ``W`` are the only source of heading drift).

Landmark search by image (``landmark_image``): at the first step the agent reads the task's reference
photo (``observation["reference_images"][0]``, the whole picture) and takes as the goal name the text
line nearest the picture's centre column (:func:`reference_name`: lines of at least three letters or
digits, the attribution stamp left out; ties to the tallest box), then searches for that name as
above. When nothing is read there (the name too small, oblique or dark: docs/task-generation.md
measures how often) it behaves as below, ``stats["mode"] == "fallback-random"``, and
``stats["reference_name"]`` records what was read (``None``).

Other task kinds (and a landmark task whose instruction names no landmark):
the ``arena-random`` behaviour (:class:`~urbanarena.agents.arena_random.ArenaRandomAgent`,
seeded from the same episode stream), recorded in ``stats["mode"] ==
"fallback-random"``; this agent reads no signs there.

rapidocr (Apache-2.0, its ONNX weights ship in its wheel) and onnxruntime are
the optional ``ocr`` extra (``pip install 'urbanarena[ocr]'``); they are
imported on the first read. Without them building the agent raises
:class:`OcrUnavailableError`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from urbanarena.agents.arena_random import ArenaRandomAgent
from urbanarena.agents.base import Agent, AgentContext
from urbanarena.env.arena_env import ActionKind, ArenaAction, Magnitude
from urbanarena.errors import UrbanArenaError
from urbanarena.tasks.schema import Task
from urbanarena.world.geo import angle_diff_deg, signed_turn_deg, wrap_deg
from urbanarena.world.text_match import NAME_MATCH_THRESHOLD, fold_text, substring_edit_distance

#: the landmark_language instruction (tasks/generators/landmark.py); the name is everything up to ". When"
LANDMARK_INSTRUCTION = re.compile(r"^\s*Go to (?P<name>.+)\. When you are standing in front of it", re.DOTALL)
#: W magnitudes and their metres under both arena protocols (env/motion/trajectory.py MotionConfig)
WALK_M = ((Magnitude.LARGE, 7.0), (Magnitude.MEDIUM, 4.0), (Magnitude.SMALL, 1.5))
TURN_DEG = {Magnitude.SMALL: 30.0, Magnitude.MEDIUM: 60.0, Magnitude.LARGE: 90.0}
#: calibrated height (metres) of a rapidocr text box around the renderer's sign lettering (module docstring)
DEFAULT_TEXT_BOX_HEIGHT_M = 0.9
#: prior height of a storefront sign's centre above the street, metres (module docstring)
DEFAULT_SIGN_HEIGHT_M = 3.44
#: camera height above the street, metres (the rendered panoramas' eye height)
DEFAULT_EYE_HEIGHT_M = 1.7
#: below this many pixels above the horizon row the elevation is too small to range by
MIN_ELEVATION_PX = 4.0
#: rows read below the horizon row of a view (the rest of the view holds no sign; see OcrAgent._read)
READ_BELOW_HORIZON_PX = 20
#: score subtracted from a branch whose look-ahead point lies outside the search disc
OUTSIDE_PENALTY = 50.0
#: how far ahead a branch's novelty is judged, metres (exploration)
NOVELTY_AHEAD_M = 20.0


class OcrUnavailableError(UrbanArenaError, ImportError):
    """rapidocr or onnxruntime is not installed (the ``ocr`` extra)."""


def ocr_missing() -> list[str]:
    """Names of the ``ocr`` extra's packages that cannot be found (without importing them)."""
    return [m for m in ("rapidocr", "onnxruntime") if importlib.util.find_spec(m) is None]


@dataclass(frozen=True)
class TextLine:
    """One line of text read in an image.

    Attributes:
        text: the text as read.
        score: recogniser confidence in [0, 1].
        box: ``(4, 2)`` float array, the quadrilateral's corners in pixels ``(x, y)``
            (rapidocr order: top-left, top-right, bottom-right, bottom-left).
    """

    text: str
    score: float
    box: np.ndarray

    @property
    def centre_x(self) -> float:
        return float(self.box[:, 0].mean())

    @property
    def centre_y(self) -> float:
        return float(self.box[:, 1].mean())

    @property
    def height_px(self) -> float:
        """Mean of the left and right edge lengths, pixels."""
        b = self.box
        return float((np.hypot(*(b[3] - b[0])) + np.hypot(*(b[2] - b[1]))) / 2.0)


class SignReader:
    """rapidocr behind a small memo keyed by the image's pixels (thread-safe).

    Args:
        det_limit_side_len: the detector resizes the image so that its *longer* side is at
            most this many pixels (rapidocr ``Det.limit_type = "max"``); 640 leaves a 640 x 360
            view as it is (rapidocr's default, the shorter side scaled *up* to 736, was slower and
            read fewer goal names on rendered views).
        cache_size: views remembered.
    Raises:
        OcrUnavailableError: rapidocr or onnxruntime missing (on construction).
    """

    def __init__(self, det_limit_side_len: int = 640, cache_size: int = 4096):
        missing = ocr_missing()
        if missing:
            raise OcrUnavailableError(
                f"the ocr agent needs {' and '.join(missing)} (the 'ocr' extra): pip install 'urbanarena[ocr]'")
        self.det_limit_side_len = int(det_limit_side_len)
        self.cache_size = int(cache_size)
        self._engine = None
        self._memo: OrderedDict[str, list[TextLine]] = OrderedDict()
        self._lock = threading.Lock()
        self.calls = 0
        self.seconds = 0.0

    def _ocr(self):
        if self._engine is None:
            try:
                from rapidocr import RapidOCR
            except ImportError as e:  # pragma: no cover - checked in __init__
                raise OcrUnavailableError(f"cannot import rapidocr: {e}") from e
            self._engine = RapidOCR(params={"Det.limit_type": "max", "Det.limit_side_len": self.det_limit_side_len,
                                            "Global.use_cls": False,
                                            "Global.log_level": "error"})
        return self._engine

    def read(self, image: np.ndarray) -> list[TextLine]:
        """Text lines in ``image`` (RGB uint8 ``(H, W, 3)``), in rapidocr's reading order."""
        img = np.ascontiguousarray(image)
        h = hashlib.sha1(f"{img.shape}".encode())
        h.update(img.tobytes())
        key = h.hexdigest()
        with self._lock:
            hit = self._memo.get(key)
            if hit is not None:
                self._memo.move_to_end(key)
                return hit
            t0 = time.perf_counter()
            res = self._ocr()(img[..., ::-1])  # rapidocr takes OpenCV's BGR order
            self.seconds += time.perf_counter() - t0
            self.calls += 1
            boxes = getattr(res, "boxes", None)
            txts = getattr(res, "txts", None) or ()
            scores = getattr(res, "scores", None) or ()
            lines = []
            if boxes is not None:
                for b, t, s in zip(boxes, txts, scores):
                    lines.append(TextLine(str(t), float(s), np.asarray(b, dtype=float).reshape(4, 2)))
            self._memo[key] = lines
            while len(self._memo) > self.cache_size:
                self._memo.popitem(last=False)
            return lines


_READERS: dict[int, SignReader] = {}
_READERS_LOCK = threading.Lock()


def shared_reader(det_limit_side_len: int = 640) -> SignReader:
    """One :class:`SignReader` per detector size per process (the ONNX sessions load once)."""
    with _READERS_LOCK:
        r = _READERS.get(det_limit_side_len)
        if r is None:
            r = _READERS[det_limit_side_len] = SignReader(det_limit_side_len)
        return r


@dataclass(frozen=True)
class NameSighting:
    """Where a name was read in one image.

    Attributes:
        distance: normalised match distance in [0, ``threshold``].
        lines: indices of the matched text lines.
        centre_x: mean centre column of the matched boxes, pixels.
        centre_y: mean centre row of the matched boxes, pixels.
        height_px: largest box height among them, pixels.
    """

    distance: float
    lines: tuple[int, ...]
    centre_x: float
    centre_y: float
    height_px: float


def locate_name(name: str, lines: Sequence[TextLine], threshold: float = NAME_MATCH_THRESHOLD) -> NameSighting | None:
    """The best place ``name`` is read among ``lines``, or ``None``.

    Candidates (as :func:`urbanarena.world.text_match.name_candidates`, keeping track of the lines):
    each line, each ordered pair of lines ``i < j`` and each run of three or more consecutive
    lines; distance = Sellers' substring edit distance of the folded name in the folded
    candidate / folded name length. Among candidates at most ``threshold`` the smallest distance
    wins, then the fewest lines, then the tallest box (the nearest sign).
    """
    n = fold_text(name)
    if not n:
        return None
    folded = [fold_text(line.text) for line in lines]
    idx = [i for i, f in enumerate(folded) if f]
    cands: list[tuple[int, ...]] = [(i,) for i in idx]
    cands += [(i, j) for a, i in enumerate(idx) for j in idx[a + 1:]]
    cands += [tuple(idx[a:b]) for a in range(len(idx)) for b in range(a + 3, len(idx) + 1)]
    best: tuple[float, int, float, tuple[int, ...]] | None = None
    for c in cands:
        text = "".join(folded[i] for i in c)
        if len(c) > 1 and len(text) > 3 * len(n):
            continue  # a long run cannot be a tighter match than its parts
        d = substring_edit_distance(n, text) / len(n)
        if d > threshold:
            continue
        h = max(lines[i].height_px for i in c)
        key = (d, len(c), -h, c)
        if best is None or key < best:
            best = key
    if best is None:
        return None
    d, _, neg_h, c = best
    return NameSighting(float(d), c, float(np.mean([lines[i].centre_x for i in c])),
                        float(np.mean([lines[i].centre_y for i in c])), float(-neg_h))


def sighting_geometry(s: NameSighting, width_px: int, height_px: int, hfov_deg: float, *,
                      sign_height_m: float = DEFAULT_SIGN_HEIGHT_M, eye_height_m: float = DEFAULT_EYE_HEIGHT_M,
                      text_box_height_m: float = DEFAULT_TEXT_BOX_HEIGHT_M) -> tuple[float, float, str]:
    """``(angle_deg, distance_m, method)`` of a sighting in a pitch-0 perspective view (module docstring,
    step 3): the horizontal angle from the view centre (positive = right), ``atan((u - W/2) / f)`` with
    ``f = (W/2) / tan(hfov/2)``; the horizontal distance from the elevation,
    ``f (sign_height_m - eye_height_m) / ((H/2 - v) cos(angle))`` (``method = "elevation"``), or, when the
    box centre is less than :data:`MIN_ELEVATION_PX` above the horizon row, from the box height,
    ``(f text_box_height_m / h) / cos(angle)`` (``"box-height"``)."""
    f = (width_px / 2.0) / math.tan(math.radians(hfov_deg) / 2.0)
    theta = math.atan((s.centre_x - width_px / 2.0) / f)
    above = height_px / 2.0 - s.centre_y
    dh = sign_height_m - eye_height_m
    if dh > 0 and above >= MIN_ELEVATION_PX:
        return math.degrees(theta), f * dh / (above * math.cos(theta)), "elevation"
    depth = f * text_box_height_m / max(s.height_px, 1.0)
    return math.degrees(theta), depth / math.cos(theta), "box-height"


#: folded text of the attribution stamp in the corner of reference photos (never a goal name)
_ATTRIBUTION = "openstreetmap"


def reference_name(lines: Sequence[TextLine], width_px: int) -> str | None:
    """The goal name the ocr agent takes from a reference photo ``width_px`` wide (module docstring): the
    text of the line nearest the centre column among lines whose folded text has at least 3 characters
    and is not the attribution stamp (ties: the tallest box), or ``None``."""
    best: tuple[float, float, str] | None = None
    for line in lines:
        f = fold_text(line.text)
        if len(f) < 3 or _ATTRIBUTION in f or "contributors" in f:
            continue
        key = (abs(line.centre_x - width_px / 2.0), -line.height_px, line.text.strip())
        if best is None or key < best:
            best = key
    return best[2] if best is not None else None


class OcrAgent(Agent):
    """Reads signs with rapidocr and walks to the named landmark (module docstring).

    Args:
        hfov_deg: horizontal field of view of the camera views, degrees (the runner's 90).
        sign_height_m, eye_height_m: priors of the sign-centre and camera heights above the street
            (module docstring, step 3).
        text_box_height_m: metres a detected text box's height stands for (module docstring, step 3).
        stop_along_m: answer when the sign is estimated within this many metres along the street ...
        max_front_m: ... and at most this far away (metres).
        max_scans: look-arounds per episode (the first at the start; default 0: none, see the module
            docstring for the measurement).
        scan_spacing_m: a further look-around only at an intersection at least this far (metres) from
            every earlier one.
        explore_radius_m: radius of the search disc around the start (metres; step 6).
        det_limit_side_len: rapidocr detector size (:class:`SignReader`).
        answer_prob, max_count, walk_prob: parameters of the random fallback
            (:class:`~urbanarena.agents.arena_random.ArenaRandomAgent`).
    Raises:
        OcrUnavailableError: rapidocr or onnxruntime missing.
        ValueError: parameters out of range.
    """

    name = "ocr"
    action_style = "arena"
    uses_images = True

    def __init__(self, hfov_deg: float = 90.0, sign_height_m: float = DEFAULT_SIGN_HEIGHT_M,
                 eye_height_m: float = DEFAULT_EYE_HEIGHT_M, text_box_height_m: float = DEFAULT_TEXT_BOX_HEIGHT_M,
                 stop_along_m: float = 4.0, max_front_m: float = 25.0, max_scans: int = 0,
                 scan_spacing_m: float = 30.0, explore_radius_m: float = 80.0, det_limit_side_len: int = 640,
                 answer_prob: float = 1 / 30, max_count: int = 15, walk_prob: float = 0.9):
        if not 0.0 < float(hfov_deg) < 180.0:
            raise ValueError(f"hfov_deg must be in (0, 180), got {hfov_deg}")
        if min(text_box_height_m, stop_along_m, max_front_m, explore_radius_m) <= 0:
            raise ValueError("text_box_height_m, stop_along_m, max_front_m and explore_radius_m must be > 0")
        if scan_spacing_m < 0 or max_scans < 0:
            raise ValueError("scan_spacing_m and max_scans must be >= 0")
        if not float(sign_height_m) > float(eye_height_m) > 0:
            raise ValueError("sign_height_m must exceed eye_height_m, and both be > 0")
        super().__init__(hfov_deg=float(hfov_deg), sign_height_m=float(sign_height_m),
                         eye_height_m=float(eye_height_m), text_box_height_m=float(text_box_height_m),
                         stop_along_m=float(stop_along_m), max_front_m=float(max_front_m), max_scans=int(max_scans),
                         scan_spacing_m=float(scan_spacing_m), explore_radius_m=float(explore_radius_m),
                         det_limit_side_len=int(det_limit_side_len))
        self.hfov_deg = float(hfov_deg)
        self.sign_height_m = float(sign_height_m)
        self.eye_height_m = float(eye_height_m)
        self.text_box_height_m = float(text_box_height_m)
        self.stop_along_m = float(stop_along_m)
        self.max_front_m = float(max_front_m)
        self.max_scans = int(max_scans)
        self.scan_spacing_m = float(scan_spacing_m)
        self.explore_radius_m = float(explore_radius_m)
        missing = ocr_missing()
        if missing:
            raise OcrUnavailableError(
                f"the ocr agent needs {' and '.join(missing)} (the 'ocr' extra): pip install 'urbanarena[ocr]'")
        self.reader = shared_reader(int(det_limit_side_len))
        self.fallback = ArenaRandomAgent(answer_prob=answer_prob, max_count=max_count, walk_prob=walk_prob)
        self.params["fallback"] = self.fallback.config()

    # ------------------------------------------------------------ episode
    def reset(self, task: Task, context: AgentContext) -> None:
        kind = (task.extra or {}).get("task_kind")
        m = LANDMARK_INSTRUCTION.match(task.instruction or "") if kind == "landmark_language" else None
        self.goal_name = m.group("name").strip() if m else None
        self.mode = "read-signs" if self.goal_name and fold_text(self.goal_name) else "fallback-random"
        if kind == "landmark_image":
            self.mode = "read-reference"  # the name comes from the reference photo at the first step
            self._episode = (task, context)
        if self.mode == "fallback-random":
            self.fallback.reset(task, context)
        # dead reckoning: own frame (start at the origin, start travel direction 0) until the first arrows,
        # then the compass
        self.travel = 0.0
        self.yaw = 0.0
        self.pos = np.zeros(2)
        self.calibrated = False
        self.last: ArenaAction | None = None
        self.last_branch: dict[str, Any] | None = None
        self.last_blocked = False
        self.plan: list[ArenaAction] = []
        self.sightings: list[tuple[float, float, float]] = []  # (x, y, weight)
        self.taken: set[str] = set()  # branch targets chosen
        self.visited: list[np.ndarray] = [np.zeros(2)]  # positions walked through
        self.scanned_at: list[np.ndarray] = []
        self.scans = 0
        self._step = 0
        self.ocr_calls_before = self.reader.calls
        self.ocr_s_before = self.reader.seconds
        self.stats = {"mode": self.mode, "goal_name": self.goal_name, "views_read": 0, "sightings": 0,
                      "scans": 0, "answer_reason": None, "trace": []}

    # ------------------------------------------------------------ dead reckoning
    def walking_deg(self) -> float:
        """The env's walking direction: travel, or its reverse when the camera looks more than 90 degrees away."""
        return self.travel if angle_diff_deg(self.yaw, self.travel) <= 90.0 else wrap_deg(self.travel + 180.0)

    def _ambiguous(self) -> bool:
        """Whether the camera is (nearly) square to the travel direction, where the walking direction (and
        so the arrows and the effect of a branch key) flips: the agent then turns before it uses arrows."""
        return abs(angle_diff_deg(self.yaw, self.travel) - 90.0) < 5.0

    def _update_from_outcome(self, obs: dict[str, Any]) -> None:
        """Apply the last action's executed outcome (``recent_actions``) to the dead-reckoned state."""
        a = self.last
        if a is None:
            return
        recent = obs.get("recent_actions") or []
        out = recent[-1] if recent and int(recent[-1].get("step", -1)) == int(obs.get("step", -2)) else None
        if out is None or out.get("invalid"):
            return  # nothing executed
        if a.kind == ActionKind.W:
            f = self.walking_deg()
            moved = float(out.get("moved_m") or 0.0)
            self.pos = self.pos + moved * np.array([math.sin(math.radians(f)), math.cos(math.radians(f))])
            self.travel = f
            if moved > 0:
                self.visited.append(self.pos.copy())
            self.last_blocked = bool(out.get("blocked"))
        elif a.kind in (ActionKind.A, ActionKind.D):
            deg = TURN_DEG[a.magnitude] if a.magnitude is not None else 24.0
            self.yaw = wrap_deg(self.yaw + (deg if a.kind == ActionKind.D else -deg))
        elif a.kind == ActionKind.S:
            self.yaw = self.travel
        elif a.kind in (ActionKind.LEFT, ActionKind.RIGHT, ActionKind.UP) and self.last_branch is not None:
            f = self.walking_deg()
            bearing = wrap_deg(self.last_branch["bearing_deg"])
            self.yaw = wrap_deg(self.yaw + signed_turn_deg(f, bearing))  # the camera follows the body
            self.travel = bearing
            self.taken.add(str(self.last_branch["target"]))

    def _calibrate(self, arrows: list[dict[str, Any]]) -> None:
        """Align the frame with the compass from the arrows (module docstring, dead reckoning)."""
        a0 = arrows[0]
        true_f = wrap_deg(float(a0["bearing_deg"]) - float(a0["turn_deg"]))
        delta = signed_turn_deg(self.walking_deg(), true_f)
        if not self.calibrated:
            # rotate the whole frame (positions, sightings) about the start by delta
            c, s = math.cos(math.radians(delta)), math.sin(math.radians(delta))
            rot = np.array([[c, s], [-s, c]])  # bearings clockwise from north: x = sin, y = cos
            self.pos = rot @ self.pos
            self.sightings = [(*(rot @ np.array([x, y])), w) for x, y, w in self.sightings]
            self.visited = [rot @ v for v in self.visited]
            self.scanned_at = [rot @ v for v in self.scanned_at]
            self.calibrated = True
        self.travel = wrap_deg(self.travel + delta)
        self.yaw = wrap_deg(self.yaw + delta)

    # ------------------------------------------------------------ perception
    def _read(self, view: np.ndarray | None) -> None:
        if view is None or self.goal_name is None:
            return
        # signs hang above the eye, so in a pitch-0 view they lie above the horizon row: read only the rows
        # down to READ_BELOW_HORIZON_PX below it (same names read, about 1.5x faster)
        lines = self.reader.read(view[: min(view.shape[0], view.shape[0] // 2 + READ_BELOW_HORIZON_PX)])
        self.stats["views_read"] += 1
        s = locate_name(self.goal_name, lines)
        if s is None:
            return
        ang, dist, _ = sighting_geometry(s, view.shape[1], view.shape[0], self.hfov_deg,
                                         sign_height_m=self.sign_height_m, eye_height_m=self.eye_height_m,
                                         text_box_height_m=self.text_box_height_m)
        b = math.radians(self.yaw + ang)
        x, y = self.pos[0] + dist * math.sin(b), self.pos[1] + dist * math.cos(b)
        self.sightings.append((float(x), float(y), 1.0 / max(dist, 3.0) ** 2))
        self.stats["sightings"] += 1
        self.stats["trace"].append({"step": self._step, "sighting": {
            "bearing_deg": round(wrap_deg(self.yaw + ang), 1), "distance_m": round(dist, 1),
            "match": round(s.distance, 3)}})

    def _read_reference(self, obs: dict[str, Any]) -> None:
        """``landmark_image``: the goal name from the reference photo, else the random fallback."""
        refs = list(obs.get("reference_images") or [])
        name = reference_name(self.reader.read(refs[0]), refs[0].shape[1]) if refs else None
        self.stats["reference_name"] = name
        self.goal_name = name
        self.stats["goal_name"] = name
        self.mode = "read-signs" if name else "fallback-random"
        self.stats["mode"] = self.mode
        if self.mode == "fallback-random":
            self.fallback.reset(*self._episode)

    def target(self) -> np.ndarray | None:
        """Estimated sign position in the agent's frame (weighted mean of the sightings), or ``None``."""
        if not self.sightings:
            return None
        a = np.array(self.sightings)
        return (a[:, :2] * a[:, 2:3]).sum(axis=0) / a[:, 2].sum()

    # ------------------------------------------------------------ acting
    def act(self, observation: dict[str, Any]) -> ArenaAction:  # type: ignore[override]
        obs = observation
        if self.mode == "read-reference":
            self._read_reference(obs)
        if self.mode == "fallback-random":
            return self.fallback.act(obs)
        self._step = int(obs.get("step", 0)) + 1
        self._update_from_outcome(obs)
        arrows = list(obs.get("arrows") or [])
        if arrows and not self._ambiguous():
            self._calibrate(arrows)
        self._read(obs.get("view"))
        action = self._decide(arrows)
        self.last = action
        self.last_branch = None
        if action.kind in (ActionKind.LEFT, ActionKind.RIGHT, ActionKind.UP):
            self.last_branch = next(a for a in arrows if action.kind.value in a.get("keys", []))
        self.stats["scans"] = self.scans
        self.stats["ocr_calls"] = self.reader.calls - self.ocr_calls_before
        self.stats["ocr_s"] = round(self.reader.seconds - self.ocr_s_before, 3)
        return action

    def _decide(self, arrows: list[dict[str, Any]]) -> ArenaAction:
        tgt = self.target()
        if tgt is not None:
            self.plan = []  # stop looking around or exploring: steer to the sign
            return self._steer(tgt, arrows)
        if self.plan:
            return self.plan.pop(0)
        first = self.scans == 0 and len(self.visited) == 1
        far = all(float(np.hypot(*(self.pos - q))) >= self.scan_spacing_m for q in self.scanned_at)
        if self.scans < self.max_scans and (first or (arrows and far)):
            self.scans += 1
            self.scanned_at.append(self.pos.copy())
            # three right turns of 90 degrees: views at +90, +180 and +270 (= -90) degrees
            self.plan = [ArenaAction(ActionKind.D, Magnitude.LARGE), ArenaAction(ActionKind.D, Magnitude.LARGE)]
            return ArenaAction(ActionKind.D, Magnitude.LARGE)
        return self._explore(arrows)

    def _orient(self, want_deg: float, tol_deg: float) -> ArenaAction | None:
        """A camera turn (A/D) that brings the camera, relative to the walking direction, nearer to
        ``want_deg`` while keeping it within 60 degrees of the walking direction (so ``W`` surely walks
        forward), or ``None`` when it is within ``tol_deg`` of it already or no turn gets nearer."""
        cam = signed_turn_deg(self.walking_deg(), self.yaw)
        inside = abs(cam) <= 60.0 + 1e-6
        if inside and abs(cam - want_deg) < tol_deg:
            return None
        turns = [(k, m, cam + (TURN_DEG[m] if k == ActionKind.D else -TURN_DEG[m]))
                 for k in (ActionKind.A, ActionKind.D) for m in (Magnitude.LARGE, Magnitude.MEDIUM, Magnitude.SMALL)]
        ok = [t for t in turns if abs(t[2]) <= 60.0 + 1e-6]
        if not ok:
            return None
        k, m, new = min(ok, key=lambda t: abs(t[2] - want_deg))
        if inside and abs(new - want_deg) >= abs(cam - want_deg):
            return None
        return ArenaAction(k, m)

    def _branch_score(self, bearing_deg: float) -> float:
        """Exploration value of a branch (module docstring, step 6): how far (at most
        :data:`NOVELTY_AHEAD_M`) the point that far along it lies from every position walked through,
        less :data:`OUTSIDE_PENALTY` when that point lies outside the search disc."""
        b = math.radians(bearing_deg)
        q = self.pos + NOVELTY_AHEAD_M * np.array([math.sin(b), math.cos(b)])
        novelty = min(NOVELTY_AHEAD_M, min(float(np.hypot(*(q - v))) for v in self.visited))
        return novelty - (OUTSIDE_PENALTY if float(np.hypot(*q)) > self.explore_radius_m else 0.0)

    def _explore(self, arrows: list[dict[str, Any]]) -> ArenaAction:
        if arrows and self._ambiguous():
            return self._orient(0.0, 15.0) or ArenaAction(ActionKind.S)
        r = float(np.hypot(*self.pos))
        if arrows:
            usable = [a for a in arrows if a.get("keys")]
            if r > self.explore_radius_m + 30.0:  # far outside the disc: the branch towards the start
                home = wrap_deg(math.degrees(math.atan2(-self.pos[0], -self.pos[1])))
                pick = min(usable, key=lambda a: angle_diff_deg(float(a["bearing_deg"]), home))
            else:  # the most novel branch inside the disc; then one never taken; then the straightest
                pick = max(usable, key=lambda a: (round(self._branch_score(float(a["bearing_deg"])), 1),
                                                  str(a["target"]) not in self.taken, -abs(float(a["turn_deg"]))))
            return ArenaAction(ActionKind(pick["keys"][0]))
        if self.last_blocked and self.last is not None and self.last.kind == ActionKind.W:
            # blocked without arrows: a dead end (or a one-way street); turn round, the next W walks back
            self.last_blocked = False
            return self._turn_round()
        f = math.radians(self.walking_deg())
        r_ahead = float(np.hypot(*(self.pos + 7.0 * np.array([math.sin(f), math.cos(f)]))))
        if r_ahead > self.explore_radius_m >= r - 7.0 and r_ahead > r:
            # leaving the search disc along a street: turn back (the goal "is not far from where you start")
            return self._turn_round()
        turn = self._orient(0.0, 15.0)
        return turn if turn is not None else ArenaAction(ActionKind.W, Magnitude.LARGE)

    def _steer(self, tgt: np.ndarray, arrows: list[dict[str, Any]]) -> ArenaAction:
        d_vec = tgt - self.pos
        d = float(np.hypot(*d_vec))
        b = wrap_deg(math.degrees(math.atan2(d_vec[0], d_vec[1])))
        f = self.walking_deg()
        r = signed_turn_deg(f, b)
        along = d * math.cos(math.radians(r))
        if abs(along) <= self.stop_along_m and d <= self.max_front_m:
            self.stats["answer_reason"] = f"sign {d:.1f} m away, {along:+.1f} m along the street"
            return ArenaAction(ActionKind.ANSWER, answer=f"I am in front of {self.goal_name}.")
        if arrows and self._ambiguous():
            return self._orient(max(-60.0, min(60.0, r)), 15.0) or ArenaAction(ActionKind.S)
        if arrows:
            usable = [a for a in arrows if a.get("keys")]
            best = min(usable, key=lambda a: angle_diff_deg(float(a["bearing_deg"]), b))
            if angle_diff_deg(float(best["bearing_deg"]), b) <= 100.0:
                return ArenaAction(ActionKind(best["keys"][0]))
            return self._turn_round()
        if self.last_blocked and self.last is not None and self.last.kind == ActionKind.W and abs(r) <= 90.0:
            # the street ends before the sign: answer when it is near, else forget it and explore on
            self.last_blocked = False
            if d <= self.max_front_m + 5.0:
                self.stats["answer_reason"] = f"street ends; sign {d:.1f} m away, {along:+.1f} m along"
                return ArenaAction(ActionKind.ANSWER, answer=f"I am in front of {self.goal_name}.")
            self.sightings = []
            return self._turn_round()
        if abs(r) > 90.0:
            return self._turn_round()
        # keep the sign in view while walking; turn only when it would leave the view
        if abs(signed_turn_deg(self.yaw, b)) > 40.0 or abs(signed_turn_deg(f, self.yaw)) > 60.0 + 1e-6:
            turn = self._orient(max(-60.0, min(60.0, r)), 30.0)
            if turn is not None:
                return turn
        mag = min(WALK_M, key=lambda mm: abs(mm[1] - along))[0]
        return ArenaAction(ActionKind.W, mag)

    def _turn_round(self) -> ArenaAction:
        """Turn the camera 180 degrees (two right turns): the next W (or the new arrows) lead back."""
        self.plan = [ArenaAction(ActionKind.D, Magnitude.LARGE)]
        return ArenaAction(ActionKind.D, Magnitude.LARGE)


__all__ = ["DEFAULT_EYE_HEIGHT_M", "DEFAULT_SIGN_HEIGHT_M", "DEFAULT_TEXT_BOX_HEIGHT_M", "NameSighting", "OcrAgent",
           "OcrUnavailableError", "SignReader", "TextLine", "locate_name", "ocr_missing", "reference_name",
           "shared_reader", "sighting_geometry"]
