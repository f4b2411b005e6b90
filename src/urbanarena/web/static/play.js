// urbanarena play page: shows the participant exactly what the agent gets and sends their actions.
// State comes from /api/state, /api/start and /api/act (docs/play.md). Text is set with textContent only.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const sections = ["consent", "ready", "episode", "done"];
  let state = null;
  let busy = false;
  let magnitude = "";
  let deadline = null;   // performance.now() ms when the time runs out
  let timerHandle = null;
  let refsShown = null;  // the episode (number, practice) whose references are on the page

  function show(name) {
    for (const s of sections) $(s).hidden = (s !== name);
  }

  function setBusy(b) {
    busy = b;
    $("busy").hidden = !b;
  }

  function error(msg) {
    $("error").textContent = msg || "";
  }

  async function call(method, url, body) {
    const opts = { method, headers: { "Accept": "application/json" }, credentials: "same-origin" };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    const r = await fetch(url, opts);
    let data = null;
    try { data = await r.json(); } catch (e) { data = null; }
    if (!r.ok) {
      const detail = data && data.detail ? data.detail : r.statusText;
      const err = new Error(detail);
      err.status = r.status;
      throw err;
    }
    return data;
  }

  async function run(method, url, body) {
    if (busy) return;
    setBusy(true);
    error("");
    try {
      render(await call(method, url, body));
    } catch (e) {
      if (e.status === 409) {
        try { render(await call("GET", "/api/state")); } catch (e2) { error(e2.message); }
      } else {
        error(e.message);
      }
    } finally {
      setBusy(false);
    }
  }

  function resultText(r) {
    if (!r) return "";
    const what = r.practice ? `Practice task ${r.number} of ${r.total}` : `Task ${r.number} of ${r.total}`;
    let s = `${what} finished: ${r.stop_reason} after ${r.steps} steps.`;
    if (r.practice && r.score !== undefined && r.score !== null) s += ` Score ${r.score}. ${r.message || ""}`;
    return s;
  }

  function render(st) {
    state = st;
    document.body.dataset.phase = st.phase;
    if (st.phase === "consent") {
      $("consent-text").textContent = st.consent_text;
      show("consent");
    } else if (st.phase === "ready") {
      $("last-result").textContent = resultText(st.last_result);
      const n = st.next;
      $("ready-text").textContent = n.practice
        ? `Next: practice task ${n.number} of ${n.total} (not scored).`
        : `Next: task ${n.number} of ${n.total}.`;
      show("ready");
      stopTimer();
    } else if (st.phase === "episode") {
      renderEpisode(st.episode);
      show("episode");
    } else if (st.phase === "done") {
      $("done-result").textContent = resultText(st.last_result);
      show("done");
      stopTimer();
    }
  }

  function renderEpisode(ep) {
    document.body.dataset.seq = String(ep.seq);
    $("task-label").textContent = ep.practice ? `Practice ${ep.number} of ${ep.total} (not scored)`
                                              : `Task ${ep.number} of ${ep.total}`;
    $("step").textContent = String(ep.step);
    $("instruction").textContent = ep.instruction;
    $("view").src = ep.view || "";
    $("map-box").hidden = !ep.map;
    if (ep.map) $("map").src = ep.map;
    const key = `${ep.practice}:${ep.number}`;
    if (ep.references && refsShown !== key) {
      const box = $("refs");
      box.replaceChildren();
      ep.references.forEach((src, i) => {
        const fig = document.createElement("figure");
        const img = document.createElement("img");
        img.src = src;
        img.alt = `reference image ${i + 1}`;
        const cap = document.createElement("figcaption");
        cap.textContent = `reference image ${i + 1}`;
        fig.append(img, cap);
        box.append(fig);
      });
      refsShown = key;
    }
    const ol = $("recent");
    ol.replaceChildren();
    for (const a of ep.recent_actions) {
      const li = document.createElement("li");
      li.textContent = a;
      ol.append(li);
    }
    if (ep.remaining_s === null || ep.remaining_s === undefined) {
      $("timer-box").hidden = true;
      stopTimer();
    } else {
      $("timer-box").hidden = false;
      deadline = performance.now() + ep.remaining_s * 1000;
      startTimer();
    }
  }

  function stopTimer() {
    if (timerHandle !== null) clearInterval(timerHandle);
    timerHandle = null;
    deadline = null;
  }

  function startTimer() {
    if (timerHandle !== null) return tick();
    timerHandle = setInterval(tick, 250);
    tick();
  }

  function tick() {
    if (deadline === null) return;
    const left = Math.max(0, (deadline - performance.now()) / 1000);
    const m = Math.floor(left / 60), s = Math.floor(left % 60);
    $("timer").textContent = `${m}:${String(s).padStart(2, "0")}`;
    if (left <= 0) {
      stopTimer();
      setTimeout(() => run("GET", "/api/state"), 500);  // the server ends the episode at the deadline
    }
  }

  function setMagnitude(m) {
    magnitude = m;
    for (const b of document.querySelectorAll(".mag")) b.classList.toggle("on", b.dataset.mag === m);
  }

  function act(kind, answer) {
    if (!state || state.phase !== "episode") return;
    const action = { kind };
    if (kind === "ANSWER") action.answer = answer;
    else if (["W", "A", "D", "Q", "E"].includes(kind) && magnitude) action.magnitude = magnitude;
    run("POST", "/api/act", { seq: state.episode.seq, action });
  }

  const KEYS = {
    w: "W", s: "S", a: "A", d: "D", q: "Q", e: "E",
    ArrowLeft: "LEFT", ArrowRight: "RIGHT", ArrowUp: "UP",
  };
  const MAGS = { "0": "", "1": "SMALL", "2": "MEDIUM", "3": "LARGE" };

  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const inAnswer = document.activeElement === $("answer");
    if (inAnswer) {
      if (ev.key === "Escape") $("answer").blur();
      return;  // Enter submits the form
    }
    if (!state) return;
    if (state.phase === "ready" && ev.key === "Enter") {
      ev.preventDefault();
      run("POST", "/api/start");
      return;
    }
    if (state.phase !== "episode") return;
    const k = ev.key.length === 1 ? ev.key.toLowerCase() : ev.key;
    if (k in MAGS) { setMagnitude(MAGS[k]); ev.preventDefault(); return; }
    if (k === "Enter") { ev.preventDefault(); $("answer").focus(); return; }
    if (k in KEYS) { ev.preventDefault(); act(KEYS[k]); }
  });

  $("answer-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = $("answer").value;
    $("answer").value = "";
    $("answer").blur();
    act("ANSWER", text);
  });
  for (const b of document.querySelectorAll(".act")) b.addEventListener("click", () => { b.blur(); act(b.dataset.kind); });
  for (const b of document.querySelectorAll(".mag")) b.addEventListener("click", () => { b.blur(); setMagnitude(b.dataset.mag); });
  $("agree").addEventListener("click", () => run("POST", "/api/consent"));
  $("start").addEventListener("click", () => run("POST", "/api/start"));

  setMagnitude("");
  run("GET", "/api/state");
})();
