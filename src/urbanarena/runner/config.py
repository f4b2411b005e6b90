"""Episode configuration and its hash.

The config hash is the sha256 (hex) of the canonical JSON (sorted keys, no
whitespace, no NaN) of everything that changes an episode's result apart from
the task and the seed:

* ``protocol``: protocol id and its parameters (:data:`urbanarena.env.protocols.PROTOCOLS`);
* ``max_steps``: the step limit;
* ``agent``: the agent's ``config()`` (name and parameters; later agents put
  their model, strategies and prompt-template hashes there);
* ``family``: task family name and its ``version`` attribute when it has one;
* ``city``: the city's content hash;
* ``control``: the control mode of a VLM agent (``--blind``, ``--no-map``,
  ``--oracle-perception``; :mod:`urbanarena.agents.controls`), only when it is
  not normal, so normal configs keep their hashes and a blind run never shares
  store keys with a normal one;
* ``strategies``: the composed strategies (``--strategy``;
  :func:`urbanarena.agents.strategies.strategies_config`: canonical spec, what each
  uses, whether any is privileged) and ``rounds`` (``--rounds``), each only when
  set (no strategy, one round), so other configs keep their hashes.

``config_version`` (:data:`CONFIG_VERSION`) changes whenever the engine changes what a stored
result means under an unchanged protocol id (:data:`CONFIG_VERSION_CHANGES` says what changed):
every hash changes with it, so resuming an older RUN_DIR never mixes old and new episodes under
one key; the old rows stay under their own hash (``summary --config`` picks one) and the run log
warns (:func:`stale_config_note`).

Wall-clock facts (code version, timestamps) are *not* in the hash: they go
into ``run.json``. A row of the store is keyed by ``(task_id, seed, agent,
config_hash)``; rerunning the same command produces the same keys and skips
finished episodes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from urbanarena.env.protocols import get_protocol

CONFIG_VERSION = 2

#: What each config version changed in the meaning of stored results (issue 15).
CONFIG_VERSION_CHANGES: dict[int, str] = {
    2: ("graph runs seed each agent's stream by (seed, task id) (version 1 gave every task of a run the same "
        "stream for a seed: random-agent episodes, and any agent drawing from its context rng, differ); "
        "urbanground-v1 stops at 100 actions (was 600), ends L1 active exploration after 60 s and scores SPR only "
        "on episodes the closure tested; cityarena-v1 sends the location map to every kind but localization and "
        "reads replies as 360CityArena's parser does"),
}


def stale_config_note(config: dict[str, Any]) -> str | None:
    """A one-line note when a stored config (:meth:`EpisodeConfig.as_dict`) predates
    :data:`CONFIG_VERSION`, naming what changed since; ``None`` when it is current."""
    version = int(config.get("config_version", 1))
    if version >= CONFIG_VERSION:
        return None
    changes = "; ".join(f"v{v}: {CONFIG_VERSION_CHANGES[v]}" for v in range(version + 1, CONFIG_VERSION + 1)
                        if v in CONFIG_VERSION_CHANGES)
    return f"config version {version} (current {CONFIG_VERSION}); since then {changes}"


def canonical_json(obj: Any) -> str:
    """Canonical JSON: sorted keys, compact separators, NaN/inf rejected; values
    JSON cannot hold (paths, ...) are written as ``str(value)``."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=False, default=str)


def hash_config(config: dict[str, Any]) -> str:
    """sha256 hex of :func:`canonical_json` of ``config``."""
    return hashlib.sha256(canonical_json(config).encode()).hexdigest()


@dataclass(frozen=True)
class EpisodeConfig:
    """Everything besides task and seed that determines an episode.

    Attributes:
        protocol_id: protocol id (``cityseeker-v1`` ...).
        max_steps: step limit (actions, STOP included).
        agent_name: the name the agent was built from (registry name).
        agent_config: ``agent.config()`` — JSON-able.
        family: task family name.
        family_version: the family's ``version`` attribute or ``None``.
        city_hash: city content hash.
        control: the control mode's fields (``ControlMode.as_dict()``), ``None`` for normal runs.
        strategies: ``strategies_config()`` of the composed strategies, ``None`` without.
        rounds: rounds per job (``--rounds``, default 1).
    """

    protocol_id: str
    max_steps: int
    agent_name: str
    agent_config: dict[str, Any]
    family: str
    city_hash: str
    family_version: Any = None
    extra: dict[str, Any] = field(default_factory=dict)
    control: dict[str, Any] | None = None
    strategies: dict[str, Any] | None = None
    rounds: int = 1

    @property
    def privileged_strategies(self) -> bool:
        """Whether a composed strategy uses privileged information."""
        return bool(self.strategies and self.strategies.get("privileged"))

    def as_dict(self) -> dict[str, Any]:
        """The JSON object that is hashed (see module docstring)."""
        proto = get_protocol(self.protocol_id)
        return {
            "config_version": CONFIG_VERSION,
            "protocol": {"id": proto.id, "params": proto.params, "per_stage_scoring": proto.per_stage_scoring},
            "max_steps": int(self.max_steps),
            "agent": {"name": self.agent_name, "config": self.agent_config},
            "family": {"name": self.family, "version": self.family_version},
            "city": {"content_hash": self.city_hash},
            **({"extra": self.extra} if self.extra else {}),
            **({"control": self.control} if self.control else {}),
            **({"strategies": self.strategies} if self.strategies else {}),
            **({"rounds": int(self.rounds)} if int(self.rounds) != 1 else {}),
        }

    @property
    def hash(self) -> str:
        """Config hash (sha256 hex)."""
        return hash_config(self.as_dict())
