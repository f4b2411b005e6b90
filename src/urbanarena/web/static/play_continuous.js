// urbanarena play page, continuous mode (UrbanGround's actions): shows the participant the agent's observation
// and sends one UrbanGround action per key press or button (docs/play.md); the shared page logic is
// play_common.js. Text is set with textContent only.
"use strict";
(function () {
  const { $, list } = window.urbanarenaPlay;
  let optionsShown = null;

  const page = window.urbanarenaPlay.page({
    renderEpisode(ep, key) {
      document.body.dataset.mode = ep.mode;
      $("mode").textContent = ep.mode === "map" ? "map mode" : "first-person mode";
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
    },
    practiceScore: (r) => ` Success ${r.score}.`,
    onEpisodeKey,
  });

  function markOption(letter) {
    for (const b of $("options").querySelectorAll("button")) b.classList.toggle("on", b.dataset.letter === letter);
  }

  // ---------------------------------------------------------------- actions (UrbanGround's JSON)
  const send = (action) => page.act(action);
  const mode = () => {
    const state = page.state();
    return state && state.episode ? state.episode.mode : "first_person";
  };
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

  function onEpisodeKey(ev) {
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
  }

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

  page.start();
})();
