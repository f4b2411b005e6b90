"""``urbanarena train bc --family map_navigation|l2_constrained --out CKPT.safetensors [--blind] ...`` (docs/gym.md).

Builds (or loads) the train split's city (``--city helsinki --split train`` means ``helsinki-train``),
takes ``--tasks FILE`` or generates ``--per-family N`` oracle-verified map-navigation tasks there
(``--task-seed S``; the ``tasks generate`` suite builder with the arena oracle), collects the oracle's
demonstrations through ``urbanarena/Arena-v1``, trains the behaviour-cloning policy with ``--dagger`` rounds
(:mod:`urbanarena.agents.bc.train`). Prints the figures; the checkpoint is one safetensors file.
``--family l2_constrained`` (UrbanGround, continuous mode): the same on ``urbanground`` tasks: ``--tasks``
or ``--per-family`` ug-oracle-verified ``l2_constrained`` tasks generated on the train city (the
UrbanGround generator), demonstrations through ``urbanarena/Continuous-v1``
(:mod:`urbanarena.agents.bc.groundtrain`).
Needs the ``train`` extra. Bad input prints ``error: ...`` and exits 2.

Register in ``cli/main.py``: ``app.add_typer(train_app, name="train")``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Optional

import typer

from urbanarena.cli.common import fail
from urbanarena.errors import UrbanArenaError

#: most PyTorch intra-op threads ``--threads`` takes
MAX_THREADS = 256

train_app = typer.Typer(help="Train baselines.", no_args_is_help=True)


@train_app.callback()
def _train() -> None:
    """Train learned baselines on the train split."""


@train_app.command("bc")
def bc(
    out: Path = typer.Option(..., "--out", help="Checkpoint to write (.safetensors)."),
    family: str = typer.Option("map_navigation", "--family", help="Task family: map_navigation (arena) or l2_constrained (UrbanGround)."),
    city: str = typer.Option("helsinki", "--city", help="City (helsinki: the split's area)."),
    split: str = typer.Option("train", "--split", help="Split the city must be (train)."),
    tasks: Optional[Path] = typer.Option(None, "--tasks", help="Task file of the train city (default: generate)."),
    per_family: int = typer.Option(300, "--per-family", help="Tasks generated when --tasks is not given."),
    task_seed: int = typer.Option(0, "--task-seed", help="Seed of the generated tasks."),
    blind: bool = typer.Option(False, "--blind", help="Ablation: the same model without images."),
    epochs: int = typer.Option(30, "--epochs", help="Training passes over the demonstrations (per fit)."),
    dagger: int = typer.Option(1, "--dagger", help="DAgger rounds (the oracle labels the policy's own states)."),
    dataset_out: Optional[Path] = typer.Option(None, "--dataset-out", help="Also write the labelled steps (.npz)."),
    lr: float = typer.Option(2e-3, "--lr", help="Adam learning rate."),
    seed: int = typer.Option(0, "--seed", help="Seed of initialisation and shuffling."),
    threads: int = typer.Option(1, "--threads", help=f"PyTorch intra-op threads, 1 to {MAX_THREADS}."),
) -> None:
    """Train a behaviour-cloning policy from oracle demonstrations and write CKPT."""
    from urbanarena.agents.bc.train import TrainConfig, train_bc
    from urbanarena.gym.common import load_split_city
    from urbanarena.tasks.resolve import resolve_task_set

    try:
        if split != "train":
            raise UrbanArenaError("--split: behaviour cloning trains on the train split only")
        if epochs < 1 or per_family < 1 or dagger < 0:
            raise UrbanArenaError("--epochs and --per-family must be at least 1, --dagger at least 0")
        if not 1 <= threads <= MAX_THREADS:
            raise UrbanArenaError(f"--threads {threads}: must be 1 to {MAX_THREADS} (PyTorch intra-op threads)")
        if not (math.isfinite(lr) and lr > 0):
            raise UrbanArenaError(f"--lr {lr}: must be a finite number above 0")
        c = load_split_city(city, split)
        from urbanarena.agents.bc.groundtrain import GROUND_FAMILIES

        if family in GROUND_FAMILIES:
            meta = _train_ground(c, family, tasks, per_family, task_seed, out, dataset_out,
                                 TrainConfig(family=family, blind=blind, epochs=epochs, lr=lr, seed=seed, threads=threads,
                                             dagger=dagger))
            typer.echo(f"{out}: {json.dumps({k: meta[k] for k in _SHOWN})}")
            return
        if tasks is None:
            from urbanarena.agents.arena_oracle import ArenaOracleSolver
            from urbanarena.gym.common import generated_dir
            from urbanarena.tasks.generators import generate_suite, save_suite

            tasks = generated_dir(c, "bc-verified", family, per_family, task_seed) / "tasks.json"
            if not tasks.is_file():
                save_suite(generate_suite(c, per_family=per_family, seed=task_seed, kinds=(family,), split=split,
                                          solver=ArenaOracleSolver(c)), tasks)
        ts = resolve_task_set(str(tasks), c)
        meta = train_bc(c, [t for t in ts.tasks if t.extra.get("task_kind") == family], out,
                        TrainConfig(family=family, blind=blind, epochs=epochs, lr=lr, seed=seed, threads=threads,
                                    dagger=dagger),
                        task_dir=ts.source_files[0].parent, dataset_out=dataset_out)
    except (UrbanArenaError, ValueError, OSError, ImportError) as e:
        raise fail(e) from None
    typer.echo(f"{out}: {json.dumps({k: meta[k] for k in _SHOWN})}")


_SHOWN = ("demonstrations", "dagger", "figures", "collect_seconds", "total_seconds")


def _train_ground(c, family: str, tasks: Optional[Path], per_family: int, task_seed: int, out: Path,
                  dataset_out: Optional[Path], cfg) -> dict:
    """``--family l2_constrained``: UrbanGround tasks (given or generated, ug-oracle-verified) and the training."""
    from urbanarena.agents.bc.groundtrain import train_ground_bc
    from urbanarena.tasks.resolve import resolve_tasks

    if tasks is None:
        from urbanarena.cli.tasks_cmd import UrbanGroundOracleVerifier
        from urbanarena.gym.common import generated_dir
        from urbanarena.tasks.generators.urbanground import generate_urbanground_suite, save_urbanground_suite

        tasks = generated_dir(c, "bc-verified", family, per_family, task_seed) / "tasks.json"
        if not tasks.is_file():
            save_urbanground_suite(generate_urbanground_suite(c, per_family=per_family, seed=task_seed,
                                                              subfamilies=(family,),
                                                              verify=UrbanGroundOracleVerifier(c, None)), tasks)
    return train_ground_bc(c, resolve_tasks(str(tasks), c), out, cfg, dataset_out=dataset_out)
