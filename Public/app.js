/* LiveSignup: sends edits to the server and applies what it pushes.
   All validation is computed on the server; nothing here judges validity. */
(function () {
"use strict";

// Every text comes from the page, in its language (data-text-* on the form): the script
// holds none of its own.
var STATE_TEXT = {}, LOST = "", SLOW = "";

var esc = window.CSS && CSS.escape || function (s) { return String(s).replace(/[^\w-]/g, "\\$&"); };

/* ---------- error summary ---------- */

// Its links (and those of the "still needed" summary) move focus to their field.
function leadsToFields(box) {
  if (!box) { return; }
  box.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest('a[href^="#"]');
    var input = link && document.getElementById(link.getAttribute("href").slice(1));
    if (!input) { return; }
    // Show the label too, not just the input.
    event.preventDefault();
    (labelFor(input) || input).scrollIntoView();
    input.focus({ preventScroll: true });
  });
}

function labelFor(input) {
  return document.querySelector('label[for="' + esc(input.id) + '"]');
}

var summary = document.querySelector("[data-error-summary]");
if (summary) { summary.focus(); } // autofocus does not apply to a div everywhere
leadsToFields(summary);

/* ---------- /verify: the code's shape, as it is typed ---------- */

// The rule and its message are the server's (VerificationCodeShape, data-code-shape and
// data-code-message); the server checks the same on POST. Only the shape is judged here:
// whether the code is right, only the server knows.
(function () {
  var input = document.querySelector("input[data-code-shape]");
  var message = document.querySelector("[data-code-error]");
  if (!input || !message) { return; }
  var shape = new RegExp("^(?:" + input.getAttribute("data-code-shape") + ")$");
  function check(final) {
    var typed = input.value.replace(/[\s-]/g, "");
    var ok = shape.test(typed);
    if (ok || typed === "") {
      input.removeAttribute("aria-invalid");
      message.textContent = "";
    } else if (final || typed.length >= 6) {
      input.setAttribute("aria-invalid", "true");
      message.textContent = input.getAttribute("data-code-message");
    }
  }
  input.addEventListener("input", function () { check(false); });
  input.addEventListener("blur", function () { check(true); });
})();

var form = document.querySelector("form[data-signup]");
if (!form) { return; }
// The form's fields, in page order, as the page declares them (data-field): the policy decides.
var FIELDS = Array.prototype.map.call(form.querySelectorAll("[data-field]"), function (el) {
  return el.getAttribute("data-field");
});
var tokenInput = form.querySelector('input[name="token"]');
var token = tokenInput ? tokenInput.value : "";
if (!token) { return; }

/* ---------- the Sign-up button ----------
   Never disabled (it would strand keyboard and screen reader users): while the form is not
   ready it is aria-disabled, and activating it lists what is missing, in the page's words. */

function pageText(name) { return form.getAttribute("data-text-" + name) || ""; }
STATE_TEXT = { met: pageText("met"), unmet: pageText("unmet"), pending: pageText("pending") };
LOST = pageText("lost");
SLOW = pageText("slow");
// The page's language: a session built from this page speaks it too.
var LANG = document.documentElement.getAttribute("lang") || "";
function withLang(url) { return LANG ? url + "&lang=" + encodeURIComponent(LANG) : url; }

var button = form.querySelector("[data-submit]");
var missing = form.querySelector("[data-missing-summary]");
var missingList = missing && missing.querySelector("[data-missing-list]");
var ready;
setReady(false); // until the first snapshot says otherwise
leadsToFields(missing);

function setReady(enabled) {
  ready = enabled;
  if (!button) { return; }
  if (enabled) { button.removeAttribute("aria-disabled"); }
  else { button.setAttribute("aria-disabled", "true"); }
  if (enabled && missing) { missing.hidden = true; }
}

// Click, Enter, Space and Enter in a field all come here.
// (A proof of work still being solved holds the submit back in proof.js, after this.)
form.addEventListener("submit", function (event) {
  if (ready) { return; }
  event.preventDefault();
  showMissing();
});

