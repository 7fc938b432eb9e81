/* vLLM Recipes: our own small script. The pages work without it; it adds
   in-place builder updates, copy buttons, the Env panel, keyboard navigation
   and the header search. No framework, no inline code (strict CSP). */
(function () {
  "use strict";
  var PREFIX = "vllm-recipes:";
  var store = {
    get: function (k) { try { return window.localStorage.getItem(PREFIX + k); } catch (e) { return null; } },
    set: function (k, v) { try { if (v === null || v === "") { window.localStorage.removeItem(PREFIX + k); } else { window.localStorage.setItem(PREFIX + k, v); } } catch (e) { /* private mode */ } }
  };

  /* ---------- clipboard ---------- */
  function copyText(text, button) {
    function done(ok) {
      if (!button) { return; }
      var old = button.getAttribute("data-label") || button.textContent;
      button.setAttribute("data-label", old);
      button.textContent = ok ? "Copied" : "Copy failed";
      button.classList.toggle("done", ok);
      window.setTimeout(function () { button.textContent = old; button.classList.remove("done"); }, 1400);
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { done(true); }, function () { done(fallbackCopy(text)); });
    } else {
      done(fallbackCopy(text));
    }
  }
  function fallbackCopy(text) {
    var ta = document.createElement("textarea");
    ta.value = text; ta.setAttribute("readonly", ""); ta.className = "sr";
    document.body.appendChild(ta); ta.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    document.body.removeChild(ta);
    return ok;
  }

  /* ---------- Env panel: $NAME substitution ---------- */
  var originals = new WeakMap();
  function envValues() {
    var vals = {};
    document.querySelectorAll("input[data-env]").forEach(function (inp) {
      var v = inp.value;
      if (v !== "") { vals[inp.getAttribute("data-env")] = v; }
    });
    return vals;
  }
  function escapeRe(s) { return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); }
  /* one pass, longest name first, whole names only ($NAME or ${NAME}); values are never re-scanned */
  function substitute(text, vals) {
    var names = Object.keys(vals).sort(function (a, b) { return b.length - a.length; });
    if (!names.length) { return text; }
    var alt = names.map(escapeRe).join("|");
    var re = new RegExp("\\$(?:\\{(" + alt + ")\\}|(" + alt + ")(?![A-Za-z0-9_]))", "g");
    return text.replace(re, function (m, a, b) { return vals[a || b]; });
  }
  /* the CUDA 12.9 choice (NVIDIA, Docker): the docker run commands use the image the install block pulls */
  function cudaSwap(text) {
    var box = document.querySelector(".cuda[data-image]");
    var alt = document.getElementById("cuda-129");
    if (!box || !alt || !alt.checked) { return text; }
    var re = new RegExp(escapeRe(box.getAttribute("data-image")) + "(?![A-Za-z0-9_.:-])", "g");
    return text.replace(re, function () { return box.getAttribute("data-image-alt"); });
  }
  function applyEnv(root) {
    var vals = envValues();
    (root || document).querySelectorAll("code[data-subst]").forEach(function (el) {
      if (!originals.has(el)) { originals.set(el, el.textContent); }
      var text = originals.get(el);
      if (!el.closest(".install")) { text = cudaSwap(text); }
      el.textContent = substitute(text, vals);
    });
    /* Try-it snippets: the host and port spans take the Env values (the page ships localhost and the port) */
    (root || document).querySelectorAll("code.snippet").forEach(function (el) {
      [["data-host", "data-host-var"], ["data-port", "data-port-var"]].forEach(function (p) {
        el.querySelectorAll("[" + p[0] + "]").forEach(function (s) {
          if (!originals.has(s)) { originals.set(s, s.textContent); }
          s.textContent = vals[el.getAttribute(p[1])] || originals.get(s);
        });
      });
    });
  }
  function initCuda(root) {
    var alt = root.querySelector("#cuda-129");
    if (!alt) { return; }
    if (store.get("cuda") === "12.9") { alt.checked = true; }
    root.querySelectorAll("input[name=cuda]").forEach(function (inp) {
      inp.addEventListener("change", function () {
        store.set("cuda", alt.checked ? "12.9" : null);
        applyEnv(document);
      });
    });
  }
  function initEnv(root) {
    initCuda(root);
    root.querySelectorAll("[data-env-panel]").forEach(function (d) { d.hidden = false; });
    root.querySelectorAll("input[data-env]").forEach(function (inp) {
      var saved = store.get("env:" + inp.getAttribute("data-env"));
      if (saved !== null) { inp.value = saved; }
      inp.addEventListener("input", function () {
        store.set("env:" + inp.getAttribute("data-env"), inp.value);
        document.querySelectorAll("input[data-env=\"" + inp.getAttribute("data-env") + "\"]").forEach(function (o) {
          if (o !== inp) { o.value = inp.value; }
        });
        applyEnv(document);
      });
    });
    applyEnv(root);
  }

  /* ---------- copy buttons ---------- */
  function allBlocksText(tabs) {
    var parts = [];
    var panels = tabs.querySelectorAll(".panels > .panel");
    panels.forEach(function (p) {
      var code = p.querySelector(":scope > .code code");
      var text = code ? code.textContent : "";
      if (panels.length === 1) { parts.push(text); return; }
      var head = "# " + p.getAttribute("data-title");
      var desc = p.getAttribute("data-desc");
      if (desc) { head += "\n# " + desc.split("\n").join("\n# "); }
      parts.push(head + "\n" + text);
    });
    return parts.join("\n\n");
  }
  function initCopy(root) {
    root.querySelectorAll("[data-copy],[data-copy-all],[data-copy-text]").forEach(function (b) { b.hidden = false; });
  }
  document.addEventListener("click", function (ev) {
    var b = ev.target.closest("button[data-copy],button[data-copy-all],button[data-copy-text]");
    if (!b) { return; }
    ev.preventDefault();
    if (b.hasAttribute("data-copy")) {
      var code = b.parentNode.querySelector("code");
      copyText(code ? code.dataset.full || code.textContent : "", b);
    } else if (b.hasAttribute("data-copy-all")) {
      copyText(allBlocksText(b.closest("[data-deploy]")), b);
    } else {
      var alt = document.getElementById("cuda-129");
      var t = (alt && alt.checked && b.getAttribute("data-copy-alt")) || b.getAttribute("data-copy-text");
      copyText(substitute(t, envValues()), b);
    }
  });

  /* ---------- builder: in-place updates ---------- */
  function builderEl() { return document.getElementById("builder"); }
  function fragmentUrl(href) {
    var u = new URL(href, window.location.href);
    return u.pathname + "/builder" + u.search;
  }
  var loadSeq = 0;
  function load(href, mode, focusKey, after) {
    var b = builderEl();
    if (!b) { window.location.href = href; return; }
    var seq = ++loadSeq;
    var settled = false;
    window.setTimeout(function () { if (!settled && seq === loadSeq) { b.classList.add("is-loading"); } }, 60);
    getFragment(href)
      .then(function (html) {
        settled = true;
        if (seq !== loadSeq) { return; }
        var tpl = document.createElement("template");
        tpl.innerHTML = html;
        var fresh = tpl.content.firstElementChild;
        if (!fresh || fresh.id !== "builder") { throw new Error("bad fragment"); }
        builderEl().replaceWith(fresh);
        var url = fresh.getAttribute("data-url") || href;
        if (mode === "push") { history.pushState({ builder: true }, "", url); }
        else if (mode === "replace") { history.replaceState({ builder: true }, "", url); }
        remember(fresh);
        initBuilder(fresh);
        if (after) { after(fresh); }
        if (focusKey) {
          var el = fresh.querySelector("[data-key=\"" + focusKey + "\"]");
          if (el) { el.focus({ preventScroll: true }); }
        }
        schedulePrefetch();
      })
      .catch(function () { settled = true; if (seq === loadSeq) { window.location.href = href; } });
  }

  /* ---------- instant clicks: fragments prefetched on hover/focus/idle (up to 6 hardware/strategy
     pills, paused while the user points), swapped from memory; the latest click wins ---------- */
  var fragments = new Map();
  var FRAGMENT_LIMIT = 48;
  var IDLE_PREFETCH = 6;
  function getFragment(href) {
    var url = fragmentUrl(href);
    var hit = fragments.get(url);
    if (hit) { fragments.delete(url); fragments.set(url, hit); return hit; }
    var p = fetch(url, { headers: { "Accept": "text/html" } })
      .then(function (r) { if (!r.ok && r.status !== 422) { throw new Error("HTTP " + r.status); } return r.text(); })
      .then(function (t) { return t.trim(); });
    p.catch(function () { if (fragments.get(url) === p) { fragments.delete(url); } });
    fragments.set(url, p);
    while (fragments.size > FRAGMENT_LIMIT) { fragments.delete(fragments.keys().next().value); }
    return p;
  }
  function prefetchAllowed() {
    if (store.get("prefetch") === "off") { return false; }
    var c = navigator.connection;
    return !(c && c.saveData);
  }
  var lastPointed = 0;
  function prefetchLink(a) {
    if (!a || !prefetchAllowed() || a.classList.contains("is-active")) { return; }
    lastPointed = Date.now();
    getFragment(a.getAttribute("href"));
  }
  function navTarget(ev) { return ev.target.closest && ev.target.closest("#builder a[data-nav]"); }
  document.addEventListener("mouseover", function (ev) { prefetchLink(navTarget(ev)); });
  document.addEventListener("focusin", function (ev) { prefetchLink(navTarget(ev)); });
  document.addEventListener("touchstart", function (ev) { prefetchLink(navTarget(ev)); }, { passive: true });
  var idle = window.requestIdleCallback || function (fn) { return window.setTimeout(fn, 200); };
  function schedulePrefetch() {
    if (!prefetchAllowed()) { return; }
    var b = builderEl();
    if (!b) { return; }
    var links = Array.prototype.slice.call(b.querySelectorAll(
      "[data-row=hardware] > a.pill[data-nav]:not(.is-active), [data-row=strategy] > a.pill[data-nav]:not(.is-active)"))
      .slice(0, IDLE_PREFETCH);
    var seq = loadSeq;
    function next() {
      if (!links.length || seq !== loadSeq) { return; }
      if (Date.now() - lastPointed < 400) { window.setTimeout(next, 200); return; }
      var a = links.shift();
      idle(function () { getFragment(a.getAttribute("href")).then(next, next); });
    }
    next();
  }
  function remember(b) {
    var recipe = b.getAttribute("data-recipe");
    var url = new URL(b.getAttribute("data-url") || "", window.location.href);
    var params = new URLSearchParams(url.search);
    params.delete("lang");
    if (recipe) { store.set("q:" + recipe, params.toString()); }
  }
  document.addEventListener("click", function (ev) {
    var a = ev.target.closest("#builder a[data-nav]");
    if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) { return; }
    ev.preventDefault();
    var key = a.getAttribute("data-key") || "";
    if (key.indexOf("hardware:") === 0) { store.set("hw", key.slice(9)); }  /* any brand; only NVIDIA is restored */
    load(a.getAttribute("href"), "push", key, a.closest(".cmd, #fit") ? null : revealCommand);
  });
  /* after a pill of the rows changed it, the command is brought into view when it is off screen
     (on a phone it sits above the rows, on a laptop the reader may have scrolled past it) */
  function revealCommand(root) {
    var head = root.querySelector(".cmd .cmd-head");
    var code = root.querySelector(".cmd .panel .code");
    if (!head || !code) { return; }
    var top = head.getBoundingClientRect().top;
    var floor = parseFloat(window.getComputedStyle(head).scrollMarginTop) || 0;
    if (top >= floor && code.getBoundingClientRect().top < window.innerHeight * 0.6) { return; }
    head.scrollIntoView({ block: "start" });
  }
  /* the address bar shows the canonical URL of what the page shows (bad or oddly cased parameters
     were dropped or normalised by the server, which says so in a notice) */
  function canonicalUrl() {
    var b = builderEl();
    var want = b && b.getAttribute("data-url");
    if (want && want !== window.location.pathname + window.location.search) {
      history.replaceState(history.state, "", want + window.location.hash);
    }
  }
  window.addEventListener("popstate", function () {
    if (builderEl()) { load(window.location.href, null, null); }
  });

  /* keyboard: arrow keys move between the pills of a row */
  document.addEventListener("keydown", function (ev) {
    var pill = ev.target.closest && ev.target.closest(".pills a.pill, .pills span.pill");
    if (!pill) { return; }
    var keys = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1, Home: "first", End: "last" };
    if (!(ev.key in keys)) {
      if (ev.key === " " && pill.tagName === "A") { ev.preventDefault(); pill.click(); }
      return;
    }
    var row = pill.closest(".row-body") || pill.closest(".pills");
    var items = Array.prototype.slice.call(row.querySelectorAll(":scope > .pills > a.pill"));
    if (!items.length) { items = Array.prototype.slice.call(pill.closest(".pills").querySelectorAll("a.pill")); }
    var i = items.indexOf(pill);
    var k = keys[ev.key];
    var next = k === "first" ? items[0] : k === "last" ? items[items.length - 1] : items[(i + k + items.length) % items.length];
    if (next) { ev.preventDefault(); next.focus(); }
  });

  /* ---------- Deploy tabs ---------- */
  function showExport(p) {
    var c = p && p.querySelector("code");
    if (!c || c.dataset.l) { return; }
    c.dataset.l = "1";
    fetch(p.querySelector("a").href).then(function (r) {
      return r.text().then(function (t) {
        if (r.ok) { showFile(c, t); return; }
        var j = JSON.parse(t);
        p.firstElementChild.textContent = j.page || j.error;  /* the page's words (web/wording.py) */
        p.firstElementChild.className = "note refusal";
      });
    }).catch(function () { delete c.dataset.l; });
  }
  /* a long file shows its first lines and a button for the rest (the page never scrolls inside a box);
     Copy always copies the whole file */
  var FOLD = 40;
  function showFile(c, t) {
    var lines = t.split("\n");
    c.textContent = lines.length > FOLD + 10 ? lines.slice(0, FOLD).join("\n") : t;
    c.closest(".code").hidden = false;
    if (lines.length <= FOLD + 10) { return; }
    c.dataset.full = t;
    var more = el("button", "btn more", "Show all " + lines.length + " lines");
    more.type = "button";
    more.addEventListener("click", function () { c.textContent = t; more.remove(); });
    c.closest(".code").after(more);
  }
  function initDeployTargets(root) {
    var box = root.querySelector("[data-deploy-targets]");
    if (!box) { return; }
    var pick = document.getElementById("dt-" + store.get("deploy-target"));
    if (pick) { pick.checked = true; }
    function cur() { return box.querySelector("[data-target=\"" + box.querySelector(":checked").id.slice(3) + "\"]"); }
    box.addEventListener("change", function (e) { store.set("deploy-target", e.target.id.slice(3)); showExport(cur()); });
    showExport(cur());
  }

  function initBuilder(root) {
    initCopy(root);
    initEnv(root);
    initDeployTargets(root);
  }

  /* ---------- restore remembered choices on a plain recipe URL (the URL always wins), and say so ---------- */
  function restore() {
    var b = builderEl();
    if (!b) { return false; }
    var here = new URLSearchParams(window.location.search);
    var lang = here.get("lang");
    here.delete("lang");
    if (here.toString() !== "") { remember(b); return false; }
    var path = window.location.pathname;
    var target = null;
    var what = null;
    var saved = store.get("q:" + b.getAttribute("data-recipe"));
    if (saved) {
      var p = new URLSearchParams(saved);
      if (lang) { p.set("lang", lang); }
      target = path + "?" + p.toString();
      what = "your last selection for this recipe";
    } else {
      var hw = store.get("hw");
      var a = hw ? b.querySelector(".pills[data-brand=\"NVIDIA\"] > a[data-key=\"hardware:" + hw + "\"]") : null;
      if (a && !a.classList.contains("is-active")) {
        target = a.getAttribute("href");
        var label = a.querySelector(".pl");
        what = "your hardware choice (" + (label ? label.textContent : hw) + ")";
      }
    }
    if (!target) { return false; }
    var recommended = b.getAttribute("data-url");
    var resetHref = path + (lang ? "?lang=" + encodeURIComponent(lang) : "");
    load(target, "replace", null, function (fresh) {
      if (fresh.getAttribute("data-url") !== recommended) { showRestored(fresh, what, resetHref); }
    });
    return true;
  }
  function showRestored(root, what, resetHref) {
    var bar = el("div", "notices restored");
    bar.setAttribute("role", "status");
    bar.appendChild(el("span", "", "Restored " + what + " from this browser."));
    var reset = el("a", "btn", "Reset to recommended");
    reset.href = resetHref;
    reset.setAttribute("data-reset", "");
    bar.appendChild(reset);
    root.insertBefore(bar, root.firstChild);
  }
  document.addEventListener("click", function (ev) {
    var a = ev.target.closest && ev.target.closest("#builder a[data-reset]");
    if (!a || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) { return; }
    ev.preventDefault();
    var b = builderEl();
    store.set("q:" + b.getAttribute("data-recipe"), null);
    store.set("hw", null);
    load(a.getAttribute("href"), "replace", null);
  });

  /* ---------- header search ---------- */
  var index = null;
  var indexPromise = null;
  function norm(s) { return String(s).toLowerCase().replace(/[-_.]/g, ""); }
  function getIndex() {
    if (!indexPromise) {
      indexPromise = fetch("/api/search.json").then(function (r) { return r.json(); }).then(function (j) { index = j; return j; });
    }
    return indexPromise;
  }
  function matches(n, words) { for (var i = 0; i < words.length; i++) { if (n.indexOf(words[i]) < 0) { return false; } } return true; }
  function el(tag, cls, text) { var e = document.createElement(tag); if (cls) { e.className = cls; } if (text) { e.textContent = text; } return e; }
  function renderResults(box, q) {
    var words = q.split(/\s+/).map(norm).filter(Boolean);
    box.textContent = "";
    if (!words.length || !index) { box.hidden = true; return; }
    var provs = index.providers.filter(function (p) { return matches(p.n, words); }).slice(0, 3);
    var recs = index.recipes.filter(function (r) { return matches(r.n, words); }).slice(0, 6);
    if (provs.length) {
      box.appendChild(el("div", "sh", "Providers"));
      provs.forEach(function (p) { var a = el("a", "", p.name); a.href = p.url; a.setAttribute("role", "option"); a.appendChild(el("small", "", p.count + " recipes")); box.appendChild(a); });
    }
    if (recs.length) {
      box.appendChild(el("div", "sh", "Recipes"));
      recs.forEach(function (r) { var a = el("a", "", r.title); a.href = r.url; a.setAttribute("role", "option"); a.appendChild(el("small", "", r.provider + (r.params ? " · " + r.params : ""))); box.appendChild(a); });
    }
    if (!provs.length && !recs.length) { box.appendChild(el("div", "empty", "No match.")); }
    var all = el("a", "", "See all results in Browse →");
    all.href = "/browse?q=" + encodeURIComponent(q.trim());
    all.setAttribute("role", "option");
    box.appendChild(all);
    box.hidden = false;
  }
  function initSearch() {
    var form = document.querySelector("form[data-search]");
    if (!form) { return; }
    var input = form.querySelector("input[name=q]");
    var box = form.querySelector(".search-results");
    function update() {
      getIndex().then(function () { renderResults(box, input.value); input.setAttribute("aria-expanded", box.hidden ? "false" : "true"); });
    }
    input.addEventListener("focus", function () { getIndex(); });
    input.addEventListener("input", update);
    input.addEventListener("keydown", function (ev) {
      var links = Array.prototype.slice.call(box.querySelectorAll("a"));
      var cur = box.querySelector("a.is-sel");
      var i = links.indexOf(cur);
      if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
        ev.preventDefault();
        if (!links.length) { return; }
        if (cur) { cur.classList.remove("is-sel"); }
        i = ev.key === "ArrowDown" ? (i + 1) % links.length : (i <= 0 ? links.length - 1 : i - 1);
        links[i].classList.add("is-sel");
      } else if (ev.key === "Enter" && cur) {
        ev.preventDefault(); window.location.href = cur.href;
      } else if (ev.key === "Escape") {
        box.hidden = true; input.blur();
      }
    });
    document.addEventListener("click", function (ev) { if (!form.contains(ev.target)) { box.hidden = true; } });
    document.addEventListener("keydown", function (ev) {
      var t = ev.target;
      var typing = t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.isContentEditable);
      if ((ev.key === "/" && !typing) || ((ev.key === "k" || ev.key === "K") && (ev.metaKey || ev.ctrlKey))) {
        ev.preventDefault(); input.focus(); input.select();
      }
    });
  }

  /* a "#" link beside each guide heading (the ids come with the page; the links are a convenience) */
  function initAnchors() {
    document.querySelectorAll(".md h1[id], .md h2[id], .md h3[id], .md h4[id]").forEach(function (h) {
      var a = el("a", "header-anchor", "#");
      a.href = "#" + h.id;
      h.appendChild(document.createTextNode(" "));
      h.appendChild(a);
    });
  }

  function init() {
    initAnchors();
    initSearch();
    initCopy(document);
    initEnv(document);
    initDeployTargets(document);
    if (!restore()) { canonicalUrl(); schedulePrefetch(); }
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", init); } else { init(); }
}());

