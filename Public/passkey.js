/* LiveSignup: passkeys (WebAuthn). The server makes every option and checks every answer;
   this script only carries them between the server and the browser's authenticator.
   On the sign-up page app.js uses window.LiveSignupPasskeys; the sign-in and welcome pages
   are wired here. Texts come from the page (data-text-*). */
(function () {
"use strict";

var PKC = window.PublicKeyCredential;

// Usable when the browser speaks WebAuthn and there is an authenticator to speak to: the
// device's own (fingerprint, face, screen lock) or, in browsers that offer it, a phone or key.
var available = !PKC || !navigator.credentials ? Promise.resolve(false) : (function () {
  var platform = typeof PKC.isUserVerifyingPlatformAuthenticatorAvailable === "function"
    ? PKC.isUserVerifyingPlatformAuthenticatorAvailable().catch(function () { return false; })
    : Promise.resolve(false);
  var hybrid = typeof PKC.getClientCapabilities === "function"
    ? PKC.getClientCapabilities().then(function (caps) { return !!(caps && caps.hybridTransport); }, function () { return false; })
    : Promise.resolve(false);
  return Promise.all([platform, hybrid]).then(function (answers) { return answers[0] || answers[1]; });
})();

/* ---------- WebAuthn's JSON forms ---------- */

function toBytes(text) {
  var b64 = text.replace(/-/g, "+").replace(/_/g, "/");
  while (b64.length % 4) { b64 += "="; }
  var raw = atob(b64), bytes = new Uint8Array(raw.length);
  for (var i = 0; i < raw.length; i++) { bytes[i] = raw.charCodeAt(i); }
  return bytes.buffer;
}

function toText(buffer) {
  var bytes = new Uint8Array(buffer), raw = "";
  for (var i = 0; i < bytes.length; i++) { raw += String.fromCharCode(bytes[i]); }
  return btoa(raw).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function creationOptions(json) {
  if (typeof PKC.parseCreationOptionsFromJSON === "function") { return PKC.parseCreationOptionsFromJSON(json); }
  var options = Object.assign({}, json);
  options.challenge = toBytes(json.challenge);
  options.user = Object.assign({}, json.user, { id: toBytes(json.user.id) });
  options.excludeCredentials = (json.excludeCredentials || []).map(function (c) {
    return Object.assign({}, c, { id: toBytes(c.id) });
  });
  return options;
}

function requestOptions(json) {
  if (typeof PKC.parseRequestOptionsFromJSON === "function") { return PKC.parseRequestOptionsFromJSON(json); }
  var options = Object.assign({}, json);
  options.challenge = toBytes(json.challenge);
  options.allowCredentials = (json.allowCredentials || []).map(function (c) {
    return Object.assign({}, c, { id: toBytes(c.id) });
  });
  return options;
}

function credentialJSON(credential) {
  if (typeof credential.toJSON === "function") { return credential.toJSON(); }
  var r = credential.response, response = { clientDataJSON: toText(r.clientDataJSON) };
  if (r.attestationObject) {
    response.attestationObject = toText(r.attestationObject);
    response.transports = typeof r.getTransports === "function" ? r.getTransports() : [];
  } else {
    response.authenticatorData = toText(r.authenticatorData);
    response.signature = toText(r.signature);
    if (r.userHandle) { response.userHandle = toText(r.userHandle); }
  }
  return { id: credential.id, rawId: toText(credential.rawId), type: credential.type, response: response,
    authenticatorAttachment: credential.authenticatorAttachment || undefined, clientExtensionResults: {} };
}

/* ---------- talking to the server ---------- */

// POSTs a form; resolves with the JSON answer, rejects with an Error carrying the server's
// readable message (and its reason) when it refused.
function post(url, fields) {
  var body = new URLSearchParams();
  Object.keys(fields).forEach(function (name) { if (fields[name] != null) { body.set(name, fields[name]); } });
  return fetch(url, { method: "POST", body: body, credentials: "same-origin", cache: "no-store",
    headers: { "Accept": "application/json" } }).then(function (response) {
    return response.json().catch(function () { return {}; }).then(function (data) {
      if (response.ok) { return data; }
      var error = new Error(data.message || ("HTTP " + response.status));
      error.fromServer = true;
      error.reason = data.reason || data.error || "";
      throw error;
    });
  });
}

// Options from `optionsURL`, a new credential from the authenticator, sent to `registerURL`.
function create(optionsURL, registerURL, fields, mediation, signal) {
  return post(optionsURL, fields).then(function (options) {
    var request = { publicKey: creationOptions(options) };
    if (mediation) { request.mediation = mediation; }
    if (signal) { request.signal = signal; }
    return navigator.credentials.create(request);
  }).then(function (credential) {
    return post(registerURL, Object.assign({}, fields, { response: JSON.stringify(credentialJSON(credential)) }));
  });
}

// What to tell the person when it did not work: the server's words, or the page's for a
// ceremony the person (or the browser) cancelled.
function explain(error, cancelled) {
  return error && error.fromServer ? error.message : cancelled;
}

window.LiveSignupPasskeys = {
  available: available,
  /* The sign-up form's passkey, bound to its token. */
  createForForm: function (token, lang) {
    var query = "?token=" + encodeURIComponent(token);
    return create("/passkeys/options" + query, "/passkeys/register" + query, { token: token, lang: lang });
  },
  explain: explain
};

/* ---------- /signin: a button, and the browser's autofill ---------- */

(function signIn() {
  var box = document.querySelector("[data-passkey-signin]");
  var form = document.querySelector("form.signin-form");
  if (!box || !form) { return; }
  var button = box.querySelector("[data-passkey-signin-button]");
  var error = document.querySelector("[data-passkey-error]");
  var pending = null; // the autofill request, aborted before the button asks

  function fields() {
    var returnTo = form.querySelector('input[name="return_to"]');
    var lang = form.querySelector('input[name="lang"]');
    return { return_to: returnTo ? returnTo.value : null, lang: lang ? lang.value : null };
  }

  function ask(mediation, signal) {
    return post("/passkeys/signin/options", {}).then(function (options) {
      var request = { publicKey: requestOptions(options) };
      if (mediation) { request.mediation = mediation; }
      if (signal) { request.signal = signal; }
      return navigator.credentials.get(request);
    }).then(function (credential) {
      return post("/passkeys/signin", Object.assign(fields(), { response: JSON.stringify(credentialJSON(credential)) }));
    }).then(function (answer) {
      window.location.assign(answer.location);
    });
  }

  function fail(err) {
    if (err && err.name === "AbortError") { return; }
    if (!error) { return; }
    error.textContent = explain(err, box.getAttribute("data-text-cancelled"));
    error.hidden = false;
    error.focus();
  }

  available.then(function (yes) {
    if (!yes) { return; }
    box.hidden = false;
    button.addEventListener("click", function () {
      if (pending) { pending.abort(); pending = null; }
      if (error) { error.hidden = true; }
      ask(null, null).catch(fail);
    });
    // The username field offers the site's passkeys among its suggestions.
    if (typeof PKC.isConditionalMediationAvailable !== "function") { return; }
    PKC.isConditionalMediationAvailable().then(function (conditional) {
      if (!conditional || !window.AbortController) { return; }
      pending = new AbortController();
      ask("conditional", pending.signal).catch(fail);
    });
  });
})();

/* ---------- /welcome: add a passkey (and let the browser offer one by itself) ---------- */

(function welcome() {
  var box = document.querySelector("[data-passkey-add]");
  if (!box) { return; }
  var button = box.querySelector("[data-passkey-add-button]");
  var status = box.querySelector("[data-passkey-status]");
  var count = box.querySelector("[data-passkey-count]");
  var lang = document.documentElement.getAttribute("lang") || "";

  function added(answer) {
    // On /account the list is the page's: it is shown again with the new one in it.
    if (box.hasAttribute("data-reload-on-add")) {
      location.assign("/account?passkey=added" + (lang && lang !== "en" ? "&lang=" + encodeURIComponent(lang) : "") + "#passkeys");
      return;
    }
    if (count && typeof answer.passkeys === "number") {
      count.textContent = box.getAttribute("data-text-count").replace("{count}", String(answer.passkeys));
      count.hidden = false;
    }
    status.textContent = box.getAttribute("data-text-added");
  }

  var offered = null; // the browser's own offer (conditional create), withdrawn before the button asks

  function add(mediation, signal) {
    // The server tells the two apart: the browser's own offer may come without "user present".
    return create("/account/passkeys/options", "/account/passkeys", { lang: lang, mediation: mediation }, mediation, signal);
  }

  available.then(function (yes) {
    if (!yes) { return; }
    box.hidden = false;
    button.addEventListener("click", function () {
      if (offered) { offered.abort(); offered = null; }
      status.textContent = box.getAttribute("data-text-waiting");
      add(null).then(added, function (err) {
        status.textContent = explain(err, box.getAttribute("data-text-cancelled"));
      });
    });
    // Right after a password sign-in, a browser that can may save a passkey by itself
    // (conditional create): nothing is shown unless it does.
    // Never on /account, where the person chooses (and a stale sign-in would refuse it).
    if (box.hasAttribute("data-reload-on-add") || box.getAttribute("data-passkeys") !== "0" ||
        typeof PKC.getClientCapabilities !== "function") { return; }
    PKC.getClientCapabilities().then(function (caps) {
      if (!caps || !caps.conditionalCreate || !window.AbortController) { return; }
      offered = new AbortController();
      add("conditional", offered.signal).then(added, function () { /* not offered, or withdrawn: fine */ });
    }, function () { /* no capabilities: nothing offered */ });
  });
})();
})();