function showMissing() {
  if (!missingList) { return; }
  missingList.textContent = "";
  // Each field in page order: its message if it shows one, else "Label: requirement" per unmet one.
  Array.prototype.forEach.call(form.querySelectorAll("[data-message]"), function (slot) {
    var field = slot.getAttribute("data-message");
    var input = inputFor(field);
    var label = input && labelFor(input);
    var open = Array.prototype.filter.call(slot.parentNode.querySelectorAll("[data-requirement]"),
      function (el) { return el.getAttribute("data-state") !== "met"; });
    if (!input || !open.length) { return; }
    // Each item remembers what it stands for, so it can leave the list once that is fixed.
    var items = slot.textContent ? [[slot.textContent, field, ""]] : open.map(function (el) {
      var text = el.querySelector(".requirement-text");
      // The language's pattern joins them (issue 58); functions, so "$&" in a label stays text.
      var requirement = text ? text.textContent : "";
      return [label ? pageText("missing-item").replace("{label}", function () { return label.textContent.trim(); })
        .replace("{requirement}", function () { return requirement; }) : requirement, field, el.getAttribute("data-requirement")];
    });
    items.forEach(function (item) {
      var a = document.createElement("a");
      a.href = "#" + input.id;
      a.textContent = item[0];
      var li = missingList.appendChild(document.createElement("li"));
      li.setAttribute("data-missing-field", item[1]);
      if (item[2]) { li.setAttribute("data-missing-requirement", item[2]); }
      li.appendChild(a);
    });
  });
  missing.hidden = false;
  missing.focus();
}

/* While the list shows, what gets fixed leaves it. Only removals: the list is an alert, and
   screen readers announce what is added to it, not what is taken away. */
function pruneMissing() {
  if (!missingList || missing.hidden) { return; }
  Array.prototype.forEach.call(missingList.querySelectorAll("li"), function (li) {
    var id = li.getAttribute("data-missing-requirement");
    var field = li.getAttribute("data-missing-field");
    var requirement = id && byAttr("data-requirement", id);
    var slot = byAttr("data-message", field);
    var fixed = id ? !requirement || requirement.getAttribute("data-state") === "met"
      : !slot || !slot.textContent;
    if (fixed) { missingList.removeChild(li); }
  });
}

var connection = document.querySelector("[data-connection]");
var strengthEl = form.querySelector("[data-strength]");
function part(name) { return form.querySelector("[data-strength-" + name + "]"); }

// Show/hide both passwords; hidden in the HTML because it needs this script.
var reveal = form.querySelector("[data-reveal]");
if (reveal) {
  reveal.hidden = false;
  reveal.addEventListener("click", function () {
    var show = reveal.getAttribute("aria-pressed") !== "true";
    reveal.setAttribute("aria-pressed", String(show));
    reveal.textContent = pageText(show ? "hide-passwords" : "show-passwords");
    ["password", "confirm"].forEach(function (f) { inputFor(f).type = show ? "text" : "password"; });
  });
}

function byAttr(attr, value) {
  return form.querySelector("[" + attr + '="' + esc(value) + '"]');
}

function inputFor(field) {
  return form.elements.namedItem(field);
}

// What the field posts, as a plain form post would: a checkbox is "on" when ticked, "" when not.
function valueOf(input) {
  return input.type === "checkbox" ? (input.checked ? "on" : "") : input.value;
}

function setValue(input, value) {
  if (input.type === "checkbox") { input.checked = value === "on"; } else { input.value = value; }
}

// Whether the browser restored something other than what the page was served with.
function differsFromPage(input) {
  if (input.type === "checkbox") { return input.checked !== input.defaultChecked; }
  if (input.tagName === "SELECT") {
    return Array.prototype.some.call(input.options, function (o) { return o.selected !== o.defaultSelected; });
  }
  return input.value !== input.defaultValue;
}

/* ---------- password or passkey ----------
   Where the browser can make a passkey, the form offers one instead of the password fields.
   The choice is an edit like any other (field "credential"): the server swaps the checklist
   and says so in the stream (the "credential" event). The page swaps its fields to match:
   the passkey's step (a <template> until then) takes the password fields' place in the form,
   so the form holds the checklist of the credential chosen and posts no password with a
   passkey. */

