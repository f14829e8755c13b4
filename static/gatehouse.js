// Gatehouse console: small behaviours around htmx. No framework, no build step.
(function () {
  "use strict";

  // 1. Pushed rows are upserts: a card, row or timeline entry already on the page (the
  //    page's own catch-up fetch may have shown it first) is kept, the duplicate dropped.
  // 2. A "delete" push for a card whose decision is in flight waits for our own response,
  //    which replaces the card with its outcome ("Approved by alice").
  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var detail = event.detail;
    var target = detail.target;
    if (target && target.classList && target.classList.contains("approval-pending") &&
        target.querySelector(".htmx-request")) {
      detail.shouldSwap = false;
      return;
    }
    var fragment = detail.fragment;
    if (!fragment || fragment.nodeType !== Node.ELEMENT_NODE) return; // outerHTML swap
    Array.prototype.slice.call(fragment.children).forEach(function (child) {
      if (child.id && document.getElementById(child.id)) child.remove();
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
    detail.shouldSwap = false;
    target.replaceChildren.apply(target, merged);
    if (window.htmx) window.htmx.process(target);
  });

  // Live indicator: the dot next to a heading says whether pushes are arriving.
  function setLive(state) {
    document.querySelectorAll("[data-live-status]").forEach(function (el) {
      el.dataset.liveStatus = state;
      el.title = state === "live" ? "Live: updates arrive as they happen" : "Offline: reconnecting…";
      el.setAttribute("aria-label", el.title);
    });
  }
  document.addEventListener("htmx:wsOpen", function () { setLive("live"); });
  document.addEventListener("htmx:wsClose", function () { setLive("offline"); });
  document.addEventListener("htmx:wsError", function () { setLive("offline"); });

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
    if (!done || (active && active !== document.body)) return;
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
      card.querySelectorAll("fieldset.controls").forEach(function (set) { set.disabled = true; });
      var note = card.querySelector(".own-run-note");
      if (note) note.hidden = false;
    });
  }
  document.addEventListener("htmx:load", function (event) { lockOwnRuns(event.detail.elt); });
  lockOwnRuns(document);
})();
