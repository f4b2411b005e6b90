// urbanarena play pages, what the arena page (play.js) and the continuous page (play_continuous.js) share:
// the /api calls, the phases (consent, ready, episode, done), the episode header, reference images, recent
// actions, the countdown and the keys every page has (docs/play.md). Loaded before the page's own script.
// Text is set with textContent only.
"use strict";
window.urbanarenaPlay = (function () {
  const $ = (id) => document.getElementById(id);
  const sections = ["consent", "ready", "episode", "done"];

  // One JSON request (the token is the cookie); a non-2xx answer throws an Error with the server's detail and status.
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

  function list(el, items) {
    el.replaceChildren();
    for (const a of items) {
      const li = document.createElement("li");
      li.textContent = a;
      el.append(li);
    }
  }

  // The page's state machine. hooks:
  //   renderEpisode(ep, key): the motion model's part of an episode's observation (key: "practice:number");
  //   practiceScore(r): the text after "... finished: STOP after N steps." of a scored practice result;
  //   onEpisodeKey(ev): a key press during an episode (not in the answer box, no Ctrl/Meta/Alt).
  // Returns { state(), run(method, url, body), act(action), start() }; start() wires the common controls
  // and loads the state.
  function page(hooks) {
    let state = null;
    let busy = false;
    let deadline = null;   // performance.now() ms when the time runs out
    let timerHandle = null;
    let refsShown = null;  // the episode (number, practice) whose references are on the page

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
      if (r.practice && r.score !== undefined && r.score !== null) s += hooks.practiceScore(r);
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
      const key = `${ep.practice}:${ep.number}`;
      document.body.dataset.seq = String(ep.seq);
      $("task-label").textContent = ep.practice ? `Practice ${ep.number} of ${ep.total} (not scored)`
                                                : `Task ${ep.number} of ${ep.total}`;
      $("step").textContent = String(ep.step);
      $("instruction").textContent = ep.instruction;
      hooks.renderEpisode(ep, key);
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

    // Send one action of the current episode (ignored outside an episode).
    function act(action) {
      if (!state || state.phase !== "episode") return;
      run("POST", "/api/act", { seq: state.episode.seq, action });
    }

    function start() {
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
        hooks.onEpisodeKey(ev);
      });
      $("agree").addEventListener("click", () => run("POST", "/api/consent"));
      $("start").addEventListener("click", () => run("POST", "/api/start"));
      run("GET", "/api/state");
    }

    return { state: () => state, run, act, start };
  }

  return { $, call, list, page };
})();