var credentialInput = form.querySelector('input[name="credential"]');
var stepTemplate = form.querySelector("template[data-passkey-step]");
var passkeyStep = stepTemplate && stepTemplate.content.firstElementChild;
var passkeyChoice = form.querySelector("[data-passkey-choice]");
var passkeyStatus = passkeyStep && passkeyStep.querySelector("[data-passkey-status]");
var passwordBoxes = ["password", "confirm"].map(function (field) {
  var box = form.querySelector('[data-field="' + field + '"]');
  return box && { box: box, mark: document.createComment(field) };
}).filter(Boolean);
var passkeysUsable = false;
var plainAction = form.getAttribute("action") || "/signup";

function setCredential(method) {
  if (method === "passkey" && !passkeysUsable) { method = "password"; }
  if (credentialInput) { credentialInput.value = method; }
  var passkey = method === "passkey";
  // The passkey waits in the form's session, on the instance that minted its token: the
  // token in the URL lets a proxy in front of several instances send the sign-up there.
  form.setAttribute("action", passkey ? plainAction + "?token=" + encodeURIComponent(token) : plainAction);
  if (passkeyStep && passkey && !passkeyStep.isConnected) {
    stepTemplate.parentNode.insertBefore(passkeyStep, stepTemplate);
    passwordBoxes.forEach(function (entry) { entry.box.replaceWith(entry.mark); });
  } else if (passkeyStep && !passkey && passkeyStep.isConnected) {
    passwordBoxes.forEach(function (entry) { entry.mark.replaceWith(entry.box); });
    passkeyStep.remove();
  }
  if (passkeyChoice) { passkeyChoice.hidden = passkey || !passkeysUsable; }
}

// `focus` names where the person goes next, found once the fields are swapped.
function chooseCredential(method, focus) {
  setCredential(method);
  send("credential", true);
  var target = focus();
  if (target) { target.focus(); }
}

if (passkeyStep && window.LiveSignupPasskeys) {
  var createButton = passkeyStep.querySelector("[data-passkey-create]");
  LiveSignupPasskeys.available.then(function (yes) {
    passkeysUsable = yes;
    setCredential(credentialInput ? credentialInput.value : "password");
  });
  if (passkeyChoice) {
    passkeyChoice.querySelector("[data-use-passkey]").addEventListener("click", function () {
      chooseCredential("passkey", function () { return createButton; });
    });
  }
  passkeyStep.querySelector("[data-use-password]").addEventListener("click", function () {
    chooseCredential("password", function () { return inputFor("password"); });
  });
  createButton.addEventListener("click", function () {
    setText(passkeyStatus, pageText("passkey-waiting"));
    // The server marks passkey.created met in the stream once it has checked the answer.
    LiveSignupPasskeys.createForForm(token, LANG).then(function () {
      setText(passkeyStatus, pageText("passkey-created"));
    }, function (err) {
      setText(passkeyStatus, LiveSignupPasskeys.explain(err, pageText("passkey-cancelled")));
    });
  });
}

/* ---------- outgoing edits ---------- */

var seq = {};
var touched = {};

function send(field, isTouched) {
  var input = inputFor(field);
  if (!input) { return; }
  seq[field] += 1;
  var sentWith = token;
  var body = new URLSearchParams();
  body.set("token", sentWith);
  body.set("field", field);
  body.set("value", valueOf(input));
  body.set("seq", String(seq[field]));
  if (isTouched) { body.set("touched", "1"); }
  // The token in the URL too: a proxy in front of several instances routes by it.
  fetch(withLang("/fields?token=" + encodeURIComponent(sentWith)), {
    method: "POST",
    body: body,
    credentials: "same-origin",
    cache: "no-store"
  }).then(function (response) {
    if (response.status === 404) {
      // Form forgotten (restart, expiry). For an older token the resend covers it.
      if (sentWith === token) { stale = true; lose(true); }
    } else if (response.status === 429) {
      slowDown(response);
    } else if (response.ok) {
      if (!slowTimer && !lost && connection && connection.textContent === SLOW) { hideConnection(); }
    } else {
      console.debug("LiveSignup: edit rejected for " + field + " (HTTP " + response.status + ")");
    }
  }).catch(function (err) {
    console.debug("LiveSignup: edit not sent for " + field + ": " + (err && err.name));
  });
}

