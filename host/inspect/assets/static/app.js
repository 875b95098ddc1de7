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

  function trajectory() {
    const list = document.getElementById("items");
    const base = page.dataset.items;
    let chain = Promise.resolve();

    function lastSeq() {
      let last = -1;
      for (const el of list.querySelectorAll(":scope > [data-seq]")) {
        last = Math.max(last, Number(el.dataset.seq));
      }
      return last;
    }

    function append(nodes) {
      for (const n of nodes) {
        if (n.nodeType === 1 && n.dataset.cid) {
          // A compaction card replaces its earlier (open) version.
          for (const old of list.querySelectorAll("[data-cid]")) {
            if (old.dataset.cid === n.dataset.cid) old.remove();
          }
        }
        list.appendChild(n);
      }
      watchMore();
    }

    function load(from) {
      chain = chain.then(async function () {
        append(fragment(await get(base + "?from=" + from)));
      }).catch(function (e) {
        console.error(e);
      });
      return chain;
    }

    const io = new IntersectionObserver(function (entries) {
      for (const en of entries) {
        if (!en.isIntersecting) continue;
        const more = en.target;
        io.unobserve(more);
        more.remove();
        load(more.dataset.next);
      }
    }, { rootMargin: "800px" });

    function watchMore() {
      const more = list.querySelector(":scope > .more");
      if (more) io.observe(more);
    }
    watchMore();

    const state = document.getElementById("live-state");
    const es = new EventSource(page.dataset.live);
    es.addEventListener("hello", function (ev) {
      state.textContent = "live";
      document.getElementById("events").textContent = String(JSON.parse(ev.data).events);
    });
    es.addEventListener("grow", function (ev) {
      const n = JSON.parse(ev.data).events;
      document.getElementById("events").textContent = String(n);
      // Paging picks new items up when pages are still to come.
      if (list.querySelector(":scope > .more")) return;
      load(lastSeq() + 1);
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
