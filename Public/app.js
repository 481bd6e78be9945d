/* LiveSignup: sends edits to the server and applies what it pushes.
   All validation is computed on the server; nothing here judges validity. */
(function () {
  "use strict";

  var FIELDS = ["username", "email", "password", "confirm"];
  var STATE_TEXT = { met: ": met", unmet: ": not met", pending: ": checking" };

  var form = document.querySelector("form[data-signup]");
  if (!form) { return; }
  var tokenInput = form.querySelector('input[name="token"]');
  var token = tokenInput ? tokenInput.value : "";
  if (!token) { return; }

  var button = form.querySelector("[data-submit]");
  if (button) { button.disabled = true; } // until the first snapshot says otherwise

  var connection = document.querySelector("[data-connection]");
  var strengthEl = form.querySelector("[data-strength]");
  var strengthLabel = form.querySelector("[data-strength-label]");

  var esc = (window.CSS && typeof window.CSS.escape === "function")
    ? window.CSS.escape
    : function (s) { return String(s).replace(/[^a-zA-Z0-9_-]/g, "\\$&"); };

  function byAttr(attr, value) {
    return form.querySelector("[" + attr + '="' + esc(value) + '"]');
  }

  function inputFor(field) {
    return form.elements.namedItem(field);
  }

  /* ---------- outgoing edits ---------- */

  var seq = {};

  function send(field, touched) {
    var input = inputFor(field);
    if (!input) { return; }
    seq[field] += 1;
    var body = new URLSearchParams();
    body.set("token", token);
    body.set("field", field);
    body.set("value", input.value);
    body.set("seq", String(seq[field]));
    if (touched) { body.set("touched", "1"); }
    fetch("/fields", {
      method: "POST",
      body: body,
      credentials: "same-origin",
      cache: "no-store"
    }).then(function (response) {
      if (response.status === 404) {
        showConnection("Your session has expired. Reload the page to continue.");
      } else if (!response.ok) {
        console.debug("LiveSignup: edit rejected for " + field + " (HTTP " + response.status + ")");
      }
    }).catch(function (err) {
      console.debug("LiveSignup: edit not sent for " + field + ": " + (err && err.name));
    });
  }

  FIELDS.forEach(function (field) {
    var input = inputFor(field);
    if (!input) { return; }
    seq[field] = 0;
    input.addEventListener("input", function () { send(field, false); });
    input.addEventListener("blur", function () { send(field, true); });
  });

  /* ---------- applying server state ---------- */

  function setRequirement(id, state) {
    var el = byAttr("data-requirement", id);
    if (!el) { return; }
    if (el.getAttribute("data-state") !== state) { el.setAttribute("data-state", state); }
    var text = el.querySelector("[data-state-text]");
    var wanted = STATE_TEXT[state] || (": " + state);
    if (text && text.textContent !== wanted) { text.textContent = wanted; }
  }

  function setMessage(field, text) {
    text = text || "";
    var el = byAttr("data-message", field);
    if (el && el.textContent !== text) { el.textContent = text; }
    var input = inputFor(field);
    if (input && input.setAttribute) {
      if (text) { input.setAttribute("aria-invalid", "true"); }
      else { input.removeAttribute("aria-invalid"); }
    }
  }

  function setStrength(score, label) {
    if (strengthEl) { strengthEl.setAttribute("data-score", String(score)); }
    if (strengthLabel && strengthLabel.textContent !== label) {
      strengthLabel.textContent = label == null ? "" : String(label);
    }
  }

  function setSubmit(enabled) {
    if (button) { button.disabled = !enabled; }
  }

  function showConnection(text) {
    if (!connection) { return; }
    connection.textContent = text;
    connection.hidden = false;
  }

  function hideConnection() {
    if (connection) { connection.hidden = true; }
  }

  function parse(event) {
    try { return JSON.parse(event.data); }
    catch (err) { console.debug("LiveSignup: bad " + event.type + " event"); return null; }
  }

  function on(source, type, handler) {
    source.addEventListener(type, function (event) {
      var data = parse(event);
      if (data && typeof data === "object") { handler(data); }
    });
  }

  if (typeof window.EventSource !== "function") {
    setSubmit(true); // no live updates: fall back to the plain form
    return;
  }

  var source = new EventSource("/events?token=" + encodeURIComponent(token));

  on(source, "snapshot", function (d) {
    var key;
    if (d.requirements) {
      for (key in d.requirements) {
        if (Object.prototype.hasOwnProperty.call(d.requirements, key)) {
          setRequirement(key, d.requirements[key]);
        }
      }
    }
    if (d.messages) {
      for (key in d.messages) {
        if (Object.prototype.hasOwnProperty.call(d.messages, key)) {
          setMessage(key, d.messages[key]);
        }
      }
    }
    if (d.strength) { setStrength(d.strength.score, d.strength.label); }
    if (d.submit) { setSubmit(!!d.submit.enabled); }
    hideConnection();
  });

  on(source, "requirement", function (d) { setRequirement(d.id, d.state); });
  on(source, "message", function (d) { setMessage(d.field, d.text); });
  on(source, "strength", function (d) { setStrength(d.score, d.label); });
  on(source, "submit", function (d) { setSubmit(!!d.enabled); });

  source.addEventListener("open", hideConnection);
  source.addEventListener("error", function () {
    if (source.readyState === EventSource.CLOSED) {
      // The browser gave up (e.g. the session expired): let the plain form work.
      showConnection("Live checks are unavailable. Reload the page to continue.");
      setSubmit(true);
    } else {
      showConnection("Reconnecting…");
    }
  });
})();
