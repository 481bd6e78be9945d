/* The second factor's code fields: a code is judged as soon as its six digits are typed (the
   form is sent then), as a person would press Enter. A recovery code (letters and a hyphen)
   waits for the button. Without JavaScript the button does the same. */
(function () {
  "use strict";
  Array.prototype.forEach.call(document.querySelectorAll("input[data-six-digits]"), function (input) {
    var sent = false;
    input.addEventListener("input", function () {
      var digits = input.value.replace(/\s+/g, "");
      if (!sent && /^[0-9]{6}$/.test(digits) && input.form) {
        sent = true;
        input.form.requestSubmit ? input.form.requestSubmit() : input.form.submit();
      }
    });
  });
})();
