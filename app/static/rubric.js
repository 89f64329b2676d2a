// The rubric editor: rows of criteria (name, requirement, weight) to add, remove and
// reorder; import from a YAML/JSON file or pasted text (read by the server, so the rules are
// the same as without JavaScript); export as a YAML or JSON download. The rows are written
// into the plain rubric text area as JSON (which is also YAML), so the form posts as before.
(function () {
  "use strict";
  var section = document.getElementById("rubric-section");
  var source = document.getElementById("rubric");
  var editor = document.getElementById("rubric-editor");
  if (!section || !source || !editor || !window.fetch) { return; }
  var t = window.evaluaitorTranslator(section);  // see i18n.js

  var rubric = { title: "", criteria: [] };
  var status, rows, titleInput;

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) { node.setAttribute(name, attrs[name]); });
    if (text) { node.textContent = text; }
    return node;
  }

  function say(message, isError) {
    status.textContent = message;
    status.className = isError ? "error-text" : "muted";
  }

  // -- the rubric as text ---------------------------------------------------------------

  function store() {
    var filled = rubric.criteria.length > 0 || rubric.title.trim() !== "";
    var data = { title: rubric.title, criteria: rubric.criteria.map(function (c) {
      var weight = parseFloat(c.weight);
      return { name: c.name, requirement: c.requirement, weight: isNaN(weight) ? c.weight : weight };
    }) };
    source.value = filled ? JSON.stringify(data, null, 2) : "";
    return data;
  }

  function asYaml(data) {
    // JSON strings are valid YAML double-quoted scalars, so quoting needs no YAML library.
    var lines = ["title: " + JSON.stringify(data.title || ""), "criteria:"];
    data.criteria.forEach(function (c) {
      lines.push("  - name: " + JSON.stringify(c.name));
      lines.push("    requirement: " + JSON.stringify(c.requirement));
      lines.push("    weight: " + (typeof c.weight === "number" ? c.weight : JSON.stringify(c.weight)));
    });
    return lines.join("\n") + "\n";
  }

  function download(name, type, text) {
    var link = el("a", { href: URL.createObjectURL(new Blob([text], { type: type })), download: name });
    document.body.appendChild(link);
    link.click();
    window.setTimeout(function () { URL.revokeObjectURL(link.href); link.remove(); }, 0);
  }

  function parse(text, done) {
    var body = new FormData();
    body.append("text", text);
    fetch(section.dataset.parseUrl, { method: "POST", body: body, credentials: "same-origin" })
      .then(function (response) { return response.json(); })
      .then(function (answer) {
        if (answer.error) { say(answer.message, true); return; }
        done(answer.rubric || { title: "", criteria: [] });
      })
      .catch(function () { say(t("The rubric could not be read. Try again."), true); });
  }

  function load(data) {
    rubric = {
      title: data.title || "",
      criteria: (data.criteria || []).map(function (c) {
        return { name: c.name, requirement: c.requirement, weight: String(c.weight) };
      })
    };
    titleInput.value = rubric.title;
    draw();
    store();
  }

  // -- the rows -----------------------------------------------------------------------------

  function draw(focusRow, focusAction) {
    rows.textContent = "";
    // A table of headers alone reads as an empty grid to a screen reader: show it with rows only.
    rows.parentNode.hidden = !rubric.criteria.length;
    rubric.criteria.forEach(function (c, i) {
      var n = i + 1;
      var tr = el("tr");
      [["name", "input", "Name of criterion {n}"], ["requirement", "textarea", "Requirement of criterion {n}"],
        ["weight", "input", "Weight of criterion {n}"]]
        .forEach(function (spec) {
          var input = el(spec[1], { "aria-label": t(spec[2], { n: n }) });
          if (spec[0] === "weight") { input.type = "number"; input.step = "any"; }
          else if (spec[1] === "input") { input.type = "text"; }
          else { input.rows = 2; }
          input.value = c[spec[0]];
          input.addEventListener("input", function () { c[spec[0]] = input.value; store(); });
          var td = el("td");
          td.appendChild(input);
          tr.appendChild(td);
        });
      var actions = el("td");
      [["up", "Move up", i > 0], ["down", "Move down", i < rubric.criteria.length - 1], ["remove", "Remove", true]]
        .forEach(function (spec) {
          var button = el("button", { type: "button", "class": "secondary", "data-action": spec[0],
            "aria-label": t(spec[1] + ": criterion {n}", { n: n }) }, t(spec[1]));
          button.disabled = !spec[2];
          button.addEventListener("click", function () { act(spec[0], i); });
          actions.appendChild(button);
        });
      tr.appendChild(actions);
      rows.appendChild(tr);
    });
    if (focusRow !== undefined && rows.children[focusRow]) {
      var target = rows.children[focusRow].querySelector('[data-action="' + focusAction + '"]:not([disabled])');
      (target || rows.children[focusRow].querySelector("input")).focus();
    }
  }

  function act(action, i) {
    var list = rubric.criteria;
    if (action === "remove") {
      var removed = list.splice(i, 1)[0];
      draw();
      say(t("Removed criterion {name}.", { name: removed.name || i + 1 }));
      (rows.children[Math.min(i, list.length - 1)] ? rows.children[Math.min(i, list.length - 1)].querySelector("input")
        : document.getElementById("rubric-add")).focus();
    } else {
      var j = action === "up" ? i - 1 : i + 1;
      var moved = list[i];
      list[i] = list[j];
      list[j] = moved;
      draw(j, action);
      say(t("Moved {name} to position {n}.", { name: moved.name || t("the criterion"), n: j + 1 }));
    }
    store();
  }

  // -- building the editor --------------------------------------------------------------------

  function build() {
    var titleLabel = el("label", { "for": "rubric-title" }, t("Rubric title"));
    titleInput = el("input", { type: "text", id: "rubric-title" });
    titleInput.addEventListener("input", function () { rubric.title = titleInput.value; store(); });
    var table = el("table", { "class": "rubric-table" });
    table.appendChild(el("caption", { "class": "visually-hidden" }, t("Rubric criteria")));
    var head = el("tr");
    ["Criterion", "Requirement", "Weight", "Actions"].forEach(function (name) {
      head.appendChild(el("th", { scope: "col" }, t(name)));
    });
    table.appendChild(el("thead")).appendChild(head);
    rows = table.appendChild(el("tbody"));

    var tools = el("p", { "class": "rubric-actions" });
    var add = el("button", { type: "button", id: "rubric-add" }, t("Add a criterion"));
    add.addEventListener("click", function () {
      rubric.criteria.push({ name: "", requirement: "", weight: "1" });
      draw(rubric.criteria.length - 1, "none");
      store();
    });
    var yamlOut = el("button", { type: "button", "class": "secondary" }, t("Export as YAML"));
    yamlOut.addEventListener("click", function () { download("rubric.yaml", "application/yaml", asYaml(store())); });
    var jsonOut = el("button", { type: "button", "class": "secondary" }, t("Export as JSON"));
    jsonOut.addEventListener("click", function () {
      download("rubric.json", "application/json", JSON.stringify(store(), null, 2) + "\n");
    });
    [add, yamlOut, jsonOut].forEach(function (b) { tools.appendChild(b); });

    var pasteLabel = el("label", { "for": "rubric-paste" }, t("Paste a rubric (YAML or JSON)"));
    var paste = el("textarea", { id: "rubric-paste", rows: "4", "class": "code", spellcheck: "false" });
    var pasteButton = el("button", { type: "button", "class": "secondary" }, t("Import the pasted rubric"));
    pasteButton.addEventListener("click", function () {
      parse(paste.value, function (data) { load(data); paste.value = ""; say(t("Rubric imported.")); });
    });

    status = el("p", { id: "rubric-status", role: "status", "aria-live": "polite" });
    [titleLabel, titleInput, table, tools, pasteLabel, paste, pasteButton, status]
      .forEach(function (node) { editor.appendChild(node); });

    var file = document.getElementById("rubric_file");
    if (file && window.FileReader) {
      file.addEventListener("change", function () {
        if (!file.files.length) { return; }
        var reader = new FileReader();
        reader.onload = function () {
          parse(String(reader.result), function (data) {
            load(data);
            file.value = "";  // the rows now hold it; the form posts them
            say(t("Rubric imported from the file."));
          });
        };
        reader.readAsText(file.files[0]);
      });
    }
  }

  function start(data) {
    build();
    load(data);
    editor.hidden = false;
    document.getElementById("rubric-text").hidden = true;
  }

  if (source.value.trim()) {
    // Keep the plain text area when the saved or typed text cannot be read: nothing is lost.
    var body = new FormData();
    body.append("text", source.value);
    fetch(section.dataset.parseUrl, { method: "POST", body: body, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (answer) { if (answer && answer.rubric) { start(answer.rubric); } })
      .catch(function () {});
  } else {
    start({ title: "", criteria: [] });
  }
})();