/* ---------- recipe authoring (edit / report links): the report link follows the builder ---------- */
(function () {
  "use strict";
  var MAX_COMMAND = 3000;
  function currentCommand(builder) {
    var codes = builder ? builder.querySelectorAll(".cmd code.cmd-text:not(.snippet)") : [];
    var text = Array.prototype.map.call(codes, function (c) { return c.textContent; }).join("\n\n");
    return text.length > MAX_COMMAND ? text.slice(0, MAX_COMMAND) + "\n# … (cut; see the page)" : text;
  }
  function issueHref(a) {
    var builder = document.getElementById("builder");
    var path = builder ? builder.getAttribute("data-url") : location.pathname + location.search;
    var page = location.origin + path;
    var command = currentCommand(builder);
    var body = "Recipe: " + a.getAttribute("data-recipe") + " (" + a.getAttribute("data-file") + ")\n" +
      "Selection: " + page + (command ? "\n\nCommand:\n\n```sh\n" + command + "\n```" : "") + "\n\nWhat went wrong:\n";
    return a.getAttribute("data-issue-base") + "?" +
      encodeURIComponent(a.getAttribute("data-title-param")) + "=" + encodeURIComponent(a.getAttribute("data-issue-title")) +
      "&" + encodeURIComponent(a.getAttribute("data-body-param")) + "=" + encodeURIComponent(body);
  }
  function refresh(ev) {
    var a = ev.target && ev.target.closest ? ev.target.closest("a[data-report-issue]") : null;
    if (a) { a.href = issueHref(a); }
  }
  // capture phase: the href is current before the browser follows it (click, middle click, keyboard)
  document.addEventListener("click", refresh, true);
  document.addEventListener("auxclick", refresh, true);
  document.addEventListener("contextmenu", refresh, true);
}());
