"""Behaviour cloning from oracle demonstrations (``urbanarena train bc``; docs/gym.md).

Demonstrations: every task of the train split runs once through the registered env with the mode's
privileged oracle (``arena-oracle`` in ``Arena-v1`` map navigation; ``ug-oracle`` in
``Continuous-v1``); only episodes the oracle solves are kept. Each step gives ``(images, vector,
mask)`` (:func:`~urbanarena.agents.bc.features.featurize`) and the oracle's action as the label.

Training: Adam (learning rate ``lr``), mini-batches of ``batch``, ``epochs`` passes, cross-entropy
on the masked logits; ``torch.manual_seed(seed)`` and a seeded shuffle, ``threads`` intra-op
threads. The checkpoint is one safetensors file: the weights plus a ``urbanarena_bc`` metadata
entry (JSON: feature set, shapes, blind, step limit, map size, training figures).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from urbanarena.agents.base import AgentContext
from urbanarena.agents.bc.features import featurize
from urbanarena.errors import UrbanArenaError

META_KEY = "urbanarena_bc"
#: loss weight of decision samples (a branch arrow shows, or the oracle did something else than W LARGE)
DECISION_WEIGHT = 3.0
#: weight of the auxiliary position regression
AUX_WEIGHT = 10.0
MAP_PX = 64


@dataclass
class TrainConfig:
    """Settings of one training run (stored in the checkpoint)."""

    family: str = "map_navigation"
    blind: bool = False
    epochs: int = 15
    batch: int = 128
    lr: float = 3e-3
    seed: int = 0
    threads: int = 1
    map_px: int = MAP_PX


def collect_map_navigation(env, tasks: Sequence[Any], seed: int = 0) -> tuple[list, dict[str, Any]]:
    """Oracle demonstrations of map-navigation tasks in an ``Arena-v1`` env (``observation="map"``)."""
    from urbanarena.agents.arena_oracle import ArenaOracleAgent
    from urbanarena.gym.arena import action_index

    from urbanarena.render.maps import map_renderer_for

    from urbanarena.gym.arena import MAP_PX as FULL

    renderer = map_renderer_for(env.city, FULL[0], FULL[1])

    def to_unit(x: float, y: float) -> tuple[float, float]:
        u, v = renderer.world_to_px(x, y)
        return 2.0 * float(u) / FULL[0] - 1.0, 2.0 * float(v) / FULL[1] - 1.0

    samples, kept, failed = [], 0, 0
    for task in tasks:
        obs, _ = env.reset(seed=seed, options={"task": task})
        oracle = ArenaOracleAgent()
        oracle.reset(task, AgentContext(city=env.city, motion=env.arena.motion, seed=seed,
                                        protocol_id=env.protocol_id, task_id=task.task_id))
        ep, done = [], False
        while not done:
            a = action_index(oracle.act(env.raw_obs))
            pose = env.arena.pose()
            yaw = math.radians(pose.yaw_deg)
            aux = (*to_unit(pose.x_m, pose.y_m), *to_unit(*env.arena.goal_xy), math.sin(yaw), math.cos(yaw))
            ep.append((featurize("map_navigation", obs, env.max_steps, raw=env.raw_obs), a, aux))
            obs, _, term, trunc, _ = env.step(a)
            done = term or trunc
        if env.score.get("evaluation_score") == 1.0:
            samples += ep
            kept += 1
        else:
            failed += 1
    return samples, {"episodes": kept, "oracle_failures": failed, "samples": len(samples)}


def train_policy(samples: list, cfg: TrainConfig, n_actions: int):
    """Fit a :class:`~urbanarena.agents.bc.model.BCPolicy` to ``samples`` ``[((img, vec, mask), action, aux)]``
    (``aux``: the agent's and the goal's map positions in [-1, 1] and the sin, cos of the camera yaw, the
    auxiliary targets). Loss: per-sample
    weighted cross-entropy (weight :data:`DECISION_WEIGHT` where a branch arrow shows or the label is not
    ``W LARGE``, else 1) plus :data:`AUX_WEIGHT` x the mean squared error of ``aux`` (not for a blind model).

    Returns: ``(model, figures)`` with ``train_accuracy``, ``final_loss``, ``seconds``.
    """
    import torch

    from urbanarena.agents.bc.model import BCPolicy

    if not samples:
        raise UrbanArenaError("no demonstration samples to train on (did the oracle solve any task?)")
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(max(1, int(cfg.threads)))
    imgs = torch.from_numpy(np.stack([s[0][0] for s in samples]))
    vecs = torch.from_numpy(np.stack([s[0][1] for s in samples]))
    masks = torch.from_numpy(np.stack([s[0][2] for s in samples]).astype(np.float32))
    ys = torch.tensor([s[1] for s in samples], dtype=torch.long)
    auxs = torch.tensor([s[2] for s in samples], dtype=torch.float32)
    from urbanarena.gym.arena import ACTIONS, action_index

    walk = action_index("W LARGE")
    branch = masks[:, len(ACTIONS) - 4:len(ACTIONS) - 1].sum(1) > 0
    weights = torch.where(branch | (ys != walk), torch.tensor(DECISION_WEIGHT), torch.tensor(1.0))
    model = BCPolicy(imgs.shape[1], vecs.shape[1], n_actions, blind=cfg.blind)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    rng = np.random.default_rng(cfg.seed)
    t0 = time.perf_counter()
    loss_v = float("nan")
    for _ in range(cfg.epochs):
        order = torch.from_numpy(rng.permutation(len(ys)))
        for i in range(0, len(ys), cfg.batch):
            b = order[i:i + cfg.batch]
            logits, aux = model(imgs[b], vecs[b], masks[b], with_aux=True)
            ce = torch.nn.functional.cross_entropy(logits, ys[b], reduction="none")
            loss = (ce * weights[b]).sum() / weights[b].sum()
            if not cfg.blind:
                loss = loss + AUX_WEIGHT * torch.nn.functional.mse_loss(aux, auxs[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_v = float(loss.detach())
    with torch.no_grad():
        pred = torch.cat([model(imgs[i:i + 512], vecs[i:i + 512], masks[i:i + 512]).argmax(1)
                          for i in range(0, len(ys), 512)])
    acc = float((pred == ys).float().mean())
    dec = branch | (ys != walk)
    acc_dec = float((pred[dec] == ys[dec]).float().mean()) if bool(dec.any()) else float("nan")
    return model, {"train_accuracy": round(acc, 4), "train_accuracy_decisions": round(acc_dec, 4), "final_loss": round(loss_v, 4),
                   "seconds": round(time.perf_counter() - t0, 2), "image_shape": list(imgs.shape[1:]),
                   "n_vector": int(vecs.shape[1]), "n_actions": int(n_actions)}


def save_checkpoint(model, path: str | Path, meta: dict[str, Any]) -> Path:
    """Write the weights and ``meta`` (JSON under :data:`META_KEY`) as one safetensors file."""
    from safetensors.torch import save_file

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path),
              metadata={META_KEY: json.dumps(meta, sort_keys=True)})
    return path


def load_checkpoint(path: str | Path):
    """``(model in eval mode, meta)`` of a checkpoint written by :func:`save_checkpoint`.

    Raises: :class:`UrbanArenaError` naming the file when it is missing or not a BC checkpoint.
    """
    from safetensors import SafetensorError, safe_open
    from safetensors.torch import load_file

    from urbanarena.agents.bc.model import BCPolicy

    p = Path(path)
    if not p.is_file():
        raise UrbanArenaError(f"bc checkpoint {p} not found (train one with `urbanarena train bc`)")
    try:
        with safe_open(str(p), framework="pt") as f:
            meta = json.loads((f.metadata() or {})[META_KEY])
        state = load_file(str(p))
    except (KeyError, ValueError, OSError, SafetensorError) as e:
        raise UrbanArenaError(f"{p}: not a urbanarena bc checkpoint ({type(e).__name__}: {e})") from None
    shape = meta["figures"]["image_shape"]
    model = BCPolicy(int(shape[0]), int(meta["figures"]["n_vector"]), int(meta["figures"]["n_actions"]),
                     blind=bool(meta["config"]["blind"]))
    model.load_state_dict(state)
    model.eval()
    return model, meta


def train_bc(city, tasks: Sequence[Any], out: str | Path, cfg: TrainConfig, protocol: str = "cityarena-v1",
             task_dir: str | Path | None = None) -> dict[str, Any]:
    """Collect demonstrations on ``tasks`` (train split of ``city``), train, save; returns the metadata."""
    t0 = time.perf_counter()
    if cfg.family != "map_navigation":
        raise UrbanArenaError(f"--family {cfg.family!r}: bc training is implemented for map_navigation")
    from urbanarena.gym.arena import ACTIONS, ArenaTaskEnv

    env = ArenaTaskEnv(city=city, split="train", family="map_navigation", protocol=protocol, observation="map",
                       tasks=list(tasks), task_dir=task_dir, map_size=(cfg.map_px, cfg.map_px))
    samples, demo = collect_map_navigation(env, tasks, cfg.seed)
    collect_s = time.perf_counter() - t0
    model, figs = train_policy(samples, cfg, len(ACTIONS))
    meta = {"config": asdict(cfg), "figures": figs, "demonstrations": demo, "protocol": protocol,
            "step_limit": env.max_steps, "city": {"name": city.name, "content_hash": city.content_hash},
            "collect_seconds": round(collect_s, 2), "feature_set": cfg.family}
    save_checkpoint(model, out, meta)
    return meta


__all__ = ["META_KEY", "TrainConfig", "collect_map_navigation", "load_checkpoint", "save_checkpoint", "train_bc",
           "train_policy"]
