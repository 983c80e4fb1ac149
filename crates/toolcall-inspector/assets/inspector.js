// The live page's only script: it applies the server's pushed updates (Server-Sent Events,
// no polling). Each update carries the call's block as the server renders it, so the page
// looks the same with or without this script.
(() => {
  "use strict";
  const calls = document.getElementById("calls");
  if (!calls || !window.EventSource) return;
  const turn = document.getElementById("turn");
  const MAX_BLOCKS = 200;
  const source = new EventSource(calls.dataset.events);
  source.addEventListener("call", (e) => {
    const update = JSON.parse(e.data);
    const tpl = document.createElement("template");
    tpl.innerHTML = update.html;
    const fresh = tpl.content.firstElementChild;
    if (!fresh) return;
    const old = Array.from(calls.children).find((el) => el.dataset.key === update.key);
    if (old) {
      // Keep what the reader opened or closed.
      const open = Array.from(old.querySelectorAll("details")).map((d) => d.open);
      fresh.querySelectorAll("details").forEach((d, i) => {
        if (i < open.length) d.open = open[i];
      });
      old.replaceWith(fresh);
    } else {
      calls.prepend(fresh);
      while (calls.children.length > MAX_BLOCKS) calls.lastElementChild.remove();
    }
  });
  source.addEventListener("turn", (e) => {
    const update = JSON.parse(e.data);
    const who = update.session_id ? "Session " + update.session_id + ": " : "";
    if (update.event === "turn_started") turn.textContent = who + "turn running…";
    else if (update.event === "turn_finished") turn.textContent = who + "turn finished.";
    else if (update.event === "text_delta" && update.text) turn.textContent = who + update.text;
  });
  // The page fell too far behind the stream: start again from the server's state.
  source.addEventListener("reload", () => location.reload());
})();
