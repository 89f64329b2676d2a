// The page's translations of a script's texts, from the data-messages attribute of `element`
// (rendered by templates/_js_messages.html). English is the key; t(text, values) returns the
// translation, or the English text, with its {name} placeholders filled in from `values`.
window.evaluaitorTranslator = function (element) {
  "use strict";
  var messages = JSON.parse((element && element.dataset.messages) || "{}");
  return function (text, values) {
    return (messages[text] || text).replace(/\{(\w+)\}/g, function (all, name) {
      return String(values[name]);
    });
  };
};
