"""Behaviour cloning on UrbanGround ``l2_constrained`` (``urbanarena train bc --family l2_constrained``; docs/gym.md).

Demonstrations: every task of the train split runs through ``urbanarena/Continuous-v1`` (``action="json"``;
the raw observation carries the full 640 x 360 map). The observation loop of
:class:`~urbanarena.agents.bc.groundfeatures.GroundNavFeaturizer` opens and reads the map; at every other
step the featurizer's vector is labelled by :class:`MacroExpert`, the ``ug-oracle``'s planner
(:class:`~urbanarena.agents.urbanground_oracle.FreeSpacePlanner`: the walk network without the edges near
the restricted zone, obstacles repaired by a grid A*) with its continuous turns quantised to the discrete
macros (:data:`urbanarena.gym.continuous.MACROS`): ``terminate`` within :data:`ARRIVE_M` of the goal,
else a turn by the macro nearest the bearing error to the point :data:`LOOKAHEAD_M` ahead on the plan
when the error exceeds :data:`TURN_DEG`, else sprint 2 s (6 m) where the plan runs straight
:data:`SPRINT_AHEAD_M` ahead, the 6 m ahead are clear and the zone is more than 8 m away, else walk
2 s (1 s for the last 2 m). (The ``ug-oracle`` itself only walks; with the family's 100-step limit
and turns quantised to 15 degrees, a walking expert ran out of steps on 12 of 40 train tasks, ours.) The expert acts in the
demonstrations (only the episodes it solves are kept); in each of the ``dagger`` rounds (Ross, Gordon and
Bagnell, AISTATS 2011) the policy acts (the expert instead at a seeded ``dagger_beta`` share of the
steps, 0.5: their mixture policy) and the expert labels every state visited, replanning from
where the agent stands when it is more than 2 m off the plan or a move was blocked (privileged: the
true pose).

Training: :func:`urbanarena.agents.bc.train.fit` (the same MLP, Adam, cosine schedule), samples
weighted 1 for walk 2 s and sprint 2 s, and :data:`~urbanarena.agents.bc.train.DECISION_WEIGHT` otherwise. The
checkpoint's metadata names ``feature_set: "urbanground_map"``, which ``bc:CKPT`` dispatches on.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from urbanarena.agents.bc.groundfeatures import N_GROUND, POLICY_MACROS, GroundNavFeaturizer
from urbanarena.agents.bc.train import DECISION_WEIGHT, Dataset, TrainConfig, fit, save_checkpoint, save_dataset
from urbanarena.errors import UrbanArenaError

FEATURE_SET = "urbanground_map"
GROUND_FAMILIES = ("l2_constrained",)
ARRIVE_M = 4.0
LOOKAHEAD_M = 3.0
TURN_DEG = 12.0
OFF_PLAN_M = 2.0
#: metres the expert's plan keeps from the restricted zone (the oracle keeps 1 m; a quantised heading drifts)
ZONE_MARGIN_M = 3.0
_LOOKS = (-90.0, -45.0, -15.0, 15.0, 45.0, 90.0)
WALK1, WALK2, SPRINT, TERMINATE = 0, 1, 2, len(POLICY_MACROS) - 1
FIRST_LOOK = 3
#: sprint only with the plan straight this far ahead (metres) and the heading this close to it (degrees)
SPRINT_AHEAD_M, SPRINT_DEG = 7.0, 8.0


def _wrap180(deg: float) -> float:
    return (deg + 180.0) % 360.0 - 180.0


class MacroExpert:
    """Privileged macro labels for one ``l2_constrained`` episode (module docstring).

    Args: ``city``, ``task``. :meth:`label` ``(x_m, y_m, yaw_deg, blocked)`` -> index into
    :data:`~urbanarena.agents.bc.groundfeatures.POLICY_MACROS`."""

    def __init__(self, city, task):
        from shapely.geometry import Polygon

        from urbanarena.agents.urbanground_oracle import FreeSpacePlanner, city_geometry
        from urbanarena.tasks.families.urbanground import goal_points_xy, zones_xy

        space, net = city_geometry(city)
        self.planner = FreeSpacePlanner(space, net, [Polygon(r) for r in zones_xy(task, city)],
                                        avoid_margin_m=ZONE_MARGIN_M)
        self.goal = self.planner.free_target(goal_points_xy(task, city)[-1])
        self.zones = [Polygon(r) for r in zones_xy(task, city)]
        self.line = None
        self.replans = 0

    def _replan(self, here) -> None:
        from shapely.geometry import LineString

        pts = self.planner.plan(here, self.goal)
        self.line = LineString(pts) if len(pts) >= 2 else None
        self.replans += 1

    def label(self, x_m: float, y_m: float, yaw_deg: float, blocked: bool = False) -> int:
        from shapely.geometry import Point

        here = (float(x_m), float(y_m))
        if math.dist(here, self.goal) <= ARRIVE_M:
            return TERMINATE
        if self.line is None or blocked or self.line.distance(Point(here)) > OFF_PLAN_M:
            self._replan(here)
        if self.line is None:
            target, left = self.goal, math.dist(here, self.goal)
        else:
            s = self.line.project(Point(here))
            p = self.line.interpolate(min(s + LOOKAHEAD_M, self.line.length))
            target, left = (p.x, p.y), self.line.length - s
            if math.dist(here, target) < 0.3:
                target = self.goal
        err = self._err(here, target, yaw_deg)
        if abs(err) > TURN_DEG:
            return FIRST_LOOK + int(np.argmin([abs(err - v) for v in _LOOKS]))
        if self.line is not None and left >= SPRINT_AHEAD_M + 2.0 and abs(err) <= SPRINT_DEG:
            far = self.line.interpolate(min(s + SPRINT_AHEAD_M, self.line.length))
            a = math.radians(yaw_deg)
            end = (here[0] + 6.0 * math.sin(a), here[1] + 6.0 * math.cos(a))
            if (abs(self._err(here, (far.x, far.y), yaw_deg)) <= SPRINT_DEG and self.planner.segment_clear(here, end)
                    and all(z.distance(Point(here)) > 8.0 for z in self.zones)):
                return SPRINT
        return WALK1 if left < 2.0 else WALK2

    @staticmethod
    def _err(here, target, yaw_deg: float) -> float:
        return _wrap180(math.degrees(math.atan2(target[0] - here[0], target[1] - here[1])) - yaw_deg)


def policy_index(model, vec: np.ndarray, mask: np.ndarray) -> int:
    import torch

    with torch.no_grad():
        return int(model(torch.from_numpy(vec[None]), torch.from_numpy(mask[None].astype(np.float32))).argmax(1)[0])


def rollout(env, task, blind: bool, model=None, seed: int = 0, beta: float = 0.0) -> tuple[list, dict[str, Any]]:
    """One episode of ``task`` in a ``Continuous-v1`` env (``action="json"``): the expert acts (``model``
    ``None``) or the policy does (the expert instead with probability ``beta`` per step, a seeded draw);
    returns ``([(vector, mask, expert label)], score)``."""
    import zlib

    from urbanarena.gym.continuous import MACROS

    feat = GroundNavFeaturizer(env.max_steps, blind)
    env.reset(seed=seed, options={"task": task})
    expert = MacroExpert(env.city, task)
    samples, done = [], False
    last_xy, last_intended = None, None
    rng = np.random.default_rng([int(seed), zlib.crc32(task.task_id.encode())])
    while not done:
        raw = env.raw_obs
        act = feat.perception_action(raw)
        if act is None:
            vec, mask = feat(raw)
            p = env.env.pose()
            blocked = (last_intended is not None
                       and math.hypot(p.x_m - last_xy[0], p.y_m - last_xy[1]) < 0.4 * last_intended)
            lab = expert.label(p.x_m, p.y_m, p.yaw_deg, blocked)
            samples.append((vec, mask, lab))
            k = lab if model is None or rng.random() < beta else policy_index(model, vec, mask)
            feat.record(k, raw)
            act = MACROS[POLICY_MACROS[k]]
            last_xy = (p.x_m, p.y_m)
            last_intended = ({"move": 1.4, "sprint": 3.0}[act["action"]] * act["seconds"]
                             if act["action"] in ("move", "sprint") else None)
        _, _, term, trunc, _ = env.step(json.dumps(act))
        done = term or trunc
    return samples, dict(env.score or {}, replans=expert.replans)


def weights_of(ds: Dataset) -> np.ndarray:
    """Per-sample loss weights: 1 for walk / sprint 2 s, :data:`DECISION_WEIGHT` for the other labels."""
    return np.where((ds.actions == WALK2) | (ds.actions == SPRINT), 1.0, DECISION_WEIGHT).astype(np.float32)


def collect(env, tasks: Sequence[Any], blind: bool, model=None, seed: int = 0, beta: float = 0.0
            ) -> tuple[list, dict[str, Any]]:
    """Expert demonstrations (``model`` ``None``; unsolved episodes dropped) or one DAgger round's labels
    (``policy_success``: episodes solved with the expert acting at a ``beta`` share of the steps)."""
    samples, kept, failed, solved = [], 0, 0, 0
    for task in tasks:
        ep, score = rollout(env, task, blind, model, seed, beta)
        ok = score.get("sr") == 1.0
        solved += int(ok)
        if model is None and not ok:
            failed += 1
            continue
        kept += 1
        samples += ep
    if model is None:
        return samples, {"episodes": kept, "oracle_failures": failed, "samples": len(samples)}
    return samples, {"samples": len(samples), "policy_success": round(solved / max(1, len(tasks)), 4)}


def train_ground_bc(city, tasks: Sequence[Any], out: str | Path, cfg: TrainConfig,
                    dataset_out: str | Path | None = None) -> dict[str, Any]:
    """Demonstrations on ``tasks`` (``l2_constrained`` of the train city), ``cfg.dagger`` DAgger rounds, the
    checkpoint (and the data set as ``.npz`` when ``dataset_out``); returns the metadata.
    Raises: :class:`UrbanArenaError` (another family, no tasks, no demonstrations)."""
    from urbanarena.gym.continuous import ContinuousTaskEnv

    if cfg.family not in GROUND_FAMILIES:
        raise UrbanArenaError(f"--family {cfg.family!r}: urbanground bc is implemented for {', '.join(GROUND_FAMILIES)}")
    tasks = [t for t in tasks if t.category == cfg.family]
    if not tasks:
        raise UrbanArenaError(f"no {cfg.family} tasks to train on")
    t0 = time.perf_counter()
    env = ContinuousTaskEnv(city=city, split=None, family=cfg.family, observation="text", action="json",
                            tasks=list(tasks))
    n = len(POLICY_MACROS)
    samples, demo = collect(env, tasks, cfg.blind, None, cfg.seed)
    ds = Dataset.of(samples, N_GROUND, n)
    collect_s = time.perf_counter() - t0
    model, figs = fit(ds, cfg, n, weights=weights_of(ds))
    rounds = []
    for _ in range(max(0, int(cfg.dagger))):
        t1 = time.perf_counter()
        extra, info = collect(env, tasks, cfg.blind, model, cfg.seed, cfg.dagger_beta)
        ds = ds + Dataset.of(extra, N_GROUND, n)
        model, figs = fit(ds, cfg, n, weights=weights_of(ds))
        rounds.append(dict(info, seconds=round(time.perf_counter() - t1, 2)))
    if dataset_out is not None:
        save_dataset(ds, dataset_out)
    meta = {"config": asdict(cfg), "figures": figs, "demonstrations": demo, "dagger": rounds,
            "protocol": env.protocol_id, "step_limit": env.max_steps,
            "city": {"name": env.city.name, "content_hash": env.city.content_hash},
            "collect_seconds": round(collect_s, 2), "total_seconds": round(time.perf_counter() - t0, 2),
            "feature_set": FEATURE_SET, "policy_macros": list(POLICY_MACROS)}
    save_checkpoint(model, out, meta)
    return meta


__all__ = ["ARRIVE_M", "FEATURE_SET", "GROUND_FAMILIES", "MacroExpert", "collect", "policy_index", "rollout",
           "train_ground_bc", "weights_of"]
