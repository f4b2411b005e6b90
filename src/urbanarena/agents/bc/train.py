"""Behaviour cloning from oracle demonstrations (``urbanarena train bc``; docs/gym.md).

Demonstrations: every task of the train split runs once through ``Arena-v1`` (``observation="map"``)
with the privileged ``arena-oracle``; only episodes the oracle solves are kept. Each step gives the
featurizer's ``(vector, mask)`` (:mod:`urbanarena.agents.bc.features`, fed what the VLM agent sees) and
the oracle's action as the label.

DAgger (Ross, Gordon and Bagnell, AISTATS 2011), ``dagger`` rounds (ours; 1 by default, docs/gym.md): the policy
trained so far runs on the train tasks; at every state it visits where the agent stands free at a
node with the camera along the travel direction (where decisions are taken) the oracle's planner (:func:`~urbanarena.agents.arena_oracle.plan_to_goal`)
labels the state with the first action of its fewest-step plan from there, and the labelled states
join the data set for the next fit. Other states keep no label (the planner starts at a node; from a
camera turned away it would first reset the view, which undoes the first half of a reversal).

Training: Adam (learning rate ``lr``), mini-batches of ``batch``, ``epochs`` passes, cross-entropy on
the masked logits, each sample weighted 1 (``DECISION_WEIGHT`` where a branch arrow shows or the label
is not ``W LARGE``); ``torch.manual_seed(seed)``, a seeded shuffle and ``threads`` intra-op threads.
The checkpoint is one safetensors file: the weights plus a ``urbanarena_bc`` metadata entry (JSON:
feature set, shapes, blind, step limit, training figures). The data set can be kept as an ``.npz``
file (``save_dataset``; arrays only, loaded without pickle).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from urbanarena.agents.base import AgentContext
from urbanarena.agents.bc.features import make_featurizer
from urbanarena.errors import UrbanArenaError

META_KEY = "urbanarena_bc"
#: loss weight of decision samples (a branch arrow shows, or the label is not W LARGE)
DECISION_WEIGHT = 3.0


@dataclass
class TrainConfig:
    """Settings of one training run (stored in the checkpoint)."""

    family: str = "map_navigation"
    blind: bool = False
    epochs: int = 30
    batch: int = 256
    lr: float = 2e-3
    seed: int = 0
    threads: int = 1
    hidden: int = 128
    dagger: int = 1
    #: UrbanGround only: probability that the expert, not the policy, acts at a step of a DAgger round
    dagger_beta: float = 0.5


@dataclass
class Dataset:
    """Labelled steps: ``vectors (N, V)`` float32, ``masks (N, A)`` int8, ``actions (N,)`` int64."""

    vectors: np.ndarray
    masks: np.ndarray
    actions: np.ndarray

    @classmethod
    def of(cls, samples: Sequence[tuple[np.ndarray, np.ndarray, int]], n_vector: int, n_actions: int) -> "Dataset":
        if not samples:
            return cls(np.zeros((0, n_vector), np.float32), np.zeros((0, n_actions), np.int8), np.zeros(0, np.int64))
        return cls(np.stack([s[0] for s in samples]).astype(np.float32), np.stack([s[1] for s in samples]).astype(np.int8),
                   np.asarray([s[2] for s in samples], np.int64))

    def __len__(self) -> int:
        return int(self.actions.shape[0])

    def __add__(self, other: "Dataset") -> "Dataset":
        return Dataset(np.concatenate([self.vectors, other.vectors]), np.concatenate([self.masks, other.masks]),
                       np.concatenate([self.actions, other.actions]))


def save_dataset(ds: Dataset, path: str | Path) -> Path:
    """Write ``ds`` as a compressed ``.npz`` (plain arrays; read back with ``np.load(allow_pickle=False)``),
    through a temporary renamed when complete (:func:`urbanarena.safe_paths.atomic_write`): a killed or
    failed write leaves no file under ``path``.

    Raises: RunIOError: the write failed (disk full), naming ``path``."""
    from urbanarena.safe_paths import atomic_write

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:  # a file object: savez would append .npz to a temporary's name
            np.savez_compressed(f, vectors=ds.vectors, masks=ds.masks, actions=ds.actions)
    atomic_write(path, write)
    return path


def load_dataset(path: str | Path) -> Dataset:
    with np.load(Path(path), allow_pickle=False) as z:
        return Dataset(z["vectors"], z["masks"], z["actions"])


def _context(env, task, seed: int) -> AgentContext:
    return AgentContext(city=env.city, motion=env.arena.motion, seed=seed, protocol_id=env.protocol_id,
                        task_id=task.task_id)


def collect_oracle(env, tasks: Sequence[Any], blind: bool, seed: int = 0) -> tuple[list, dict[str, Any]]:
    """Oracle demonstrations of map-navigation tasks in an ``Arena-v1`` env: ``([(vector, mask, action)],
    counts)``; episodes the oracle does not solve are dropped (counted)."""
    from urbanarena.agents.arena_oracle import ArenaOracleAgent
    from urbanarena.gym.arena import action_index

    feat = make_featurizer("map_navigation", env.max_steps, blind)
    samples, kept, failed = [], 0, 0
    for task in tasks:
        env.reset(seed=seed, options={"task": task})
        feat.reset()
        oracle = ArenaOracleAgent()
        oracle.reset(task, _context(env, task, seed))
        ep, done = [], False
        while not done:
            a = action_index(oracle.act(env.raw_obs))
            vec, mask = feat(env.raw_obs)
            ep.append((vec, mask, a))
            _, _, term, trunc, _ = env.step(a)
            done = term or trunc
        if env.score.get("evaluation_score") == 1.0:
            samples += ep
            kept += 1
        else:
            failed += 1
    return samples, {"episodes": kept, "oracle_failures": failed, "samples": len(samples)}


def oracle_label(env, task) -> int | None:
    """The oracle planner's first action from the env's current state, or ``None`` (between nodes, the camera
    not along the travel direction, or no plan)."""
    from urbanarena.agents.arena_oracle import plan_to_goal
    from urbanarena.gym.arena import action_index
    from urbanarena.tasks.families.cityarena import CityArenaFamily

    state = env.arena.state
    if state is None or state.v is not None or state.yaw_deg != state.travel_deg or state.pitch_deg != 0.0:
        return None  # between nodes, or mid-turn (the planner would first reset the view: S undoes a reversal)
    goal = CityArenaFamily.goal_xy_m(task, env.city)
    radius = CityArenaFamily.radius_m(task, env.protocol_id)
    try:
        plan = plan_to_goal(env.arena.motion, state, goal, radius, max_expansions=20_000)
    except (ValueError, AssertionError):
        return None
    if plan is None or not plan.actions:
        return None
    return action_index(plan.actions[0])


def collect_dagger(env, tasks: Sequence[Any], model, blind: bool, seed: int = 0) -> tuple[list, dict[str, Any]]:
    """Run ``model`` on ``tasks``; label the visited node states with :func:`oracle_label` (module docstring)."""
    import torch

    feat = make_featurizer("map_navigation", env.max_steps, blind)
    samples, solved = [], 0
    for task in tasks:
        env.reset(seed=seed, options={"task": task})
        feat.reset()
        done = False
        while not done:
            vec, mask = feat(env.raw_obs)
            label = oracle_label(env, task)
            if label is not None:
                samples.append((vec, mask, label))
            with torch.no_grad():
                a = int(model(torch.from_numpy(vec[None]), torch.from_numpy(mask[None].astype(np.float32))).argmax(1)[0])
            _, _, term, trunc, _ = env.step(a)
            done = term or trunc
        solved += int(env.score.get("evaluation_score") == 1.0)
    return samples, {"samples": len(samples), "policy_success": round(solved / max(1, len(tasks)), 4)}


def fit(ds: Dataset, cfg: TrainConfig, n_actions: int, model=None, weights: np.ndarray | None = None):
    """Fit (or keep fitting) a :class:`~urbanarena.agents.bc.model.BCPolicy` on ``ds`` (module docstring).

    ``weights``: ``(N,)`` per-sample loss weights (default the map-navigation ones: ``DECISION_WEIGHT`` for
    decision samples); "decisions" in the figures are the samples of weight above 1.

    Returns: ``(model, figures)`` with ``train_accuracy``, ``train_accuracy_decisions``, ``final_loss``,
    ``seconds``. Raises :class:`UrbanArenaError` on an empty data set.
    """
    import torch

    from urbanarena.agents.bc.model import BCPolicy
    from urbanarena.gym.arena import ACTIONS, action_index

    if len(ds) == 0:
        raise UrbanArenaError("no demonstration samples to train on (did the oracle solve any task?)")
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(max(1, int(cfg.threads)))
    vecs = torch.from_numpy(ds.vectors)
    masks = torch.from_numpy(ds.masks.astype(np.float32))
    ys = torch.from_numpy(ds.actions)
    if weights is None:
        walk = action_index("W LARGE")
        branch = masks[:, len(ACTIONS) - 4:len(ACTIONS) - 1].sum(1) > 0
        dec = branch | (ys != walk)
        weights = torch.where(dec, torch.tensor(DECISION_WEIGHT), torch.tensor(1.0))
    else:
        weights = torch.from_numpy(np.asarray(weights, np.float32))
        dec = weights > 1.0
    if model is None:
        model = BCPolicy(vecs.shape[1], n_actions, hidden=cfg.hidden)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, cfg.epochs))
    rng = np.random.default_rng(cfg.seed)
    t0 = time.perf_counter()
    loss_v = float("nan")
    for _ in range(cfg.epochs):
        order = torch.from_numpy(rng.permutation(len(ys)))
        for i in range(0, len(ys), cfg.batch):
            b = order[i:i + cfg.batch]
            ce = torch.nn.functional.cross_entropy(model(vecs[b], masks[b]), ys[b], reduction="none")
            loss = (ce * weights[b]).sum() / weights[b].sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_v = float(loss.detach())
        sched.step()
    model.eval()
    with torch.no_grad():
        pred = model(vecs, masks).argmax(1)
    acc = float((pred == ys).float().mean())
    acc_dec = float((pred[dec] == ys[dec]).float().mean()) if bool(dec.any()) else float("nan")
    return model, {"train_accuracy": round(acc, 4), "train_accuracy_decisions": round(acc_dec, 4),
                   "final_loss": round(loss_v, 4), "seconds": round(time.perf_counter() - t0, 2),
                   "n_vector": int(vecs.shape[1]), "n_actions": int(n_actions), "samples": len(ds)}


def save_checkpoint(model, path: str | Path, meta: dict[str, Any]) -> Path:
    """Write the weights and ``meta`` (JSON under :data:`META_KEY`) as one safetensors file."""
    from safetensors.torch import save_file

    from urbanarena.safe_paths import atomic_write

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    atomic_write(path, lambda tmp: save_file(state, str(tmp), metadata={META_KEY: json.dumps(meta, sort_keys=True)}))
    return path


#: the ``pip`` line that installs what bc checkpoints need (PyTorch CPU, safetensors: the ``train`` extra)
TRAIN_EXTRA_HINT = ('pip install torch --index-url https://download.pytorch.org/whl/cpu && pip install -e ".[train]" '
                    '(or pip install "urbanarena[train]")')
#: bounds of a checkpoint's network sizes (ours; the trained networks are 128 wide over a vector of a few hundred)
MAX_HIDDEN = 4096
MAX_N_VECTOR = 1 << 16
MAX_N_ACTIONS = 1024


class MissingExtraError(UrbanArenaError, ImportError):
    """A feature needs an optional extra that is not installed; the message names the extra and the pip line."""


def require_train_extra(what: str = "bc checkpoints") -> None:
    """Raise :class:`MissingExtraError` unless PyTorch and safetensors (the ``train`` extra) import."""
    try:
        import safetensors  # noqa: F401
        import torch  # noqa: F401
    except ImportError as e:
        raise MissingExtraError(f"{what} need the 'train' extra ({e.name or 'torch/safetensors'} is not installed): "
                                f"{TRAIN_EXTRA_HINT}") from None


def policy_shapes(n_vector: int, n_actions: int, hidden: int) -> dict[str, tuple[int, ...]]:
    """``{state-dict key: shape}`` of a :class:`~urbanarena.agents.bc.model.BCPolicy` of these sizes (two
    hidden layers of ``hidden`` units: ``net.0``, ``net.2`` and the output layer ``net.4``)."""
    return {"net.0.weight": (hidden, n_vector), "net.0.bias": (hidden,), "net.2.weight": (hidden, hidden),
            "net.2.bias": (hidden,), "net.4.weight": (n_actions, hidden), "net.4.bias": (n_actions,)}


def _checked_sizes(p: Path, meta: Any, stored: dict[str, tuple[int, ...]]) -> tuple[int, int, int]:
    """``(n_vector, n_actions, hidden)`` of the metadata once they are integers within bounds and every stored
    tensor has the shape they imply (checked before any network is built: the sizes come from the file)."""
    if not isinstance(meta, dict):
        raise UrbanArenaError(f"{p}: not a urbanarena bc checkpoint (metadata is not an object)")
    try:
        raw = {"n_vector": meta["figures"]["n_vector"], "n_actions": meta["figures"]["n_actions"],
               "hidden": meta["config"]["hidden"]}
    except (KeyError, TypeError) as e:
        raise UrbanArenaError(f"{p}: not a urbanarena bc checkpoint (metadata lacks {e})") from None
    bounds = {"n_vector": MAX_N_VECTOR, "n_actions": MAX_N_ACTIONS, "hidden": MAX_HIDDEN}
    for k, v in raw.items():
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= bounds[k]:
            raise UrbanArenaError(f"{p}: bc checkpoint metadata {k}={v!r} is not an integer in [1, {bounds[k]}]")
    want = policy_shapes(raw["n_vector"], raw["n_actions"], raw["hidden"])
    if set(stored) != set(want):
        raise UrbanArenaError(f"{p}: bc checkpoint tensors {sorted(stored)} are not those of the policy "
                              f"{sorted(want)}")
    for k, shape in want.items():
        if tuple(stored[k]) != shape:
            raise UrbanArenaError(f"{p}: bc checkpoint tensor {k} has shape {tuple(stored[k])}, but the metadata "
                                  f"(n_vector={raw['n_vector']}, n_actions={raw['n_actions']}, "
                                  f"hidden={raw['hidden']}) gives {shape}")
    return raw["n_vector"], raw["n_actions"], raw["hidden"]


def load_checkpoint(path: str | Path):
    """``(model in eval mode, meta)`` of a checkpoint written by :func:`save_checkpoint`.

    The metadata's sizes are checked (integers within :data:`MAX_HIDDEN`, :data:`MAX_N_VECTOR`,
    :data:`MAX_N_ACTIONS`) against the stored tensors' shapes, read from the file's header, before the
    network is built or any tensor loaded.

    Raises: :class:`UrbanArenaError` naming the file when it is missing, not a BC checkpoint, or its metadata
    disagrees with its tensors; :class:`MissingExtraError` without the ``train`` extra.
    """
    p = Path(path)
    if not p.is_file():
        raise UrbanArenaError(f"bc checkpoint {p} not found (train one with `urbanarena train bc`)")
    require_train_extra(f"bc checkpoint {p}: bc agents")
    from safetensors import SafetensorError, safe_open
    from safetensors.torch import load_file

    from urbanarena.agents.bc.model import BCPolicy

    try:
        with safe_open(str(p), framework="pt") as f:
            meta = json.loads((f.metadata() or {})[META_KEY])
            stored = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}
        n_vector, n_actions, hidden = _checked_sizes(p, meta, stored)
        state = load_file(str(p))
        model = BCPolicy(n_vector, n_actions, hidden=hidden)
        model.load_state_dict(state)
    except (KeyError, ValueError, OSError, RuntimeError, SafetensorError, RecursionError) as e:
        raise UrbanArenaError(f"{p}: not a urbanarena bc checkpoint ({type(e).__name__}: {e})") from None
    model.eval()
    return model, meta


def train_bc(city, tasks: Sequence[Any], out: str | Path, cfg: TrainConfig, protocol: str = "cityarena-v1",
             task_dir: str | Path | None = None, dataset_out: str | Path | None = None) -> dict[str, Any]:
    """Collect demonstrations on ``tasks`` (train split of ``city``), train with ``cfg.dagger`` DAgger rounds,
    save the checkpoint (and the final data set as ``.npz`` when ``dataset_out``); returns the metadata."""
    t0 = time.perf_counter()
    if cfg.family != "map_navigation":
        raise UrbanArenaError(f"--family {cfg.family!r}: bc training is implemented for map_navigation")
    from urbanarena.agents.bc.features import N_MAP_NAV
    from urbanarena.gym.arena import ACTIONS, ArenaTaskEnv

    env = ArenaTaskEnv(city=city, split="train", family="map_navigation", protocol=protocol, observation="map",
                       tasks=list(tasks), task_dir=task_dir)
    samples, demo = collect_oracle(env, tasks, cfg.blind, cfg.seed)
    ds = Dataset.of(samples, N_MAP_NAV, len(ACTIONS))
    collect_s = time.perf_counter() - t0
    model, figs = fit(ds, cfg, len(ACTIONS))
    rounds = []
    for _ in range(max(0, int(cfg.dagger))):
        t1 = time.perf_counter()
        extra, info = collect_dagger(env, tasks, model, cfg.blind, cfg.seed)
        ds = ds + Dataset.of(extra, N_MAP_NAV, len(ACTIONS))
        model, figs = fit(ds, cfg, len(ACTIONS))
        rounds.append(dict(info, seconds=round(time.perf_counter() - t1, 2)))
    if dataset_out is not None:
        save_dataset(ds, dataset_out)
    meta = {"config": asdict(cfg), "figures": figs, "demonstrations": demo, "dagger": rounds, "protocol": protocol,
            "step_limit": env.max_steps, "city": {"name": city.name, "content_hash": city.content_hash},
            "collect_seconds": round(collect_s, 2), "total_seconds": round(time.perf_counter() - t0, 2),
            "feature_set": cfg.family}
    save_checkpoint(model, out, meta)
    return meta


__all__ = ["DECISION_WEIGHT", "Dataset", "MAX_HIDDEN", "MAX_N_ACTIONS", "MAX_N_VECTOR", "META_KEY", "MissingExtraError",
           "TRAIN_EXTRA_HINT", "TrainConfig", "policy_shapes", "require_train_extra", "collect_dagger", "collect_oracle", "fit",
           "load_checkpoint", "load_dataset", "oracle_label", "save_checkpoint", "save_dataset", "train_bc"]
