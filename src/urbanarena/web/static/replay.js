// urbanarena replay page: lists the stored episodes and steps through one. Text is set with textContent only.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  let ep = null;
  let k = 0;

  async function get(url) {
    const r = await fetch(url, { headers: { "Accept": "application/json" }, credentials: "same-origin" });
    const data = await r.json();
    if (!r.ok) throw new Error(data && data.detail ? data.detail : r.statusText);
    return data;
  }

  function fmt(v) {
    if (v === null || v === undefined || v === "") return "–";
    if (typeof v === "object") return JSON.stringify(v);
    return String(v);
  }

  async function loadList() {
    const data = await get("/api/episodes");
    const tb = document.querySelector("#episodes tbody");
    tb.replaceChildren();
    for (const e of data.episodes) {
      const tr = document.createElement("tr");
      tr.dataset.id = String(e.id);
      for (const v of [e.id, e.task_id, e.agent, e.stop_reason, e.steps, e.score]) {
        const td = document.createElement("td");
        td.textContent = fmt(v);
        tr.append(td);
      }
      if (e.replayable) tr.addEventListener("click", () => open(e.id));
      else tr.classList.add("disabled");
      tb.append(tr);
    }
    const want = new URLSearchParams(location.search).get("episode");
    if (want) open(want);
  }

  async function open(id) {
    try {
      ep = await get(`/api/episodes/${encodeURIComponent(id)}`);
    } catch (e) {
      $("error").textContent = e.message;
      return;
    }
    $("error").textContent = "";
    $("player").hidden = false;
    $("ep-title").textContent = `#${ep.id} ${ep.task_id} · ${ep.agent}`;
    $("ep-instruction").textContent = ep.instruction || "";
    $("slider").max = String(ep.n_states - 1);
    $("kmax").textContent = String(ep.n_states - 1);
    const o = ep.outcome;
    $("o-stop").textContent = fmt(o.stop_reason) + (o.stop_reason_detail ? ` (${o.stop_reason_detail})` : "");
    $("o-answer").textContent = fmt(o.answer);
    $("o-expected").textContent = fmt(o.expected);
    $("o-score").textContent = fmt(o.score);
    $("o-message").textContent = fmt(o.message);
    const refs = $("ep-refs");
    refs.replaceChildren();
    for (let i = 0; i < ep.references; i++) {
      const img = document.createElement("img");
      img.src = `/api/episodes/${ep.id}/reference/${i}.png`;
      img.alt = `reference image ${i + 1}`;
      refs.append(img);
    }
    go(0);
  }

  function go(n) {
    if (!ep) return;
    k = Math.max(0, Math.min(ep.n_states - 1, n));
    document.body.dataset.state = String(k);
    $("k").textContent = String(k);
    $("slider").value = String(k);
    $("rv").src = `/api/episodes/${ep.id}/view/${k}.png`;
    $("rm").src = `/api/episodes/${ep.id}/map/${k}.png`;
    const s = k > 0 ? ep.steps[k - 1] : null;
    $("s-action").textContent = s ? `step ${s.step}: ${s.action}` : "start";
    $("s-thought").textContent = fmt(s && s.thought);
    $("s-memory").textContent = fmt(s && s.memory);
    $("s-outcome").textContent = fmt(s && s.outcome && {
      executed: s.outcome.executed, blocked: s.outcome.blocked, invalid: s.outcome.invalid_action,
      moved_m: s.outcome.moved_m, stop_reason: s.outcome.stop_reason });
  }

  $("first").addEventListener("click", () => go(0));
  $("prev").addEventListener("click", () => go(k - 1));
  $("next").addEventListener("click", () => go(k + 1));
  $("last").addEventListener("click", () => go(ep ? ep.n_states - 1 : 0));
  $("slider").addEventListener("input", (ev) => go(Number(ev.target.value)));
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "ArrowLeft") go(k - 1);
    else if (ev.key === "ArrowRight") go(k + 1);
  });
  loadList().catch((e) => { $("error").textContent = e.message; });
})();
