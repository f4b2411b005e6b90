// urbanarena play page, continuous mode (UrbanGround's actions): shows the participant the agent's observation
// and sends one UrbanGround action per key press or button (docs/play.md). Text is set with textContent only.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const sections = ["consent", "ready", "episode", "done"];
  let state = null;
  let busy = false;
  let deadline = null;   // performance.now() ms when the time runs out
  let timerHandle = null;
  let refsShown = null;  // the episode (number, practice) whose references are on the page
  let optionsShown = null;

  function show(name) {
    for (const s of sections) $(s).hidden = (s !== name);
  }

  function setBusy(b) {
    busy = b;
    $("busy").hidden = !b;
    document.body.dataset.busy = b ? "1" : "0";
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
      const err = new Error(typeof detail === "string" ? detail : JSON.stringify(detail));
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
    if (r.practice && r.score !== undefined && r.score !== null) s += ` Success ${r.score}.`;
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

  function list(el, items) {
    el.replaceChildren();
    for (const a of items) {
      const li = document.createElement("li");
      li.textContent = a;
      el.append(li);
    }
  }

  function renderEpisode(ep) {
    const key = `${ep.practice}:${ep.number}`;
    document.body.dataset.seq = String(ep.seq);
    document.body.dataset.mode = ep.mode;
    $("task-label").textContent = ep.practice ? `Practice ${ep.number} of ${ep.total} (not scored)`
                                              : `Task ${ep.number} of ${ep.total}`;
    $("step").textContent = String(ep.step);
    $("mode").textContent = ep.mode === "map" ? "map mode" : "first-person mode";
    $("instruction").textContent = ep.instruction;
    const inMap = ep.mode === "map";
    $("view-box").hidden = inMap;
    $("map-box").hidden = !inMap;
    $("fp-controls").hidden = inMap;
    $("map-controls").hidden = !inMap;
    if (inMap) $("map").src = ep.map || ""; else $("view").src = ep.view || "";
    $("state-text").textContent = ep.state_text;
    $("notices-box").hidden = !(ep.notices && ep.notices.length);
    list($("notices"), ep.notices || []);
    $("last-action-result").textContent = ep.last_result || "";
    if (optionsShown !== key) {
      const box = $("options");
      box.replaceChildren();
      for (const o of ep.options || []) {
        const b = document.createElement("button");
        b.type = "button";
        b.dataset.letter = o.letter;
        b.textContent = `${o.letter}) ${o.text}`;
        b.addEventListener("click", () => { b.blur(); $("answer").value = o.letter; markOption(o.letter); });
        box.append(b);
      }
      box.hidden = !(ep.options && ep.options.length);
      $("answer").value = "";
      optionsShown = key;
    }
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
    list($("recent"), ep.recent_actions || []);
    if (ep.remaining_s === null || ep.remaining_s === undefined) {
      $("timer-box").hidden = true;
      stopTimer();
    } else {
      $("timer-box").hidden = false;
      deadline = performance.now() + ep.remaining_s * 1000;
      startTimer();
    }
  }

  function markOption(letter) {
    for (const b of $("options").querySelectorAll("button")) b.classList.toggle("on", b.dataset.letter === letter);
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

  // ---------------------------------------------------------------- actions (UrbanGround's JSON)
  function send(action) {
    if (!state || state.phase !== "episode") return;
    run("POST", "/api/act", { seq: state.episode.seq, action });
  }
  const mode = () => (state && state.episode ? state.episode.mode : "first_person");
  const num = (id) => Number($(id).value);

  function move(dir, sprint) {
    send({ action: (sprint || $("sprint").checked) ? "sprint" : "move", dir, seconds: num("seconds") });
  }
  function look(yawSign, pitchSign) {
    const step = num("look-step");
    send({ action: "look", yaw: yawSign * step, pitch: pitchSign * step });
  }
  function pan(eastSign, northSign) {
    const step = num("pan-step");
    send({ action: "map_pan", east: eastSign * step, north: northSign * step });
  }
  function terminate() {
    const text = $("answer").value.trim();
    $("answer").value = "";
    $("answer").blur();
    send(text ? { action: "terminate", answer: text } : { action: "terminate" });
  }

  const MOVE_KEYS = { w: "forward", a: "left", s: "backward", d: "right" };
  const LOOK_KEYS = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, 1], ArrowDown: [0, -1] };
  const SECONDS_KEYS = { "1": "0.25", "2": "0.5", "3": "1", "4": "2" };

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
    if (ev.target instanceof HTMLSelectElement || ev.target instanceof HTMLInputElement) ev.target.blur();
    const k = ev.key.length === 1 ? ev.key.toLowerCase() : ev.key;
    if (ev.repeat && k !== "Shift") { ev.preventDefault(); return; }  // one action per press
    if (k === "Enter") { ev.preventDefault(); $("answer").focus(); return; }
    if (k === "m") { ev.preventDefault(); send({ action: mode() === "map" ? "close_map" : "open_map" }); return; }
    if (mode() === "map") {
      if (k in LOOK_KEYS) { ev.preventDefault(); pan(LOOK_KEYS[k][0], LOOK_KEYS[k][1]); return; }
      if (k === "+" || k === "=") { ev.preventDefault(); send({ action: "map_zoom", factor: 0.5 }); return; }
      if (k === "-") { ev.preventDefault(); send({ action: "map_zoom", factor: 2 }); return; }
      return;
    }
    if (k in SECONDS_KEYS) { ev.preventDefault(); $("seconds").value = SECONDS_KEYS[k]; return; }
    if (k in MOVE_KEYS) { ev.preventDefault(); move(MOVE_KEYS[k], ev.shiftKey); return; }
    if (k in LOOK_KEYS) { ev.preventDefault(); look(LOOK_KEYS[k][0], LOOK_KEYS[k][1]); }
  });

  $("map").addEventListener("click", (ev) => {
    if (mode() !== "map") return;
    const img = $("map");
    const x = Math.min(1, Math.max(0, ev.offsetX / img.clientWidth));
    const y = Math.min(1, Math.max(0, ev.offsetY / img.clientHeight));
    send({ action: "map_select", x, y });
  });
  $("answer-form").addEventListener("submit", (ev) => { ev.preventDefault(); terminate(); });
  for (const b of document.querySelectorAll(".mv")) b.addEventListener("click", () => { b.blur(); move(b.dataset.dir, false); });
  for (const b of document.querySelectorAll(".look")) {
    b.addEventListener("click", () => { b.blur(); look(Number(b.dataset.yaw), Number(b.dataset.pitch)); });
  }
  for (const b of document.querySelectorAll(".pan")) {
    b.addEventListener("click", () => { b.blur(); pan(Number(b.dataset.east), Number(b.dataset.north)); });
  }
  for (const b of document.querySelectorAll(".zoom")) {
    b.addEventListener("click", () => { b.blur(); send({ action: "map_zoom", factor: Number(b.dataset.factor) }); });
  }
  $("open-map").addEventListener("click", () => { $("open-map").blur(); send({ action: "open_map" }); });
  $("close-map").addEventListener("click", () => { $("close-map").blur(); send({ action: "close_map" }); });
  $("agree").addEventListener("click", () => run("POST", "/api/consent"));
  $("start").addEventListener("click", () => run("POST", "/api/start"));

  run("GET", "/api/state");
})();
