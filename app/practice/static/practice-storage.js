// Platform storage for the tool (LTI Client Side postMessages: lti.capabilities,
// lti.put_data, lti.get_data). Only the registered tool's origin is answered, and each
// origin sees only its own values. The values live as long as the course page.
"use strict";

const toolOrigin = document.body.dataset.toolOrigin;
const store = new Map();
const MAX_ENTRIES = 500;

function reply(event, body) {
  event.source.postMessage({ ...body, message_id: event.data.message_id }, event.origin);
}

window.addEventListener("message", (event) => {
  const data = event.data;
  if (event.origin !== toolOrigin || !data || typeof data.subject !== "string" || !event.source) {
    return;
  }
  const key = typeof data.key === "string" ? data.key : null;
  switch (data.subject) {
    case "lti.capabilities":
      reply(event, {
        subject: "lti.capabilities.response",
        supported_messages: [{ subject: "lti.put_data" }, { subject: "lti.get_data" }],
      });
      break;
    case "lti.put_data":
      if (!key || typeof data.value !== "string" || key.length > 256 || data.value.length > 4096) {
        reply(event, { subject: "lti.put_data.response", error: { code: "bad_request", message: "key and value must be short strings" } });
        return;
      }
      if (store.size >= MAX_ENTRIES && !store.has(event.origin + " " + key)) {
        reply(event, { subject: "lti.put_data.response", error: { code: "storage_exhausted", message: "too many values" } });
        return;
      }
      store.set(event.origin + " " + key, data.value);
      reply(event, { subject: "lti.put_data.response", key, value: data.value });
      break;
    case "lti.get_data":
      if (!key) {
        reply(event, { subject: "lti.get_data.response", error: { code: "bad_request", message: "key is required" } });
        return;
      }
      reply(event, { subject: "lti.get_data.response", key, value: store.get(event.origin + " " + key) ?? null });
      break;
    default:
      reply(event, { subject: data.subject + ".response", error: { code: "unsupported_subject", message: "not supported" } });
  }
});