// Over a server limit (429): say so calmly, wait as told, then send every value again.
var slowTimer = 0;
function slowDown(response) {
  var wait = parseInt(response.headers.get("Retry-After"), 10) || 2;
  showConnection(SLOW);
  if (!slowTimer) {
    slowTimer = setTimeout(function () { slowTimer = 0; resend(true); }, Math.min(wait, 60) * 1000);
  }
}

seq.credential = 0;
FIELDS.forEach(function (field) {
  var input = inputFor(field);
  if (!input) { return; }
  seq[field] = 0;
  if (input.type === "checkbox" || input.tagName === "SELECT") {
    // Ticking a box or choosing an option is a decision: its problems may show at once.
    input.addEventListener("change", function () { touched[field] = true; send(field, true); });
  } else {
    input.addEventListener("input", function () { send(field, false); });
  }
  input.addEventListener("blur", function () { touched[field] = true; send(field, true); });
});

/* The language switcher reloads the page in another language; what was typed comes along
   (in this tab's sessionStorage, for the moment of the reload only: read and removed at once). */
var CARRY = "livesignup-carry";
Array.prototype.forEach.call(document.querySelectorAll("[data-language]"), function (link) {
  link.addEventListener("click", function () {
    var values = { touched: touched };
    FIELDS.forEach(function (field) { var input = inputFor(field); if (input) { values[field] = valueOf(input); } });
    try { sessionStorage.setItem(CARRY, JSON.stringify(values)); } catch (err) { /* storage off: values are lost */ }
  });
});
(function restoreCarried() {
  var carried = null;
  try { carried = JSON.parse(sessionStorage.getItem(CARRY) || "null"); sessionStorage.removeItem(CARRY); } catch (err) { return; }
  if (!carried) { return; }
  FIELDS.forEach(function (field) {
    var input = inputFor(field);
    if (input && !valueOf(input) && typeof carried[field] === "string") { setValue(input, carried[field]); }
    if (carried.touched && carried.touched[field]) { touched[field] = true; }
  });
})();

// Tell the server what it may not know: after a loss every value typed or left,
// on the first open what the browser restored (reload, back).
function resend(all) {
  FIELDS.forEach(function (field) {
    var input = inputFor(field);
    if (input && (all ? valueOf(input) || touched[field] : differsFromPage(input))) {
      send(field, !!touched[field]);
    }
  });
  // A new session starts with a password: a passkey or a provider's sign-in is told again.
  if (all && credentialInput && credentialInput.value !== "password") { send("credential", true); }
}

/* ---------- applying server state ---------- */

function setRequirement(id, state) {
  var el = byAttr("data-requirement", id);
  if (!el) { return; }
  if (el.getAttribute("data-state") !== state) { el.setAttribute("data-state", state); }
  var text = el.querySelector("[data-state-text]");
  var wanted = STATE_TEXT[state] || "";
  if (text && text.textContent !== wanted) { text.textContent = wanted; }
}

function setMessage(field, text) {
  setText(byAttr("data-message", field), text);
  var input = inputFor(field);
  if (input && input.setAttribute) {
    if (text) { input.setAttribute("aria-invalid", "true"); }
    else { input.removeAttribute("aria-invalid"); }
  }
}

function setText(el, text) {
  text = text == null ? "" : String(text);
  if (el && el.textContent !== text) { el.textContent = text; }
}

function setStrength(d) {
  if (strengthEl) { strengthEl.setAttribute("data-score", String(d.score)); }
  setText(part("label"), d.label);
  setText(part("warning"), d.warning);
  var list = part("suggestions");
  if (!list) { return; }
  list.textContent = "";
  (d.suggestions || []).forEach(function (text) {
    var li = document.createElement("li");
    li.textContent = text;
    list.appendChild(li);
  });
}

