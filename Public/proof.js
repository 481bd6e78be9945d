/* LiveSignup: pays a form's proof of work (an ALTCHA challenge in data-challenge) without the
   person noticing. A Web Worker (data-proof-worker) solves it with WebCrypto as soon as the
   page loads; the solution goes with the form in its "altcha" field. Only if the form is
   submitted before the worker is done does a calm status appear ("Checking this browser…",
   data-text-checking), and the submit then goes on by itself. No puzzle, ever.
   The sign-up page and the sign-in page (after failed sign-ins) both carry one. */
(function () {
  "use strict";

  var entries = [];

  function entryFor(form) {
    for (var i = 0; i < entries.length; i++) { if (entries[i].form === form) { return entries[i]; } }
    return null;
  }

  function solve(entry, challenge) {
    var form = entry.form, input = form.querySelector('input[name="altcha"]');
    if (entry.worker) { entry.worker.terminate(); entry.worker = null; }
    if (input) { input.value = ""; }
    var script = form.getAttribute("data-proof-worker");
    if (!challenge || !script || !input || !window.Worker || !window.crypto || !crypto.subtle) { return; }
    var worker;
    try { worker = entry.worker = new Worker(script); } catch (err) { entry.worker = null; return; }
    form.setAttribute("data-proof", "solving");
    function done(number, took) {
      if (worker !== entry.worker) { return; }
      worker.terminate();
      entry.worker = null;
      if (number != null) {
        input.value = btoa(JSON.stringify({ algorithm: challenge.algorithm, challenge: challenge.challenge,
          number: number, salt: challenge.salt, signature: challenge.signature }));
        form.setAttribute("data-proof", "solved");
        form.setAttribute("data-proof-ms", String(Math.round(took || 0))); // the worker's own time, for tests
      } else {
        form.setAttribute("data-proof", "failed"); // posted without one: the server decides
      }
      if (entry.waiting) {
        entry.waiting = false;
        if (entry.status) { entry.status.hidden = true; }
        if (form.requestSubmit) { form.requestSubmit(entry.submitter || undefined); } else { form.submit(); }
      }
    }
    worker.onmessage = function (event) { done(event.data && event.data.number, event.data && event.data.took); };
    worker.onerror = function () { done(null); };
    worker.postMessage(challenge);
  }

  // After the form's own handlers (a sign-up form that is not ready yet stops the submit
  // itself): a bubbling listener on the document runs last.
  document.addEventListener("submit", function (event) {
    var entry = entryFor(event.target);
    if (event.defaultPrevented || !entry || !entry.worker) { return; }
    event.preventDefault();
    entry.waiting = true;
    entry.submitter = event.submitter || null;
    if (entry.status) {
      entry.status.textContent = entry.form.getAttribute("data-text-checking") || "";
      entry.status.hidden = false;
    }
  });

  Array.prototype.forEach.call(document.querySelectorAll("form[data-challenge]"), function (form) {
    var entry = { form: form, worker: null, waiting: false, submitter: null,
                  status: form.querySelector("[data-proof-status]") };
    entries.push(entry);
    var challenge = null;
    try { challenge = JSON.parse(form.getAttribute("data-challenge")); } catch (err) { challenge = null; }
    solve(entry, challenge);
  });

  // The sign-up page's script calls this when the server gave its form a new token: the
  // challenge was bound to the old one.
  window.LiveSignupProof = {
    renew: function (form, token) {
      var entry = entryFor(form);
      if (!entry) { return; }
      fetch("/challenge?token=" + encodeURIComponent(token), { cache: "no-store" })
        .then(function (response) { return response.ok ? response.json() : null; })
        .then(function (challenge) { solve(entry, challenge); }, function () { solve(entry, null); });
    }
  };
})();
