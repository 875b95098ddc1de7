// Weir inspector: paging, live updates, lazy shadowed messages and the
// request page's buttons. Pages are rendered (and escaped) by the server;
// this script only moves server-rendered fragments into place, parsing
// them with DOMParser, which never runs scripts.
"use strict";

(function () {
  const page = document.getElementById("page");
  if (!page) return;

  function fragment(html) {
    const doc = new DOMParser().parseFromString("<div>" + html + "</div>", "text/html");
    return Array.from(doc.body.firstChild.childNodes);
  }

  async function get(url) {
    const r = await fetch(url, { credentials: "same-origin" });
    if (!r.ok) throw new Error(url + ": " + r.status + " " + (await r.text()));
    return r.text();
  }

  // Lazy shadowed messages of a compaction card.
  document.addEventListener("toggle", async function (ev) {
    const d = ev.target;
    if (!(d instanceof HTMLDetailsElement) || !d.open || !d.classList.contains("shadowed") || d.dataset.loaded) return;
    d.dataset.loaded = "1";
    const slot = d.querySelector(".slot");
    try {
      slot.replaceChildren(...fragment(await get(d.dataset.src)));
    } catch (e) {
      slot.textContent = String(e);
    }
  }, true);

  if (page.dataset.page === "trajectory") trajectory();
  if (page.dataset.page === "request") request();

  // The trajectory: pages load as the reader scrolls, and new events of a
  // growing file are fetched as "everything after the last item this page
  // holds". One fetch runs at a time; live arrivals during a fetch are
  // coalesced into one fetch after it, whose start is computed only when
  // it starts, so no item is ever fetched or shown twice.
  function trajectory() {
    // The filter: a new page with the filter in its address.
    function refilter() {
      const q = new URLSearchParams();
      for (const [k, id] of [["kind", "f-kind"], ["role", "f-role"], ["q", "f-q"]]) {
        const v = document.getElementById(id).value;
        if (v) q.set(k, v);
      }
      const s = q.toString();
      location.assign(location.pathname + (s ? "?" + s : ""));
    }
    document.getElementById("f-kind").addEventListener("change", refilter);
    document.getElementById("f-role").addEventListener("change", refilter);
    document.getElementById("f-q").addEventListener("keydown", function (ev) {
      if (ev.key === "Enter") refilter();
    });

    const list = document.getElementById("items");
    const base = page.dataset.items;
    let have = -1; // the highest seq of an item on the page
    for (const el of list.querySelectorAll(":scope > [data-seq]")) have = Math.max(have, Number(el.dataset.seq));
    let busy = false;
    let nextPage = null; // the seq the next page starts at, when one is wanted
    let live = false; // the log grew since the last fetch started

    function append(nodes) {
      for (const n of nodes) {
        if (n.nodeType !== 1) continue;
        if (n.dataset.seq !== undefined) {
          const seq = Number(n.dataset.seq);
          if (seq <= have) continue; // already shown
          have = seq;
        }
        if (n.dataset.cid) {
          // A compaction card replaces its earlier (open) version.
          for (const old of list.querySelectorAll("[data-cid]")) {
            if (old.dataset.cid === n.dataset.cid) old.remove();
          }
        }
        list.appendChild(n);
      }
      watchMore();
    }

    function pump() {
      if (busy) return;
      let from;
      if (nextPage !== null) {
        from = Math.max(Number(nextPage), have + 1);
        nextPage = null;
      } else if (live) {
        live = false;
        // Paging picks new items up when pages are still to come.
        if (list.querySelector(":scope > .more")) return;
        from = have + 1;
      } else {
        return;
      }
      busy = true;
      get(base + "?from=" + from + (page.dataset.filter || "")).then(function (html) {
        append(fragment(html));
      }).catch(function (e) {
        console.error(e);
      }).finally(function () {
        busy = false;
        pump();
      });
    }

    const io = new IntersectionObserver(function (entries) {
      for (const en of entries) {
        if (!en.isIntersecting) continue;
        const more = en.target;
        io.unobserve(more);
        more.remove();
        nextPage = more.dataset.next;
        pump();
      }
    }, { rootMargin: "800px" });

    function watchMore() {
      const more = list.querySelector(":scope > .more");
      if (more) io.observe(more);
    }
    watchMore();

    // The counters follow the whole log: the server sends them once it has
    // read it (hello) and whenever it grows.
    function counters(data) {
      const c = JSON.parse(data);
      for (const k of ["events", "turns", "requests", "compactions"]) {
        const el = document.getElementById(k);
        if (el && c[k] !== undefined) el.textContent = String(c[k]);
      }
      const partial = document.getElementById("partial");
      if (partial) partial.remove();
    }

    const state = document.getElementById("live-state");
    const es = new EventSource(page.dataset.live);
    es.addEventListener("hello", function (ev) {
      state.textContent = "live";
      counters(ev.data);
      // What was written between the page's rendering and the stream's
      // start.
      live = true;
      pump();
    });
    es.addEventListener("grow", function (ev) {
      counters(ev.data);
      live = true;
      pump();
    });
    es.onerror = function () { state.textContent = "live: reconnecting"; };
  }

  function request() {
    const raw = document.getElementById("raw");
    const pretty = document.getElementById("pretty");
    const toggle = document.getElementById("toggle-raw");
    toggle.addEventListener("click", function () {
      const showRaw = raw.hidden;
      raw.hidden = !showRaw;
      pretty.hidden = showRaw;
      toggle.textContent = showRaw ? "show pretty" : "show raw";
    });
    const copy = document.getElementById("copy");
    const done = document.getElementById("copied");
    copy.addEventListener("click", async function () {
      try {
        // The exact bytes, fetched again: the page shows hidden characters
        // as <U+XXXX>.
        await navigator.clipboard.writeText(await get(copy.dataset.body));
        done.textContent = "copied";
      } catch (e) {
        const sel = window.getSelection();
        const r = document.createRange();
        r.selectNodeContents(raw.hidden ? pretty : raw);
        sel.removeAllRanges();
        sel.addRange(r);
        done.textContent = "selected: copy with Ctrl-C (" + e.message + ")";
      }
    });
  }
})();
