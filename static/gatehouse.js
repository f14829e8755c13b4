// Gatehouse console: small behaviours around htmx. No framework, no build step.
(function () {
  "use strict";

  var arrived = []; // ids of cards pushed since the last socket message was handled
  function batchInFlight() {
    var form = document.getElementById("batch-form");
    return Boolean(form && form.classList.contains("htmx-request"));
  }
  function $all(root, selector) { return Array.prototype.slice.call((root || document).querySelectorAll(selector)); }

  // 1. Pushed rows are upserts: a card, row or timeline entry already on the page (the
  //    page's own catch-up fetch may have shown it first) is kept, the duplicate dropped.
  // 2. A "delete" push for a card whose decision is in flight (its own form, or a batch it is
  //    selected in) waits for our own response, which replaces the card with its outcome.
  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var detail = event.detail;
    var target = detail.target;
    // (Our own batch answer replaces the cards it decided by id: a fragment, never held back.)
    var ownReplacement = detail.fragment && detail.fragment.nodeType === Node.DOCUMENT_FRAGMENT_NODE;
    if (!ownReplacement && target && target.classList && target.classList.contains("approval-pending") &&
        (target.querySelector(".htmx-request") || (batchInFlight() && target.querySelector(".batch-pick:checked")))) {
      detail.shouldSwap = false;
      return;
    }
    var fragment = detail.fragment;
    if (!fragment || fragment.nodeType !== Node.ELEMENT_NODE) return; // outerHTML swap
    Array.prototype.slice.call(fragment.children).forEach(function (child) {
      if (child.id && document.getElementById(child.id)) child.remove();
      else if (target && target.id === "approvals" && child.classList && child.classList.contains("approval-pending")) {
        arrived.push(child.id); // a new request pushed over the socket: placed and announced after the swap
      }
    });
  });

  // 3. The cards' catch-up re-fetch (when the socket opens or reopens) merges instead of
  //    replacing: a card decided here keeps its outcome, a card whose decision is in flight
  //    is left alone, and a pending card whose decided version is on the page stays decided.
  function cardKey(card) { return card.id ? card.id.replace(/-done$/, "") : ""; }
  document.addEventListener("htmx:beforeSwap", function (event) {
    var detail = event.detail;
    var target = detail.target;
    if (!target || target.id !== "approvals" || detail.requestConfig.verb !== "get" || !detail.xhr ||
        detail.xhr.status !== 200) return;
    var keep = {};
    Array.prototype.slice.call(target.children).forEach(function (card) {
      if (card.classList.contains("approval-done") || card.querySelector(".htmx-request")) keep[cardKey(card)] = card;
    });
    var incoming = document.createElement("div");
    incoming.innerHTML = detail.serverResponse;
    var merged = [];
    Array.prototype.slice.call(incoming.children).forEach(function (card) {
      var key = cardKey(card);
      if (keep[key]) { merged.push(keep[key]); delete keep[key]; } else { merged.push(card); }
    });
    Object.keys(keep).forEach(function (key) { merged.push(keep[key]); });
    var before = {};
    Array.prototype.slice.call(target.children).forEach(function (card) { before[cardKey(card)] = true; });
    caughtUp += merged.filter(function (card) { return !before[cardKey(card)]; }).length;
    detail.shouldSwap = false;
    target.replaceChildren.apply(target, merged);
    if (window.htmx) window.htmx.process(target);
    lockOwnRuns(target);
    updateSelection();
  });

  // 3b. The run page's timeline catches up with what came after its last row (?after=SEQ),
  //     appended; a row already shown (pushed meanwhile) is not added twice.
  function lastSeq(list) {
    var seqs = $all(list, "li[data-seq]").map(function (li) { return parseInt(li.dataset.seq, 10) || 0; });
    return seqs.length ? Math.max.apply(null, seqs) : 0;
  }
  document.addEventListener("htmx:configRequest", function (event) {
    var elt = event.detail.elt;
    if (elt && elt.id === "timeline" && elt.dataset.catchUp === "after") event.detail.parameters.after = lastSeq(elt);
  });
  document.addEventListener("htmx:beforeSwap", function (event) {
    var detail = event.detail;
    if (!detail.target || detail.target.id !== "timeline" || !detail.xhr || detail.xhr.status !== 200) return;
    var incoming = document.createElement("template");
    incoming.innerHTML = detail.serverResponse;
    $all(incoming.content, "li[id]").forEach(function (li) {
      if (document.getElementById(li.id)) li.remove(); else if (detail.requestConfig.elt === detail.target) caughtUp += 1;
    });
    detail.serverResponse = incoming.innerHTML;
  });

  // 3c. The timeline stays in the run's order (each row's data-seq): the rows of one change
  //     are separate messages on the channel layer, and with Redis two of them can arrive in
  //     either order; a row that arrives early is put back after the one before it.
  function seqOf(li) { return parseInt(li.dataset.seq, 10) || 0; }
  function orderTimeline(list) {
    var rows = $all(list, ":scope > li[data-seq]");
    var ordered = true;
    for (var i = 1; i < rows.length && ordered; i++) ordered = seqOf(rows[i - 1]) <= seqOf(rows[i]);
    if (ordered) return;
    rows.sort(function (a, b) { return seqOf(a) - seqOf(b); }); // (stable: equal seqs keep their order)
    rows.forEach(function (li) { list.appendChild(li); });
  }
  function timelineSwapped(event) {
    var target = event.detail && event.detail.target;
    if (target && target.id === "timeline") orderTimeline(target);
  }
  document.addEventListener("htmx:oobAfterSwap", timelineSwapped);
  document.addEventListener("htmx:afterSwap", timelineSwapped);

  // Live indicator: the dot next to a heading says whether pushes are arriving.
  function setLive(state) {
    document.querySelectorAll("[data-live-status]").forEach(function (el) {
      el.dataset.liveStatus = state;
      el.title = state === "live" ? "Live: updates arrive as they happen" : "Offline: reconnecting…";
        el.setAttribute("role", "img");
      el.setAttribute("aria-label", el.title);
    });
  }
  // The banner says when the live connection is lost, and when it is back with what it missed
  // (every list re-reads the database on reconnect and merges; see 3 and 3b).
  var wasLost = false;
  var caughtUp = 0;
  var bannerTimer = null;
  function banner(text, state) {
    var box = document.getElementById("live-banner");
    if (!box) return;
    window.clearTimeout(bannerTimer);
    box.textContent = text;
    box.dataset.state = state || "";
    box.hidden = !text;
    if (state === "back") bannerTimer = window.setTimeout(function () { box.hidden = true; }, 6000);
  }
  document.addEventListener("htmx:wsOpen", function () {
    setLive("live");
    if (!wasLost) return;
    wasLost = false;
    caughtUp = 0;
    banner("Back online: catching up…", "back");
    window.setTimeout(function () {
      banner("Back online. " + (caughtUp ? caughtUp + " missed update" + (caughtUp === 1 ? "" : "s") + " merged." : "Nothing was missed."), "back");
    }, 1500);
  });
  function lost() {
    setLive("offline");
    if (!wasLost) banner("Live updates lost: reconnecting…", "lost");
    wasLost = true;
  }
  document.addEventListener("htmx:wsClose", lost);
  document.addEventListener("htmx:wsError", lost);

  // Ctrl/Cmd+Enter sends a multi-line reason (Enter alone is a new line there).
  document.addEventListener("keydown", function (event) {
    var el = event.target;
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && el.matches &&
        el.matches("textarea[data-submit-on-ctrl-enter]") && el.form) {
      event.preventDefault();
      el.form.requestSubmit();
    }
  });

  // A refused htmx request (403, 500, offline) says so instead of doing nothing.
  function flash(text) {
    var box = document.getElementById("flash");
    if (!box) return;
    var p = document.createElement("p");
    p.className = "alert error";
    p.setAttribute("role", "alert");
    p.textContent = text;
    box.replaceChildren(p);
  }
  document.addEventListener("htmx:responseError", function (event) {
    var status = event.detail.xhr.status;
    if (status === 403) flash("You are not allowed to do that (403). Ask an administrator for the “Can change approval” permission.");
    else flash("The server refused the request (" + status + "). Reload the page and try again.");
  });
  document.addEventListener("htmx:sendError", function () {
    flash("The server cannot be reached. Your decision was not sent.");
  });

  // After a decision, keyboard focus moves on to the next waiting card's heading (the
  // swapped-out form took the focus with it) — never onto its Approve button, so a repeated
  // Enter approves nothing nobody read. With no card left, to the decided card's heading.
  // Only after the reviewer's own decision, never on a push.
  var decidedCard = null;
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail.elt;
    var card = elt && elt.closest ? elt.closest(".approval-pending") : null;
    decidedCard = card ? card.id : null;
  });
  document.addEventListener("htmx:afterSettle", function () {
    if (!decidedCard) return;
    var done = document.getElementById(decidedCard + "-done");
    decidedCard = null;
    var active = document.activeElement;
    // (htmx gives the focus back to an element with the same id: the decided card's heading.)
    if (!done || (active && active !== document.body && !done.contains(active))) return;
    var next = done.nextElementSibling;
    while (next && !next.classList.contains("approval-pending")) next = next.nextElementSibling;
    var target = next || document.querySelector("#approvals .approval-pending") || done;
    var heading = target.querySelector(".card-title");
    if (heading) heading.focus({ preventScroll: true });
  });

  // Four eyes (GATEHOUSE_REVIEW_OWN_RUNS off): a card pushed over the socket is the same
  // for every reviewer, so it names the run's starter and the starter's page greys it out
  // here, as the server does for the cards it renders (the service refuses either way).
  function lockOwnRuns(root) {
    var me = document.body.dataset.userId;
    if (!me || !root || !root.querySelectorAll) return;
    var cards = Array.prototype.slice.call(root.querySelectorAll("[data-starter]"));
    if (root.matches && root.matches("[data-starter]")) cards.push(root);
    cards.forEach(function (card) {
      if (card.dataset.starter !== me) return;
      card.querySelectorAll("fieldset.controls, .batch-pick").forEach(function (set) { set.disabled = true; set.checked = false; });
      var note = card.querySelector(".own-run-note");
      if (note) note.hidden = false;
    });
    // Who may not decide at all (a run starter following their own run's requests): every
    // pushed card's controls are disabled, as the server does for the cards it renders.
    if (document.body.dataset.mayDecide === "0") {
      var all = Array.prototype.slice.call(root.querySelectorAll(".approval-pending"));
      if (root.matches && root.matches(".approval-pending")) all.push(root);
      all.forEach(function (card) {
        card.querySelectorAll("fieldset.controls, .batch-pick").forEach(function (set) { set.disabled = true; set.checked = false; });
        var note = card.querySelector(".no-decide-note");
        if (note) note.hidden = false;
      });
    }
  }
  document.addEventListener("htmx:load", function (event) { lockOwnRuns(event.detail.elt); });
  lockOwnRuns(document);

  // --- Deadlines: a countdown from the server's time, urgent in the last minute ---------------
  var serverNow = Date.parse(document.body.dataset.serverNow || "");
  var skew = isNaN(serverNow) ? 0 : serverNow - Date.now(); // server clock minus this browser's
  function pad(n) { return n < 10 ? "0" + n : String(n); }
  function left(seconds) {
    var h = Math.floor(seconds / 3600), m = Math.floor((seconds % 3600) / 60), s = seconds % 60;
    if (h >= 48) return Math.floor(h / 24) + " days";
    return h ? h + ":" + pad(m) + ":" + pad(s) : m + ":" + pad(s);
  }
  function tick() {
    var now = Date.now() + skew;
    $all(document, ".deadline[data-deadline]").forEach(function (el) {
      var remaining = Math.max(0, Math.ceil((Date.parse(el.dataset.deadline) - now) / 1000));
      var counter = el.querySelector(".countdown");
      if (counter) counter.textContent = left(remaining);
      el.classList.toggle("urgent", remaining < 60);
      el.classList.toggle("passed", remaining === 0);
    });
  }
  tick();
  window.setInterval(tick, 1000);

  // --- Pushed cards: in the list's order, counted in the title, announced if asked -----------
  function sortKey(card, sort) {
    var id = parseInt(card.dataset.id, 10) || 0;
    if (sort === "newest") return [-id];
    if (sort === "oldest") return [id];
    var deadline = parseInt(card.dataset.sortDeadline, 10);
    return [isNaN(deadline) ? Infinity : deadline, id];
  }
  function before(a, b) { return a[0] < b[0] || (a[0] === b[0] && (a[1] || 0) < (b[1] || 0)); }
  function place(card) {
    var list = card.parentElement;
    if (!list || list.id !== "approvals") return;
    var sort = list.dataset.sort || "oldest";
    var key = sortKey(card, sort);
    var others = Array.prototype.slice.call(list.children).filter(function (c) { return c !== card && c.dataset.id; });
    var next = others.find(function (other) { return before(key, sortKey(other, sort)); });
    if (next) list.insertBefore(card, next); else list.appendChild(card);
  }
  var baseTitle = document.title;
  function showCount() {
    var count = document.getElementById("pending-count");
    if (!count) return;
    var n = parseInt(count.dataset.count, 10) || 0;
    document.title = (n ? "(" + n + ") " : "") + baseTitle;
  }
  showCount();
  document.addEventListener("htmx:wsAfterMessage", function () {
    var cards = arrived.map(function (id) { return document.getElementById(id); }).filter(Boolean);
    arrived = [];
    cards.forEach(function (card) { place(card); notify(card); });
    showCount();
  });

  // Browser notifications (opt-in): a new request while this tab is in the background.
  var NOTIFY_KEY = "gatehouse.notify";
  function notifying() {
    return "Notification" in window && Notification.permission === "granted" && localStorage.getItem(NOTIFY_KEY) === "1";
  }
  function notify(card) {
    if (!notifying() || (document.visibilityState === "visible" && document.hasFocus())) return;
    var title = card.querySelector(".card-title");
    var asker = card.querySelector(".agent-name");
    var note = new Notification("Gatehouse: a request waits for you", {
      body: (asker ? asker.textContent.trim() + ": " : "") + (title ? title.textContent.trim() : ""),
      tag: card.id,
    });
    note.onclick = function () { window.focus(); var h = card.querySelector(".card-title"); if (h) h.focus(); note.close(); };
  }
  var toggle = document.getElementById("notify-toggle");
  function showToggle() {
    if (!toggle) return;
    toggle.hidden = !("Notification" in window);
    toggle.setAttribute("aria-pressed", notifying() ? "true" : "false");
    toggle.textContent = notifying() ? "Notifications on" : "Notify me of new requests";
  }
  if (toggle) {
    toggle.addEventListener("click", function () {
      if (notifying()) { localStorage.removeItem(NOTIFY_KEY); showToggle(); return; }
      Notification.requestPermission().then(function (permission) {
        if (permission === "granted") localStorage.setItem(NOTIFY_KEY, "1");
        else flash("The browser did not allow notifications for this site.");
        showToggle();
      });
    });
    showToggle();
  }

  // --- Batch decisions: the selected cards, each decided once with its own hash ---------------
  function updateSelection() {
    var picked = $all(document, ".batch-pick:checked:not(:disabled)");
    var count = document.getElementById("batch-selected");
    if (count) count.textContent = String(picked.length);
    document.body.classList.toggle("has-selection", picked.length > 0);
  }
  document.addEventListener("change", function (event) {
    if (event.target.classList && event.target.classList.contains("batch-pick")) updateSelection();
  });
  document.addEventListener("click", function (event) {
    var clear = event.target.closest && event.target.closest("[data-batch-clear]");
    if (!clear) return;
    $all(document, ".batch-pick:checked").forEach(function (box) { box.checked = false; });
    updateSelection();
  });
  document.addEventListener("htmx:afterSettle", function (event) {
    if (!event.detail.target || event.detail.target.id !== "batch-status") return;
    updateSelection();
    var next = document.querySelector("#approvals .approval-pending .card-title");
    var status = document.querySelector("#batch-status [role=status], #batch-status [role=alert]");
    if (status) { status.setAttribute("tabindex", "-1"); status.focus({ preventScroll: false }); }
    else if (next) next.focus();
  });
  updateSelection();

  // --- Keyboard: j/k move, a approves, d deny reason, s session grant, x select, o open, ? keys.
  // Never when typing in a field; focus lands on a card's heading, never on Approve.
  function cards() { return $all(document, "#approvals .approval-pending"); }
  var current = null;
  function currentCard() {
    var active = document.activeElement;
    var card = active && active.closest ? active.closest("#approvals .approval-pending") : null;
    if (card) return card;
    if (current && document.body.contains(current) && current.classList.contains("approval-pending")) return current;
    return null;
  }
  function focusCard(card) {
    if (!card) return;
    current = card;
    var heading = card.querySelector(".card-title");
    if (heading) { heading.focus({ preventScroll: true }); card.scrollIntoView({ block: "nearest" }); }
  }
  function move(step) {
    var list = cards();
    if (!list.length) return;
    var at = list.indexOf(currentCard());
    focusCard(list[at < 0 ? (step > 0 ? 0 : list.length - 1) : Math.min(list.length - 1, Math.max(0, at + step))]);
  }
  function ownRunSaid(card) {
    var note = card.querySelector(".own-run-note");
    flash(note && !note.hidden ? note.textContent.trim() : "You cannot decide this request.");
  }
  var KEYS = {
    j: function () { move(1); },
    k: function () { move(-1); },
    a: function (card) {
      var button = card.querySelector("form.decide button[name=scope][value=once], form.decide button[name=mode][value=default]");
      if (!button) { flash("Answer a question in its form."); var first = card.querySelector("form.answer input"); if (first) first.focus(); return; }
      if (button.matches(":disabled")) { ownRunSaid(card); return; }
      current = card;
      button.form.requestSubmit(button);
    },
    d: function (card) {
      var reason = card.querySelector("form.deny [name=reason]");
      if (!reason) return;
      if (reason.matches(":disabled")) { ownRunSaid(card); return; }
      reason.focus();
    },
    s: function (card) {
      var grant = card.querySelector("form.decide button[name=scope][value=session]");
      if (!grant) { flash("No “always allow” is offered for this request."); return; }
      if (grant.matches(":disabled")) { ownRunSaid(card); return; }
      grant.focus();
    },
    x: function (card) {
      var box = card.querySelector(".batch-pick");
      if (!box || box.disabled || !document.getElementById("batch-form")) return;
      box.checked = !box.checked;
      updateSelection();
    },
    o: function (card) { var link = card.querySelector("a.run-link"); if (link) window.location.assign(link.href); },
  };
  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    var el = event.target;
    if (el && el.closest && el.closest("textarea, select, [contenteditable], dialog[open]")) return;
    if (el && el.matches && el.matches("input") && !el.matches("[type=checkbox], [type=radio], [type=button], [type=submit]")) return;
    if (event.key === "?") {
      var help = document.getElementById("keys-help");
      if (help && help.showModal) { event.preventDefault(); help.showModal(); }
      return;
    }
    var action = KEYS[event.key];
    if (!action || !document.getElementById("approvals")) return;
    event.preventDefault();
    if (event.key === "j" || event.key === "k") { action(); return; }
    var card = currentCard();
    if (!card) { move(1); card = currentCard(); if (!card) return; if (event.key !== "x") return; }
    action(card);
  });
  document.addEventListener("click", function (event) {
    var show = event.target.closest && event.target.closest("[data-show-keys]");
    var help = document.getElementById("keys-help");
    if (show && help && help.showModal) help.showModal();
  });
  document.addEventListener("focusin", function (event) {
    var card = event.target.closest && event.target.closest("#approvals .approval-pending");
    if (card) current = card;
  });
})();
