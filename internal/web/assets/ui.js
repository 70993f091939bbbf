// mvp's web page: refresh the live part of a page, and follow a task's driver log. Plain JS, no build step.
"use strict";

// refresh replaces #live with the server's newest rendering of it, every data-refresh milliseconds.
function refresh(live) {
  const every = parseInt(live.dataset.refresh || "2000", 10);
  const tick = async () => {
    try {
      const u = new URL(window.location.href);
      u.searchParams.set("fragment", "live");
      const res = await fetch(u, { credentials: "same-origin", cache: "no-store" });
      if (res.redirected || res.status === 401 || res.status === 403) { window.location.assign("/ui/login"); return; }
      if (res.ok) { live.innerHTML = await res.text(); }
    } catch (e) { /* the next tick tries again */ }
    setTimeout(tick, every);
  };
  setTimeout(tick, every);
}

// ansi matches terminal colour codes, which Ray's own log lines carry.
const ansi = /\u001b\[[0-9;]*[A-Za-z]/g;

// keep is how much of a log the page shows: its last characters. A long run's driver log can be hundreds of MB,
// all of which the page held (appending each piece by reading the whole text back); `mvp logs ID` prints it whole.
const keep = 1 << 20;

// follow streams the latest attempt's driver log into the <pre> until the attempt ends, then, while the task may
// still make another attempt, asks again every 2 s, saying which attempt it shows whole (shown=N): the server
// answers 204 while that one is still the latest, and the next attempt's log once there is one. It shows the log's
// last `keep` characters, from a line's start. The ended attempt's log was read again, whole, every 2 s while the
// task waited (hundreds of MB for a long run), and the view jumped back to its end each time.
function follow(pre) {
  const status = document.getElementById("log-status");
  const say = (s) => { if (status) status.textContent = s; };
  const terminal = () => {
    const h = document.getElementById("task-id");
    const s = h ? h.dataset.state : "";
    return s === "SUCCEEDED" || s === "FAILED" || s === "CANCELED";
  };
  let shown = ""; // the attempt whose log the page shows whole: its stream ended
  const run = async () => {
    const wasTerminal = terminal();
    const h = document.getElementById("task-id");
    try {
      const u = pre.dataset.src + "?follow=true" + (shown !== "" ? "&shown=" + encodeURIComponent(shown) : "");
      const res = await fetch(u, { credentials: "same-origin", cache: "no-store" });
      if (res.status === 204) {
        // That attempt ended and is still the latest: the task waits to run again; its log stays as shown.
      } else if (res.ok && res.body) {
        const attempt = res.headers.get("X-Mvp-Log-Attempt") || "";
        say("(following)");
        pre.textContent = "";
        const reader = res.body.getReader();
        const dec = new TextDecoder();
        const note = "(earlier lines not shown here: mvp logs " + (h ? h.textContent : "TASK_ID") + " prints the whole log)\n";
        let text = "", cut = false, drawn = true;
        const draw = () => {
          drawn = true;
          const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
          pre.textContent = (cut ? note : "") + text;
          if (atEnd) pre.scrollTop = pre.scrollHeight;
        };
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          text += dec.decode(value, { stream: true }).replace(ansi, "");
          if (text.length > keep) {
            const nl = text.indexOf("\n", text.length - keep);
            text = text.slice(nl >= 0 ? nl + 1 : text.length - keep);
            cut = true;
          }
          if (drawn) { // at most one redraw a frame, however fast the pieces come
            drawn = false;
            requestAnimationFrame(draw);
          }
        }
        draw();
        shown = attempt;
        say("(attempt ended)");
      } else {
        say(res.status === 404 ? "(no log yet)" : "(log unavailable: " + res.status + ")");
      }
    } catch (e) {
      say("(log interrupted; retrying)");
    }
    if (!wasTerminal) setTimeout(run, 2000);
  };
  run();
}

document.addEventListener("DOMContentLoaded", () => {
  const live = document.getElementById("live");
  if (live) refresh(live);
  const pre = document.getElementById("log");
  if (pre) follow(pre);
});
