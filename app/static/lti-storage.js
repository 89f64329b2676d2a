// Keeps the launch state in the platform's storage frame when the browser blocks the
// tool's cookie inside the LMS iframe (LTI Client Side postMessages: lti.put_data and
// lti.get_data). "put" (login): store the state and nonce, then go on to the platform.
// "get" (launch): read them back; open the tool only if both match this launch.
// Any failure shows the "open in a new window" fallback that the page already contains.
"use strict";

(function () {
  const root = document.getElementById("lti-storage");
  const fallback = document.getElementById("storage-fallback");
  if (!root || !fallback) {
    return;
  }
  const { mode, target, origin, state, nonce, next } = root.dataset;
  const TIMEOUT_MS = 4000;
  fallback.hidden = true;

  function storageFrame() {
    const host = window.opener || (window.parent !== window ? window.parent : null);
    if (!host) {
      return null;
    }
    try {
      return target === "_parent" ? host : host.frames[target];
    } catch (error) {
      return null;
    }
  }

  function messageId() {
    const bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  // One request to the platform; resolves with the response's value, rejects on error or
  // when no answer comes from the platform's origin in time.
  function ask(frame, subject, fields) {
    return new Promise((resolve, reject) => {
      const id = messageId();
      const timer = setTimeout(() => finish(new Error("no answer")), TIMEOUT_MS);
      function finish(error, value) {
        clearTimeout(timer);
        window.removeEventListener("message", listener);
        error ? reject(error) : resolve(value);
      }
      function listener(event) {
        const data = event.data;
        if (event.origin !== origin || !data || data.message_id !== id || data.subject !== subject + ".response") {
          return;
        }
        data.error ? finish(new Error(data.error.code || "error")) : finish(null, data.value);
      }
      window.addEventListener("message", listener);
      frame.postMessage({ subject, message_id: id, ...fields }, origin);
    });
  }

  function giveUp() {
    root.hidden = true;
    fallback.hidden = false;
    const heading = document.getElementById("new-window-heading");
    if (heading) {
      heading.focus();
    }
  }

  async function run() {
    const frame = storageFrame();
    if (!frame) {
      throw new Error("no storage frame");
    }
    const stateKey = "state_" + state;
    const nonceKey = "nonce_" + nonce;
    if (mode === "put") {
      await ask(frame, "lti.put_data", { key: stateKey, value: state });
      await ask(frame, "lti.put_data", { key: nonceKey, value: nonce });
    } else {
      const [storedState, storedNonce] = await Promise.all([
        ask(frame, "lti.get_data", { key: stateKey }),
        ask(frame, "lti.get_data", { key: nonceKey }),
      ]);
      if (storedState !== state || storedNonce !== nonce) {
        throw new Error("this launch was not started in this browser");
      }
    }
    window.location.replace(next);
  }

  run().catch(giveUp);
})();
