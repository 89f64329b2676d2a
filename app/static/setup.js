// The setup form: show only the chosen strategy's settings. Without JavaScript every
// strategy's settings are shown, each marked as used only when that strategy is chosen.
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  var summary = document.getElementById("form-errors");
  if (summary) { summary.focus(); }
  var select = document.getElementById("plugin");
  if (!select) { return; }

  function showChosen() {
    var groups = document.querySelectorAll("fieldset.strategy");
    for (var i = 0; i < groups.length; i++) {
      groups[i].hidden = groups[i].dataset.plugin !== select.value;
    }
  }

  select.addEventListener("change", showChosen);
  showChosen();
})();
