"""Running episodes durably and in parallel: episode loop, config hashing,
execution backends, the SQLite store, run metadata, summaries and exports."""

from urbanarena.runner.config import EpisodeConfig, hash_config
from urbanarena.runner.driver import PreparedRun, RunOutcome, RunRequest, execute, prepare
from urbanarena.runner.episode import EpisodeRunner, run_episode
from urbanarena.runner.store import Store

__all__ = [
    "EpisodeConfig", "hash_config", "PreparedRun", "RunOutcome", "RunRequest", "execute", "prepare",
    "EpisodeRunner", "run_episode", "Store",
]
