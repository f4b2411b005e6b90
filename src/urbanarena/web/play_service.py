"""The play service behind ``urbanarena play``: participants, their task queues and running episodes.

:func:`urbanarena.web.play.open_play` builds it (or the continuous one, :mod:`.play_continuous`) from CITY and TASKS.

One :class:`PlayService` per server. It resolves nothing itself: the caller
gives the city, the task set, the :class:`~urbanarena.web.study.StudyPlan`
and the participants' :class:`~urbanarena.web.auth.ParticipantTokens`. At
start it checks what ``urbanarena run`` checks for arena tasks (family,
protocol, reference images; a city with views and, for a rendered city, a
working renderer), takes the RUN_DIR lock, records the episode config in the
store and writes ``run.json`` (agent ``human``; participant count, practice
tasks, time limit; never a token or a participant id).

Episodes: every episode runs through the runner's
:class:`~urbanarena.runner.arena.ArenaEpisodeRunner` (one per participant,
agent name ``human:<participant>``) with a
:class:`~urbanarena.web.human.HumanAgent`, so views, maps, reference images,
stop rules, validators and the stored row are the runner's own. Scored
episodes are committed to ``RUN_DIR/episodes.sqlite`` under the study's one
config hash (``agent`` ``human``, its time limit, the arena view; so the
participants of one study pool into one run in ``summary`` and ``report``),
seed 0. Practice episodes are never stored.

Progress survives a restart: a participant's next scored task is the first of
their order (:meth:`StudyPlan.order_for`) not yet stored for them; practice and
consent are read from ``RUN_DIR/study/``.

What the participant is sent (:meth:`PlayService.state`): the phase
(``consent``, ``ready``, ``episode``, ``done``) and, during an episode, the
observation exactly as the agent gets it — the camera view, the
current-location map (the tasks the protocol's ``location_map`` rule names), the
reference images (PNG data URLs, lossless), the task text, the branch arrows,
the recent actions, the step count and step limit — plus the time left. Task
ids, goals and scores of scored tasks are not sent; a practice task's result
(score and the validator's message) is.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from urbanarena.env.observers import observation_source, require_renderer
from urbanarena.errors import StoreError, TaskFormatError, UrbanArenaError
from urbanarena.render.encode import encode_image
from urbanarena.runner.arena import ArenaEpisodeRunner, ArenaViewSettings
from urbanarena.runner.config import EpisodeConfig
from urbanarena.runner.episode import utc_now
from urbanarena.runner.metadata import start_record, write_run_json
from urbanarena.runner.store import STORE_FILE, Store
from urbanarena.tasks.families import get_family
from urbanarena.tasks.resolve import TaskSet, task_hash
from urbanarena.tasks.schema import Task
from urbanarena.web.auth import ParticipantTokens
from urbanarena.web.human import EpisodeChannel, EpisodeThread, HumanAgent, parse_action
from urbanarena.web.study import HUMAN_PREFIX, StudyLog, StudyPlan
from urbanarena.world.city import City

#: the seed of every human episode (the arena env is deterministic)
SEED = 0
#: seconds an HTTP request waits for the next observation
WAIT_S = 120.0


class PlayError(UrbanArenaError):
    """A request the play service refuses (the HTTP layer maps ``status`` to the response code).

    Attributes:
        status: 404 unknown thing, 409 out of turn (an action for an old view, no consent yet), 422 bad action.
    """

    def __init__(self, message: str, status: int = 409):
        super().__init__(message)
        self.status = status


def data_url(img: Any) -> str | None:
    """An RGB array as a lossless PNG data URL, ``None`` for ``None``."""
    if img is None:
        return None
    return encode_image(img, "png").data_url()


@dataclass
class _Episode:
    task: Task
    practice: bool
    number: int
    total: int
    channel: EpisodeChannel
    thread: EpisodeThread | None = None
    refs_sent: bool = False


@dataclass
class _Participant:
    pid: str
    index: int
    order: list[Task]
    runner: Any
    lock: threading.Lock = field(default_factory=threading.Lock)
    episode: _Episode | None = None
    last_result: dict[str, Any] | None = None


class PlayService:
    """Participants and episodes of one play server (module docstring): arena tasks.

    The motion model's parts are methods a subclass for another motion model overrides (the
    continuous mode's :class:`urbanarena.web.play_continuous.ContinuousPlayService`): the family
    check (:meth:`_family`), task and city checks, the episode runner per participant
    (:meth:`_make_runner`), the human agent (:meth:`_make_agent`), one episode's row
    (:meth:`_run_episode`), the action reader (:meth:`_parse_action`), the observation sent
    (:meth:`_motion_payload`), a practice result's score, the config's ``extra`` and the page
    (:attr:`page_template`). :func:`open_play` picks the class by the task family's ``action_style``.

    Args:
        city: the city; city_dir: its saved directory (imagery root).
        task_set: the resolved task set (for ``run.json``); plan: the study.
        tokens: the participants (index = position) and their tokens.
        run_dir: the RUN_DIR.
        protocol: protocol id (default the family's); max_steps: step limit (default the family's).
        view: :class:`ArenaViewSettings` (default 360CityArena's 640 x 360, 90 degrees).
        task_dir: folder of the task file (reference images); practice_dir: of the practice file.
        city_spec: the CITY argument; command: the argv (both for ``run.json``).
    Raises:
        TaskFormatError: a task the arena cannot run (file and task named).
        ProtocolError: a protocol the family cannot run.
        UrbanArenaError: graph tasks, a graph-only city, a RUN_DIR that is a file.
        RendererUnavailableError: a rendered city and no OpenGL context here.
        StoreError: another process writes to RUN_DIR.
    """

    #: the families' action style this class plays
    action_style = "arena"
    #: the play page (``templates/``)
    page_template = "play.html.j2"

    def __init__(self, city: City, task_set: TaskSet, plan: StudyPlan, tokens: ParticipantTokens,
                 run_dir: str | Path, *, city_dir: str | Path | None = None, protocol: str | None = None,
                 max_steps: int | None = None, view: ArenaViewSettings | None = None,
                 task_dir: str | Path | None = None, practice_dir: str | Path | None = None,
                 city_spec: str | None = None, command: list[str] | None = None):
        self.city = city
        self.city_dir = Path(city_dir) if city_dir is not None else None
        self.plan = plan
        self.tokens = tokens
        self.run_dir = Path(run_dir)
        self.view = view or ArenaViewSettings()
        self.task_dir = Path(task_dir) if task_dir is not None else None
        self.practice_dir = Path(practice_dir) if practice_dir is not None else self.task_dir
        if self.run_dir.exists() and not self.run_dir.is_dir():
            raise UrbanArenaError(f"--out {self.run_dir} exists and is not a directory")
        fam = self._family(plan)
        self.family = fam
        self.protocol_id = protocol or fam.default_protocol
        fam.check_protocol(self.protocol_id)
        self.max_steps = int(max_steps if max_steps is not None else fam.default_max_steps)
        if self.max_steps < 1:
            raise UrbanArenaError(f"--max-steps must be >= 1 (got {self.max_steps})")
        for tasks, base, what in ((plan.tasks, self.task_dir, "task"), (plan.practice, self.practice_dir, "practice task")):
            for i, t in enumerate(tasks):
                try:
                    self._check_task(t, base)
                except ValueError as e:
                    raise TaskFormatError(base, f"{what} {i} ({t.task_id})", str(e)) from e
        self._check_city(city)
        plan.check(len(tokens.participants))
        agent_cfg = self._make_agent(EpisodeChannel()).config()
        self.config = EpisodeConfig(protocol_id=self.protocol_id, max_steps=self.max_steps, agent_name="human",
                                    agent_config=agent_cfg, family=fam.name,
                                    family_version=getattr(fam, "version", None), city_hash=city.content_hash,
                                    extra=self._config_extra())
        self.config_hash = self.config.hash
        self.log = StudyLog(self.run_dir)
        self._participants: dict[str, _Participant] = {}
        self._lock = threading.Lock()
        self._store_lock = threading.Lock()
        self._closed = False
        self.run_dir.mkdir(parents=True, exist_ok=True)
        from urbanarena.runner.run_lock import lock_run_dir as _lock_run_dir  # the run's RUN_DIR lock (one writer per RUN_DIR)

        self._run_lock = _lock_run_dir(self.run_dir)
        try:
            with Store(self.run_dir / STORE_FILE) as store:
                store.add_config(self.config_hash, self.config.as_dict(), utc_now())
                stored = {t: h for (t, _s, a, c), (h, _r) in store.done_keys().items()
                          if c == self.config_hash and a.startswith(HUMAN_PREFIX)}
            for t in plan.tasks:
                if t.task_id in stored and stored[t.task_id] != task_hash(t):
                    raise StoreError(f"{self.run_dir}: task {t.task_id!r} differs from the one stored there (same id, "
                                     "new content); use a new --out directory")
            self.record = start_record(self.run_dir, self._invocation(task_set, city_spec, command))
        except BaseException:
            if self._run_lock is not None:
                self._run_lock.close()
            raise

    # ---------------------------------------------------------------- motion-model parts (arena)
    def _family(self, plan: StudyPlan) -> Any:
        """The one task family of the study (every task and practice task must be of it).

        Raises:
            UrbanArenaError: tasks of another family.
        """
        families = {t.family for t in plan.tasks + plan.practice}
        if families != {"cityarena"}:
            other = sorted(f for f in families if get_family(f).action_style != "arena")
            raise UrbanArenaError(f"play runs arena tasks (family cityarena); this task set has {', '.join(other)} "
                                  "tasks")
        return get_family("cityarena")

    def _check_task(self, task: Task, base_dir: Path | None) -> None:
        """Raises ValueError: a task the family's env cannot run (reference images resolve against ``base_dir``)."""
        self.family.check_task(task, base_dir)

    def _check_city(self, city: City) -> None:
        """Refuse a city without views (graph-only) or a rendered city without an OpenGL context here."""
        source = observation_source(city)
        if source is None:
            raise UrbanArenaError(f"city {city.name!r} is graph-only (no imagery, no annotations to render): "
                                  "there is no view to play")
        if source == "rendered":
            require_renderer(city)

    def _config_extra(self) -> dict[str, Any]:
        """The episode config's ``extra`` (part of the config hash)."""
        return {"arena_view": self.view.as_dict()}

    def _make_agent(self, channel: EpisodeChannel) -> Any:
        """The human agent of one episode, acting through ``channel``."""
        return HumanAgent(channel, self.plan.time_limit_s)

    def _make_runner(self, pid: str) -> Any:
        """The participant's episode runner (one per participant; its agent factory is set per episode)."""
        return ArenaEpisodeRunner(self.city, lambda: None, f"{HUMAN_PREFIX}{pid}",  # type: ignore[arg-type,return-value]
                                  city_dir=self.city_dir, task_dir=self.task_dir, view=self.view,
                                  model_under_test="human")

    def _run_episode(self, runner: Any, task: Task, practice: bool) -> dict[str, Any]:
        """Episode thread: run one episode through the runner and return its store row."""
        runner.task_dir = self.practice_dir if practice else self.task_dir
        return runner.run(task, SEED, self.protocol_id, self.max_steps, "" if practice else self.config_hash)

    def _parse_action(self, data: Any, ep: "_Episode | None", seq: int) -> Any:
        """The action of the browser's JSON. Raises: ValueError: a malformed action (sent back as 422)."""
        return parse_action(data)

    def _practice_score(self, metrics: dict[str, Any]) -> Any:
        """The score shown for a finished practice task."""
        return metrics.get("evaluation_score")

    def _motion_payload(self, ep: "_Episode", obs: dict[str, Any], text: dict[str, Any]) -> dict[str, Any]:
        """The motion model's fields of :meth:`_episode_payload` (``obs``: the observation, ``text``: its
        ``text``): the arena's arrows (keys and turn in degrees)."""
        return {"arrows": [{"keys": a.get("keys"), "turn_deg": a.get("turn_deg")} for a in obs.get("arrows") or []]}

    def _invocation(self, task_set: TaskSet, city_spec: str | None, command: list[str] | None) -> dict[str, Any]:
        p = self.plan
        return {
            "city": {"spec": city_spec or str(self.city_dir or self.city.name), "name": self.city.name,
                     "content_hash": self.city.content_hash, "directory": str(self.city_dir) if self.city_dir else None},
            "tasks": {"spec": task_set.spec, "source_hash": task_set.source_hash,
                      "files": [str(f) for f in task_set.source_files], "count": len(p.tasks), "limit": None,
                      "suite_check": task_set.suite_check},
            "agent": {"name": "human", "params": {}, "config": self.config.agent_config},
            "seeds": [SEED],
            "protocols": {self.family.name: self.protocol_id},
            "max_steps": {self.family.name: self.max_steps},
            "configs": {self.config_hash: self.config.as_dict()},
            "planned_by_config": {self.config_hash: len(p.order_for(0)) * len(self.tokens.participants)},
            "workers": len(self.tokens.participants),
            "backend": "play",
            "study": {"participants": len(self.tokens.participants), "practice_tasks": [t.task_id for t in p.practice],
                      "time_limit_s": p.time_limit_s, "per_participant": p.per_participant,
                      "consent_sha256": p.consent_sha256, "order": "williams"},
            "trace": False,
            "command": "urbanarena play",
            "argv": list(command or []),
            "started_at": utc_now(),
        }

    # ---------------------------------------------------------------- participants
    def participant(self, pid: str) -> _Participant:
        """The participant's state (built on first use).

        Raises:
            PlayError(404): not a participant of this study.
        """
        with self._lock:
            p = self._participants.get(pid)
            if p is not None:
                return p
            if pid not in self.tokens.participants:
                raise PlayError(f"unknown participant {pid!r}", 404)
            index = self.tokens.participants.index(pid)
            runner = self._make_runner(pid)
            p = _Participant(pid, index, self.plan.order_for(index), runner)
            self._participants[pid] = p
            return p

    def _stored_task_ids(self, pid: str) -> set[str]:
        with self._store_lock, Store(self.run_dir / STORE_FILE) as store:
            keys = store.done_keys()
        agent = f"{HUMAN_PREFIX}{pid}"
        return {t for (t, _s, a, c) in keys if a == agent and c == self.config_hash}

    def _next(self, p: _Participant) -> tuple[Task, bool, int, int] | None:
        """``(task, practice, number, total)`` of the participant's next task, ``None`` when all are done."""
        done_practice = self.log.practice_done(p.pid)
        for i, t in enumerate(self.plan.practice):
            if t.task_id not in done_practice:
                return t, True, i + 1, len(self.plan.practice)
        stored = self._stored_task_ids(p.pid)
        for i, t in enumerate(p.order):
            if t.task_id not in stored:
                return t, False, i + 1, len(p.order)
        return None

    # ---------------------------------------------------------------- API
    def state(self, pid: str, *, include_refs: bool = True) -> dict[str, Any]:
        """The participant's page state (module docstring)."""
        p = self.participant(pid)
        with p.lock:
            return self._state(p, include_refs)

    def _state(self, p: _Participant, include_refs: bool) -> dict[str, Any]:
        base: dict[str, Any] = {"participant": p.pid, "time_limit_s": self.plan.time_limit_s,
                                "last_result": p.last_result}
        if not self.log.consented(p.pid, self.plan.consent_sha256):
            return {**base, "phase": "consent", "consent_text": self.plan.consent_text}
        ep = p.episode
        if ep is not None and not ep.channel.done:
            return {**base, "phase": "episode", "episode": self._episode_payload(ep, include_refs)}
        nxt = self._next(p)
        if nxt is None:
            return {**base, "phase": "done", "scored_total": len(p.order)}
        t, practice, number, total = nxt
        return {**base, "phase": "ready", "next": {"practice": practice, "number": number, "total": total}}

    def _episode_payload(self, ep: _Episode, include_refs: bool) -> dict[str, Any]:
        """The observation sent to the browser: the fields of every motion model, the motion model's own
        (:meth:`_motion_payload`), and the reference images the first time (or when ``include_refs``)."""
        obs = ep.channel.obs or {}
        text = obs.get("text") or {}
        out = {
            "practice": ep.practice, "number": ep.number, "total": ep.total,
            "seq": ep.channel.seq, "step": obs.get("step"),
            "instruction": text.get("task", ""),
            "view": data_url(obs.get("view")),
            "map": data_url(obs.get("map")),
            "recent_actions": list(text.get("recent_actions") or []),
            **self._motion_payload(ep, obs, text),
            "remaining_s": ep.channel.remaining_s(),
            "n_references": len(obs.get("reference_images") or []),
        }
        if include_refs or not ep.refs_sent:
            out["references"] = [data_url(r) for r in obs.get("reference_images") or []]
            ep.refs_sent = True
        return out

    def consent(self, pid: str) -> dict[str, Any]:
        """Record the participant's consent to the current text; returns the new state."""
        p = self.participant(pid)
        with p.lock:
            if not self.log.consented(pid, self.plan.consent_sha256):
                self.log.record_consent(pid, self.plan.consent_sha256)
            return self._state(p, True)

    def start(self, pid: str) -> dict[str, Any]:
        """Start the participant's next task (no-op while one runs); returns the state with its first view.

        Raises:
            PlayError(409): no consent yet, or nothing left to play.
        """
        p = self.participant(pid)
        with p.lock:
            if self._closed:
                raise PlayError("the play server is shutting down", 409)
            if not self.log.consented(pid, self.plan.consent_sha256):
                raise PlayError("consent first", 409)
            if p.episode is not None and not p.episode.channel.done:
                return self._state(p, True)
            nxt = self._next(p)
            if nxt is None:
                raise PlayError("every task is done", 409)
            task, practice, number, total = nxt
            channel = EpisodeChannel(self.plan.time_limit_s)
            ep = _Episode(task, practice, number, total, channel)
            runner = p.runner
            runner.agent_factory = lambda: self._make_agent(channel)

            def run() -> dict[str, Any]:
                return self._run_episode(runner, task, practice)

            ep.thread = EpisodeThread(channel, run, lambda row: self._finished(p, ep, row))
            p.episode = ep
            p.last_result = None
            ep.thread.start()
        channel.wait_after(0, WAIT_S)
        with p.lock:
            if channel.done and channel.error is not None:
                raise PlayError(f"the episode could not start: {channel.error}", 500)
            return self._state(p, True)

    def _finished(self, p: _Participant, ep: _Episode, row: dict[str, Any]) -> None:
        """Episode thread: store a scored row (or log a practice one) and keep the participant's result."""
        m = row.get("metrics") or {}
        result: dict[str, Any] = {"practice": ep.practice, "number": ep.number, "total": ep.total,
                                  "stop_reason": row.get("stop_reason"), "steps": row.get("steps")}
        if ep.practice:
            self.log.record_practice(p.pid, ep.task.task_id, row.get("stop_reason"))
            result.update(score=self._practice_score(m), message=m.get("message"))
        else:
            with self._store_lock, Store(self.run_dir / STORE_FILE) as store:
                store.add(row)
        p.last_result = result

    def act(self, pid: str, action: Any, seq: int) -> dict[str, Any]:
        """Hand the participant's action for observation ``seq`` to the episode and return the next state.

        Raises:
            PlayError(422): a malformed action. PlayError(409): no episode, or ``seq`` is not the current view.
        """
        p = self.participant(pid)
        ep = p.episode
        try:
            a = self._parse_action(action, ep, int(seq))
        except ValueError as e:
            raise PlayError(str(e), 422) from None
        if ep is None or ep.channel.done:
            raise PlayError("no episode is running", 409)
        if not ep.channel.submit(a, int(seq)):
            raise PlayError("that view is no longer current (an action for it was already taken)", 409)
        ep.channel.wait_after(int(seq), WAIT_S)
        if ep.channel.done:
            if ep.thread is not None:
                ep.thread.join(timeout=WAIT_S)
            if ep.channel.error is not None:
                raise PlayError(f"the episode failed: {ep.channel.error}", 500)
        with p.lock:
            return self._state(p, False)

    def close(self) -> None:
        """Cancel running episodes (nothing of them is stored), finish ``run.json`` and release the RUN_DIR lock."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            parts = list(self._participants.values())
        for p in parts:
            if p.episode is not None and not p.episode.channel.done:
                p.episode.channel.cancel()
                if p.episode.thread is not None:
                    p.episode.thread.join(timeout=30)
        try:
            with Store(self.run_dir / STORE_FILE) as store:
                n = sum(1 for (_t, _s, a, c) in store.done_keys() if c == self.config_hash and a.startswith(HUMAN_PREFIX))
            self.record.update(status="finished", finished_at=utc_now(), episodes={"stored": n})
            write_run_json(self.run_dir, self.record)
        finally:
            if self._run_lock is not None:
                self._run_lock.close()


__all__ = ["PlayError", "PlayService", "SEED", "data_url"]
