/* LiveSignup: solves the form's proof of work (an ALTCHA challenge) off the page's thread,
   with WebCrypto: finds the number n <= maxnumber for which SHA-256(salt + n), in hex, is the
   challenge. Digests are asked for in batches, so the browser's crypto threads stay busy
   while this one compares.
   In:  {algorithm, challenge, maxnumber, salt, signature}
   Out: {number, took} (milliseconds), or {number: null} when no number fits. */
"use strict";

var BATCH = 512;

function hexToBytes(hex) {
  var bytes = new Uint8Array(hex.length / 2);
  for (var i = 0; i < bytes.length; i++) { bytes[i] = parseInt(hex.substr(i * 2, 2), 16); }
  return bytes;
}

function same(buffer, target) {
  var bytes = new Uint8Array(buffer);
  for (var i = 0; i < target.length; i++) { if (bytes[i] !== target[i]) { return false; } }
  return true;
}

self.onmessage = function (event) {
  var c = event.data || {};
  if (c.algorithm !== "SHA-256" || typeof c.challenge !== "string" || typeof c.salt !== "string") {
    self.postMessage({ number: null });
    return;
  }
  var target = hexToBytes(c.challenge);
  var encoder = new TextEncoder();
  var started = performance.now();
  var max = Math.max(0, c.maxnumber | 0);

  function from(start) {
    var end = Math.min(start + BATCH - 1, max);
    var digests = [];
    for (var n = start; n <= end; n++) {
      digests.push(crypto.subtle.digest("SHA-256", encoder.encode(c.salt + n)));
    }
    return Promise.all(digests).then(function (results) {
      for (var i = 0; i < results.length; i++) {
        if (same(results[i], target)) {
          self.postMessage({ number: start + i, took: performance.now() - started });
          return;
        }
      }
      if (end >= max) { self.postMessage({ number: null }); return; }
      return from(end + 1);
    });
  }
  from(0).catch(function () { self.postMessage({ number: null }); });
};