// "Did you mean …?": the corrected value as a button that puts it in the field. The slot
// stays in the page (empty when there is nothing to say) so screen readers announce it.
function setSuggestion(field, value) {
  var slot = byAttr("data-suggestion", field);
  value = value == null ? "" : String(value);
  if (!slot || slot.getAttribute("data-value") === value) { return; }
  slot.setAttribute("data-value", value);
  slot.textContent = "";
  if (!value) { return; }
  var words = pageText("suggestion").split("{suggestion}");
  var button = document.createElement("button");
  button.type = "button";
  button.className = "suggestion-accept";
  button.setAttribute("data-accept-suggestion", field);
  button.textContent = value;
  button.addEventListener("click", function () { acceptSuggestion(field, value); });
  slot.appendChild(document.createTextNode(words[0] || ""));
  slot.appendChild(button);
  slot.appendChild(document.createTextNode(words.slice(1).join("")));
}

// Back in the field, as if typed: the server checks the new value like any edit.
function acceptSuggestion(field, value) {
  var input = inputFor(field);
  if (!input) { return; }
  setValue(input, value);
  setSuggestion(field, "");
  input.focus();
  touched[field] = true;
  send(field, true);
}

function setSuggestions(map) {
  Array.prototype.forEach.call(form.querySelectorAll("[data-suggestion]"), function (slot) {
    var field = slot.getAttribute("data-suggestion");
    setSuggestion(field, map && Object.prototype.hasOwnProperty.call(map, field) ? map[field] : "");
  });
}

// The server's word, mirrored on the form for tests and scripts.
function setSubmit(enabled) {
  form.setAttribute("data-submit-enabled", String(enabled));
  setReady(enabled);
}

function showConnection(text) {
  if (!connection) { return; }
  connection.textContent = text;
  connection.hidden = false;
}

function hideConnection() {
  if (connection) { connection.hidden = true; }
}

function each(map, apply) {
  for (var key in map) {
    if (Object.prototype.hasOwnProperty.call(map, key)) { apply(key, map[key]); }
  }
}

if (typeof window.EventSource !== "function") {
  setReady(true); // no live updates: fall back to the plain form
  return;
}

/* ---------- connection ----------
   error: status shown, submit enabled. CONNECTING: the browser retries. CLOSED, or a 404
   from /fields: close; after a backoff check the token (404 → fresh session); reopen.
   open after a loss: resend. snapshot: status hidden, backoff reset. */

var source = null;
var timer = 0;
var busy = false;     // token check or new session under way
var attempt = 0;
var lost = false;     // the next open must resend
var stale = false;    // the server does not know the token
var leaving = false;
var sleeping = false; // a hidden tab closed its stream

function streamURL() {
  return withLang("/events?token=" + encodeURIComponent(token));
}

function lose(closed) {
  if (leaving) { return; }
  lost = true;
  setReady(true); // the server checks everything again on submit
  showConnection(LOST);
  if (closed) {
    if (source) { source.close(); source = null; }
    if (stale && timer) { clearTimeout(timer); timer = 0; } // no need to wait
    schedule(stale ? 0 : backoff());
  }
}

// 0.5 s, 1 s, 2 s … 15 s, each up to a quarter shorter so pages do not retry in step.
function backoff() {
  var base = Math.min(15000, 500 * Math.pow(2, attempt++));
  return Math.round(base * (1 - Math.random() / 4));
}

function schedule(delay) {
  if (timer || busy || leaving || sleeping) { return; }
  timer = setTimeout(reconnect, delay);
}

// Status of GET /events, without keeping the stream.
function check() {
  if (stale) { return Promise.resolve(404); }
  var abort = window.AbortController ? new AbortController() : null;
  return fetch(streamURL(), { cache: "no-store", signal: abort && abort.signal })
    .then(function (response) {
      if (abort) { abort.abort(); } else if (response.body) { response.body.cancel(); }
      return response.status;
    });
}

