/* /account: the list of devices kept current over the page's stream (GET /account/events),
   and how long changes stay open counted down; /account/delete: its count of signed-in
   browsers kept current the same way. Without JavaScript the pages are the same, as of their
   loading. */
/* The account's stream (GET /account/events) for the page in `main`: each "devices" event's
   data to `onDevices`, and to the sign-in page when the browser is signed out. Once a form of
   the page is submitted its events are left alone: the form's answer is the next page (with
   its notice), and the stream tells of the change the form made before that answer arrives,
   so a reload then would replace it. */
function followAccount(main, onDevices) {
  "use strict";
  var lang = document.documentElement.getAttribute("lang") || "";
  var submitting = false;
  document.addEventListener("submit", function () { submitting = true; });
  var stream = new EventSource(main.getAttribute("data-events-url") + (lang ? "?lang=" + encodeURIComponent(lang) : ""));
  stream.addEventListener("devices", function (event) {
    if (!submitting) { onDevices(JSON.parse(event.data)); }
  });
  stream.addEventListener("signed_out", function () {
    stream.close();
    location.assign("/signin?return_to=%2Faccount" + (lang && lang !== "en" ? "&lang=" + encodeURIComponent(lang) : ""));
  });
}

(function deletionPreview() {
  "use strict";
  var main = document.querySelector("[data-account-delete]");
  var line = main && main.querySelector("[data-preview-sessions]");
  if (!line || !window.EventSource) { return; }
  followAccount(main, function (data) {
    // The time to delete ran out: loaded again, the page asks to confirm first.
    if (data.open_until === null) { location.reload(); return; }
    line.textContent = line.getAttribute("data-text").replace("{n}", String(data.devices.length));
  });
})();

(function accountPage() {
  "use strict";
  var main = document.querySelector("[data-account]");
  if (!main) { return; }
  var list = main.querySelector("[data-devices]");
  var endOthers = main.querySelector("[data-end-others-form]");
  var lang = document.documentElement.getAttribute("lang") || "";
  var unlocked = main.querySelector("[data-open-until]");

  // "Open for N more minutes", each few seconds; the server's stream says when it closed.
  function tick() {
    if (!unlocked) { return; }
    var left = Date.parse(unlocked.getAttribute("data-open-until")) - Date.now();
    var minutes = Math.max(1, Math.ceil(left / 60000));
    // The server's words for each minute left (the language's plural forms), else its template.
    var byMinute = [];
    try { byMinute = JSON.parse(unlocked.getAttribute("data-text-remaining-by-minute") || "[]"); } catch (e) { byMinute = []; }
    unlocked.textContent = byMinute.length
      ? byMinute[Math.min(minutes, byMinute.length - 1)]
      : unlocked.getAttribute("data-text-remaining").replace("{minutes}", String(minutes));
  }
  tick();
  setInterval(tick, 5000);

  function element(tag, className, text) {
    var el = document.createElement(tag);
    if (className) { el.className = className; }
    if (text !== undefined) { el.textContent = text; }
    return el;
  }

  function hidden(name, value) {
    var input = document.createElement("input");
    input.type = "hidden";
    input.name = name;
    input.value = value;
    return input;
  }

  // One entry as the server renders it: its name, its details, and a sign-out button for
  // any browser but this one.
  function entry(device) {
    var li = element("li", "device");
    li.setAttribute("data-device", device.handle);
    var name = element("p", "device-name");
    // The device's name keeps its own direction beside the page's words (issue 58).
    name.appendChild(element("strong")).appendChild(element("bdi", "", device.device));
    if (device.this_browser) {
      li.setAttribute("data-this-browser", "");
      name.appendChild(document.createTextNode(" "));
      name.appendChild(element("span", "this-browser", main.getAttribute("data-text-this-browser")));
    }
    li.appendChild(name);
    li.appendChild(element("p", "device-details", device.details));
    if (!device.this_browser) {
      var form = element("form");
      form.method = "post";
      form.action = "/account/sessions/end";
      form.appendChild(hidden("lang", lang));
      form.appendChild(hidden(main.getAttribute("data-session-field"), device.handle));
      var button = element("button", "secondary", main.getAttribute("data-text-end"));
      button.type = "submit";
      button.setAttribute("aria-label", device.end_label);
      form.appendChild(button);
      li.appendChild(form);
    }
    return li;
  }

  if (!window.EventSource || !list) { return; }
  followAccount(main, function (data) {
    // Opened or closed meanwhile (a confirmation in another tab, or the time ran out): the
    // page's other parts change with it, so it is loaded again.
    if ((data.open_until === null) !== (unlocked === null)) { location.reload(); return; }
    if (unlocked && data.open_until) { unlocked.setAttribute("data-open-until", data.open_until); tick(); }
    var focused = document.activeElement && list.contains(document.activeElement);
    list.replaceChildren.apply(list, data.devices.map(entry));
    if (endOthers) { endOthers.hidden = !data.devices.some(function (d) { return !d.this_browser; }); }
    if (focused) { list.setAttribute("tabindex", "-1"); list.focus(); }
  });
})();
