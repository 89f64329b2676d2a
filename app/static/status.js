// Keeps the submission status fresh without a manual reload, and checks the file size early.
(function () {
  "use strict";
  var section = document.querySelector("section.status");
  var t = window.evaluaitorTranslator(section || document.getElementById("upload-form"));  // see i18n.js
  var labels = {
    pending: "Waiting in the grading queue",
    processing: "Being graded",
    waiting: "Waiting for the grading service, which is busy or unreachable; it will be tried again automatically."
  };

  function poll() {
    fetch(section.dataset.statusUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (data) {
        var s = data && data.submission;
        if (!s) { return; }
        if (s.is_final) { window.location.reload(); return; }
        var text = labels[s.status] ? t(labels[s.status]) : s.status;
        if (s.waiting_for === "budget") { text = s.message; }  // already in the reader's language
        if (s.status === "processing" && s.total) {
          text += ": " + t("step {step} of {total}", { step: s.step, total: s.total }) + " – " + s.message;
        }
        document.getElementById("status-text").textContent = text;
        var bar = document.getElementById("status-progress");
        if (bar && s.total) { bar.max = s.total; bar.value = s.step; }
        window.setTimeout(poll, 1500);
      })
      .catch(function () { window.setTimeout(poll, 5000); });
  }

  if (section && section.dataset.final === "false") { window.setTimeout(poll, 1000); }

  var form = document.getElementById("upload-form");
  if (form) {
    form.addEventListener("submit", function (event) {
      var input = document.getElementById("file");
      var limit = parseFloat(form.dataset.maxMb) * 1024 * 1024;
      if (input.files.length && input.files[0].size > limit) {
        event.preventDefault();
        input.setAttribute("aria-invalid", "true");
        input.setCustomValidity(t("The file is larger than the {limit} MB limit.", { limit: form.dataset.maxMb }));
        input.reportValidity();
        input.addEventListener("change", function () { input.setCustomValidity(""); }, { once: true });
      }
    });
  }
})();