function renew() {
  // The form says where its fresh sessions come from (a new-password form has its own).
  var sessionURL = form.getAttribute("data-session-url") || "/sessions";
  // (withLang adds "&lang=" to a URL that has a query already; this one has none.)
  var query = LANG ? "?lang=" + encodeURIComponent(LANG) : "";
  return fetch(sessionURL + query, { method: "POST", cache: "no-store", credentials: "same-origin" }).then(function (response) {
    if (!response.ok) { throw new Error("HTTP " + response.status); }
    return response.json();
  }).then(function (data) {
    if (!data || !/^[A-Za-z0-9._~-]{16,200}$/.test(data.token)) { throw new Error("no token"); }
    token = data.token;
    if (tokenInput) { tokenInput.value = token; } // a plain submit uses it too
    if (window.LiveSignupProof) { LiveSignupProof.renew(form, token); } // bound to the old token
    FIELDS.forEach(function (field) { seq[field] = 0; });
    seq.credential = 0;
    stale = false;
    lost = true;
  });
}

function reconnect() {
  timer = 0;
  if (source || leaving) { return; }
  busy = true;
  check().then(function (status) {
    if (status === 404) { return renew(); }
    if (status === 429) { showConnection(SLOW); }
    if (status < 200 || status > 299) { throw new Error("HTTP " + status); }
  }).then(function () {
    busy = false;
    if (!sleeping) { connect(); }
  }, function (err) {
    busy = false;
    console.debug("LiveSignup: reconnect failed: " + (err && err.message));
    schedule(backoff());
  });
}

function on(es, type, handler) {
  es.addEventListener(type, function (event) {
    if (es !== source) { return; }
    var data;
    try { data = JSON.parse(event.data); }
    catch (err) { console.debug("LiveSignup: bad " + type + " event"); return; }
    if (data && typeof data === "object") { handler(data); pruneMissing(); }
  });
}

function connect() {
  var es = source = new EventSource(streamURL());

  es.addEventListener("open", function () {
    if (es === source) { resend(lost); lost = false; }
  });

  es.addEventListener("error", function () {
    if (es !== source) { return; }
    lose(es.readyState === EventSource.CLOSED);
  });

  on(es, "snapshot", function (d) {
    if (d.credential) { setCredential(d.credential); }
    each(d.requirements, setRequirement);
    each(d.messages, setMessage);
    if (d.strength) { setStrength(d.strength); }
    if (d.submit) { setSubmit(!!d.submit.enabled); }
    setSuggestions(d.suggestions);
    attempt = 0;
    hideConnection();
  });
  on(es, "requirement", function (d) { setRequirement(d.id, d.state); });
  on(es, "message", function (d) { setMessage(d.field, d.text); });
  on(es, "strength", setStrength);
  on(es, "submit", function (d) { setSubmit(!!d.enabled); });
  on(es, "suggestion", function (d) { setSuggestion(d.field, d.value); });
  on(es, "credential", function (d) { setCredential(d.method); });
}

window.addEventListener("online", function () {
  if (timer) { clearTimeout(timer); timer = 0; reconnect(); }
});
// Leaving aborts the stream: no lost connection.
window.addEventListener("pagehide", function () {
  leaving = true;
  if (source) { source.close(); source = null; }
});
window.addEventListener("pageshow", function (event) {
  if (!event.persisted) { return; }
  leaving = false;
  lose(true);
});

/* A tab hidden for data-background-close-ms (default 30 s) closes its stream; edits are
   still posted. Shown again, it reconnects as after any loss (a fresh token if need be). */
var sleepTimer = 0;
function hidden() { return document.visibilityState === "hidden"; }
function watchVisibility() {
  if (hidden()) {
    if (!sleepTimer && !sleeping) {
      var delay = parseInt(form.getAttribute("data-background-close-ms"), 10);
      sleepTimer = setTimeout(sleep, delay >= 0 ? delay : 30000);
    }
    return;
  }
  clearTimeout(sleepTimer);
  sleepTimer = 0;
  if (!sleeping) { return; }
  sleeping = false;
  // As on load; a 404 then goes the usual way (new token, every value re-sent).
  if (stale) { schedule(0); } else if (!busy) { connect(); }
}
function sleep() {
  sleepTimer = 0;
  if (!hidden() || leaving) { return; }
  sleeping = true;
  lost = true; // the next open sends every value again
  if (source) { source.close(); source = null; }
  clearTimeout(timer);
  clearTimeout(slowTimer);
  timer = slowTimer = 0;
}
document.addEventListener("visibilitychange", watchVisibility);

connect();
watchVisibility();
})();
