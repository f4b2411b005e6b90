// urbanarena play page: shows the participant exactly what the agent gets and sends their actions.
// State comes from /api/state, /api/start and /api/act (docs/play.md); the shared page logic is play_common.js.
// Text is set with textContent only.
"use strict";
(function () {
  const { $ } = window.urbanarenaPlay;
  let magnitude = "";

  const page = window.urbanarenaPlay.page({
    renderEpisode(ep) {
      $("view").src = ep.view || "";
      $("map-box").hidden = !ep.map;
      if (ep.map) $("map").src = ep.map;
    },
    practiceScore: (r) => ` Score ${r.score}. ${r.message || ""}`,
    onEpisodeKey(ev) {
      const k = ev.key.length === 1 ? ev.key.toLowerCase() : ev.key;
      if (k in MAGS) { setMagnitude(MAGS[k]); ev.preventDefault(); return; }
      if (k === "Enter") { ev.preventDefault(); $("answer").focus(); return; }
      if (k in KEYS) { ev.preventDefault(); act(KEYS[k]); }
    },
  });

  function setMagnitude(m) {
    magnitude = m;
    for (const b of document.querySelectorAll(".mag")) b.classList.toggle("on", b.dataset.mag === m);
  }

  function act(kind, answer) {
    const action = { kind };
    if (kind === "ANSWER") action.answer = answer;
    else if (["W", "A", "D", "Q", "E"].includes(kind) && magnitude) action.magnitude = magnitude;
    page.act(action);
  }

  const KEYS = {
    w: "W", s: "S", a: "A", d: "D", q: "Q", e: "E",
    ArrowLeft: "LEFT", ArrowRight: "RIGHT", ArrowUp: "UP",
  };
  const MAGS = { "0": "", "1": "SMALL", "2": "MEDIUM", "3": "LARGE" };

  $("answer-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = $("answer").value;
    $("answer").value = "";
    $("answer").blur();
    act("ANSWER", text);
  });
  for (const b of document.querySelectorAll(".act")) b.addEventListener("click", () => { b.blur(); act(b.dataset.kind); });
  for (const b of document.querySelectorAll(".mag")) b.addEventListener("click", () => { b.blur(); setMagnitude(b.dataset.mag); });

  setMagnitude("");
  page.start();
})();
