"""Registered Gymnasium environments for training: ``urbanarena/Graph-v1``, ``urbanarena/Arena-v1`` and
``urbanarena/Continuous-v1`` (``docs/gym.md``).

Layer: above ``tasks`` (the envs draw tasks of a split and score them with the family's scorer),
below ``agents`` (whose ``bc:`` agents read observations with the same encoders). Importing
``urbanarena`` registers the three ids with string entry points; this package's modules are imported
only by ``gymnasium.make``.
"""

from __future__ import annotations

ENV_IDS: dict[str, str] = {
    "urbanarena/Graph-v1": "urbanarena.gym.graph:GraphTaskEnv",
    "urbanarena/Arena-v1": "urbanarena.gym.arena:ArenaTaskEnv",
    "urbanarena/Continuous-v1": "urbanarena.gym.continuous:ContinuousTaskEnv",
}


def register_envs() -> None:
    """Register :data:`ENV_IDS` with Gymnasium (once; a no-op when already registered)."""
    import gymnasium

    for env_id, entry in ENV_IDS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=entry, disable_env_checker=True)


__all__ = ["ENV_IDS", "register_envs"]
