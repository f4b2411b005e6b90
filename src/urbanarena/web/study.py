"""The human study around ``urbanarena play``: consent, practice tasks, task order, time limits, export.

Task order (:func:`participant_order`). The scored tasks (source order, practice
tasks removed) are numbered ``0 .. n-1`` and participant ``i`` (their position in
the ``--participant`` list or token file) plays them in row ``i`` of a Williams
design (Williams 1949, *Aust. J. Sci. Res. A* 2:149-168), the balanced Latin
square used for carry-over balance in within-subject studies:

* first row ``0, 1, n-1, 2, n-2, 3, ...``; row ``r`` adds ``r`` modulo ``n``;
* even ``n``: rows ``0 .. n-1``; odd ``n``: rows ``0 .. n-1`` then the same rows
  reversed (``2n`` rows); participant ``i`` gets row ``i mod n`` (``2n``).

Over a full cycle of ``n`` (odd: ``2n``) participants every task is played at
every position equally often, and every ordered pair of tasks is adjacent
equally often (once; odd: twice). Then the landmark rule is enforced: two
landmark-search tasks (``landmark_language`` / ``landmark_image``, the language
and image variants) of the same landmark never follow each other. Landmark:
``extra.poi_id``, else ``extra.landmark``, else the final goal's node (or
position). Adjacent pairs that break the rule are repaired, first pair first,
by swapping the pair's second task with the first candidate (later positions in
order, then earlier ones from the nearest) that lowers the number of such pairs,
until none is left; a set that cannot be ordered so (e.g. two variants and
nothing else) is refused with :class:`StudyError` when the server starts. Repairs move a few
tasks, so the balance above is exact only for sets without such pairs.
``per_participant`` keeps the first ``N`` tasks of each row (a balanced
incomplete design: different participants then play different subsets).

Practice tasks are played first, before the scored ones, with the same env,
observations and controls; their result is shown to the participant and never
stored in the run store (``RUN_DIR/study/practice.jsonl`` only records that a
practice task was finished, by whom and how it ended). They come from
``--practice FILE`` or, without it, are the first ``--practice-count`` tasks of
the task set (removed from every participant's scored tasks).

Consent: the first page shows the consent text (``--consent FILE``, plain
text, or :data:`DEFAULT_CONSENT`); agreeing appends ``{participant,
consented_at, consent_sha256}`` to ``RUN_DIR/study/consent.jsonl``. Nothing
else is shown before consent.

Time limit: each task (practice included) has ``time_limit_s`` seconds from
the moment its first view is shown; when it runs out the episode ends with stop
reason ``TIME_LIMIT`` (scored like every stop-rule ending: 0).

Anonymised export (:func:`export_anonymised`): the human episodes of a RUN_DIR
as JSON lines with ``agent`` replaced by ``human:P01``, ``human:P02`` ... (in the
order of each participant's first stored episode; the mapping is not written),
without row ids, wall-clock timestamps or trace folders. Tokens are never in
the store, so they cannot reach an export.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from urbanarena.errors import UrbanArenaError
from urbanarena.runner.episode import utc_now
from urbanarena.runner.store import STORE_FILE, Store
from urbanarena.tasks.schema import Task

#: the landmark-search kinds whose variants of one landmark must not be adjacent
LANDMARK_KINDS = frozenset({"landmark_language", "landmark_image"})
#: the store's agent name prefix of human episodes
HUMAN_PREFIX = "human:"
STUDY_DIR = "study"
CONSENT_FILE = "consent.jsonl"
PRACTICE_FILE = "practice.jsonl"

DEFAULT_CONSENT = (
    "You are invited to take part in a study of how people find their way in a city shown as street views. "
    "You will walk through a virtual city with the keyboard or the on-screen buttons and answer questions. "
    "Each task has a time limit. The study records your actions, answers and timings under a participant code; "
    "it records no name, e-mail or network address. Results are published only in anonymised form "
    "(participant codes such as P01). You may stop at any time by closing the page. "
    "Click 'I agree' to take part."
)


class StudyError(UrbanArenaError):
    """A study that cannot be run as configured (task order, practice tasks, limits)."""


# ---------------------------------------------------------------- task order
def williams_row(n: int, row: int) -> list[int]:
    """Row ``row`` of the Williams design on ``n`` treatments (module docstring): a permutation of ``range(n)``.

    Rows cycle with period ``n`` (even ``n``) or ``2n`` (odd ``n``; rows ``n .. 2n-1`` are the reversed rows).

    Raises:
        ValueError: ``n < 1`` or ``row < 0``.
    """
    if n < 1 or row < 0:
        raise ValueError(f"williams_row needs n >= 1 and row >= 0 (got n={n}, row={row})")
    first = [0]
    lo, hi = 1, n - 1
    while len(first) < n:
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    period = n if n % 2 == 0 else 2 * n
    r = row % period
    seq = [(f + r) % n for f in first]
    return seq[::-1] if r >= n else seq


def landmark_key(task: Task) -> str | None:
    """The landmark a landmark-search task looks for (module docstring), ``None`` for other kinds."""
    extra = task.extra if isinstance(task.extra, dict) else {}
    if extra.get("task_kind") not in LANDMARK_KINDS:
        return None
    for k in ("poi_id", "landmark"):
        if extra.get(k):
            return f"{k}:{extra[k]}"
    g = task.final_goal
    if g is not None and g.node is not None:
        return f"node:{g.node}"
    if g is not None and g.position is not None:
        return f"pos:{g.position.lat:.7f},{g.position.lon:.7f}"
    return None


def _conflicts(order: Sequence[int], keys: Sequence[str | None]) -> list[int]:
    """Positions ``i`` where tasks ``order[i]`` and ``order[i+1]`` are landmark variants of one landmark."""
    return [i for i in range(len(order) - 1)
            if keys[order[i]] is not None and keys[order[i]] == keys[order[i + 1]]]


def separate_variants(order: Sequence[int], tasks: Sequence[Task]) -> list[int]:
    """``order`` (indices into ``tasks``) repaired so that no two landmark variants of one landmark are adjacent
    (module docstring).

    Raises:
        StudyError: the tasks cannot be ordered so (names the landmark).
    """
    keys = [landmark_key(t) for t in tasks]
    out = list(order)
    bad = _conflicts(out, keys)
    while bad:
        i = bad[0]
        fixed = False
        for j in [*range(i + 2, len(out)), *range(i - 1, -1, -1)]:  # later positions first, then nearest earlier
            out[i + 1], out[j] = out[j], out[i + 1]
            nxt = _conflicts(out, keys)
            if len(nxt) < len(bad):
                bad, fixed = nxt, True
                break
            out[i + 1], out[j] = out[j], out[i + 1]
        if not fixed:
            t = tasks[out[i]]
            raise StudyError(f"tasks {t.task_id!r} and {tasks[out[i + 1]].task_id!r} are variants of one landmark "
                             f"({keys[out[i]]}) and the task set has too few other tasks to keep them apart")
    return out


def participant_order(tasks: Sequence[Task], participant_index: int, per_participant: int | None = None) -> list[Task]:
    """The scored tasks of participant ``participant_index`` in play order (module docstring).

    Raises:
        StudyError: no task, a bad ``per_participant``, or variants that cannot be kept apart.
    """
    if not tasks:
        raise StudyError("no scored task left (every task is a practice task?)")
    if per_participant is not None and per_participant < 1:
        raise StudyError(f"--per-participant must be >= 1 (got {per_participant})")
    order = separate_variants(williams_row(len(tasks), participant_index), tasks)
    picked = [tasks[i] for i in order]
    return picked[:per_participant] if per_participant is not None else picked


# ---------------------------------------------------------------- plan
@dataclass
class StudyPlan:
    """What every participant does.

    Attributes:
        tasks: scored tasks (source order, practice tasks removed).
        practice: practice tasks (played first, never stored).
        time_limit_s: seconds per task from its first view; ``None`` = no limit.
        per_participant: scored tasks per participant (``None`` = all).
        consent_text: the consent page's text.
    """

    tasks: list[Task]
    practice: list[Task] = field(default_factory=list)
    time_limit_s: float | None = 600.0
    per_participant: int | None = None
    consent_text: str = DEFAULT_CONSENT

    def __post_init__(self):
        if self.time_limit_s is not None and not self.time_limit_s > 0:
            raise StudyError(f"--time-limit must be > 0 seconds (got {self.time_limit_s}; 0 on the command line "
                             "means no limit)")
        ids = [t.task_id for t in self.tasks]
        if len(set(ids)) != len(ids):
            raise StudyError("the scored tasks hold a task id twice")
        if not self.tasks:
            raise StudyError("no scored task")

    def check(self, n_participants: int) -> None:
        """Build the order of participants ``0 .. n_participants-1`` once (the server does this at start).

        Raises:
            StudyError: a row whose landmark variants cannot be kept apart, or a bad ``per_participant``.
        """
        for i in range(n_participants):
            participant_order(self.tasks, i, self.per_participant)

    @property
    def consent_sha256(self) -> str:
        return hashlib.sha256(self.consent_text.encode("utf-8")).hexdigest()

    def order_for(self, participant_index: int) -> list[Task]:
        """The scored tasks of one participant in play order."""
        return participant_order(self.tasks, participant_index, self.per_participant)


def split_practice(tasks: Sequence[Task], practice: Sequence[Task] | None, practice_count: int) -> tuple[list[Task], list[Task]]:
    """``(scored, practice)``: ``practice`` when given (and then ``tasks`` untouched, less any task with a
    practice task's id), else the first ``practice_count`` tasks of ``tasks`` as practice and the rest scored.

    Raises:
        StudyError: a negative count, or no scored task left.
    """
    if practice_count < 0:
        raise StudyError(f"--practice-count must be >= 0 (got {practice_count})")
    if practice:
        ids = {t.task_id for t in practice}
        scored = [t for t in tasks if t.task_id not in ids]
        prac = list(practice)
    else:
        prac, scored = list(tasks[:practice_count]), list(tasks[practice_count:])
    if not scored:
        raise StudyError(f"no scored task left after taking {len(prac)} practice task(s) from {len(tasks)} task(s)")
    return scored, prac


# ---------------------------------------------------------------- study logs
class StudyLog:
    """Consent and practice records under ``RUN_DIR/study/`` (JSON lines, appended; module docstring)."""

    def __init__(self, run_dir: str | Path):
        self.dir = Path(run_dir) / STUDY_DIR
        self._lock = threading.Lock()

    def _read(self, name: str) -> list[dict[str, Any]]:
        p = self.dir / name
        if not p.is_file():
            return []
        out = []
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise StudyError(f"{p} [line {i}]: not JSON ({e})") from e
        return out

    def _append(self, name: str, record: dict[str, Any]) -> None:
        with self._lock:
            self.dir.mkdir(parents=True, exist_ok=True)
            with open(self.dir / name, "a", encoding="utf-8") as f:
                f.write(json.dumps(record, ensure_ascii=False) + "\n")

    def consented(self, participant: str, consent_sha256: str) -> bool:
        """Whether ``participant`` agreed to this consent text (same SHA-256)."""
        return any(r.get("participant") == participant and r.get("consent_sha256") == consent_sha256
                   for r in self._read(CONSENT_FILE))

    def record_consent(self, participant: str, consent_sha256: str) -> None:
        self._append(CONSENT_FILE, {"participant": participant, "consented_at": utc_now(),
                                    "consent_sha256": consent_sha256})

    def practice_done(self, participant: str) -> set[str]:
        """Task ids of the practice tasks ``participant`` finished."""
        return {str(r.get("task_id")) for r in self._read(PRACTICE_FILE) if r.get("participant") == participant}

    def record_practice(self, participant: str, task_id: str, stop_reason: str | None) -> None:
        self._append(PRACTICE_FILE, {"participant": participant, "task_id": task_id, "stop_reason": stop_reason,
                                     "finished_at": utc_now()})


# ---------------------------------------------------------------- export
#: columns an anonymised export leaves out (row order, wall clock, trace folders)
DROPPED_COLUMNS = ("id", "started_at", "finished_at", "artifact_dir")


def _scrub(obj: Any, names: dict[str, str]) -> Any:
    """``obj`` with every string equal to a stored agent name (``human:<participant>``) replaced by its pseudonym."""
    if isinstance(obj, str):
        return names.get(obj, obj)
    if isinstance(obj, dict):
        return {k: _scrub(v, names) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_scrub(v, names) for v in obj]
    return obj


def export_anonymised(run_dir: str | Path, out: str | Path, *, include_agents: Iterable[str] | None = None) -> dict[str, Any]:
    """Write the human episodes of ``run_dir`` as anonymised JSON lines (module docstring).

    Args:
        run_dir: the RUN_DIR of a play study.
        out: the JSONL file to write.
        include_agents: store agent names to export (default: every ``human:`` agent).
    Returns: ``{"path", "episodes", "participants"}``.
    Raises:
        StoreError: no run store in ``run_dir``.
        StudyError: no human episode stored.
    """
    store = Store(Path(run_dir) / STORE_FILE, readonly=True)
    try:
        rows = [r for r in store.rows() if str(r.get("agent") or "").startswith(HUMAN_PREFIX)]
    finally:
        store.close()
    if include_agents is not None:
        keep = set(include_agents)
        rows = [r for r in rows if r["agent"] in keep]
    if not rows:
        raise StudyError(f"{run_dir}: no human episode stored (agent 'human:...')")
    first: dict[str, int] = {}
    for r in rows:
        first[r["agent"]] = min(first.get(r["agent"], r["id"]), r["id"])
    ordered = sorted(first, key=lambda a: first[a])
    width = max(2, len(str(len(ordered))))
    names = {a: f"{HUMAN_PREFIX}P{i + 1:0{width}d}" for i, a in enumerate(ordered)}
    p = Path(out)
    p.parent.mkdir(parents=True, exist_ok=True)
    from urbanarena.safe_paths import atomic_write

    def write(tmp: Path) -> None:
        with open(tmp, "w", encoding="utf-8") as f:
            for r in sorted(rows, key=lambda r: (names[r["agent"]], r["task_id"], r["seed"])):
                rec = {k: v for k, v in r.items() if k not in DROPPED_COLUMNS}
                rec = _scrub(rec, names)
                f.write(json.dumps(rec, ensure_ascii=False, allow_nan=False, default=str) + "\n")
    atomic_write(p, write)
    return {"path": str(p), "episodes": len(rows), "participants": len(ordered)}


__all__ = ["DEFAULT_CONSENT", "HUMAN_PREFIX", "LANDMARK_KINDS", "StudyError", "StudyLog", "StudyPlan",
           "export_anonymised", "landmark_key", "participant_order", "separate_variants", "split_practice",
           "williams_row"]
