// The practice platform's page behaviour; forms still work without it (launches open in
// the frame, and the auto-posting forms show a Continue button).
"use strict";

// "Open in a new window": launch forms target a new top-level window instead of the frame.
const newWindow = document.getElementById("new-window");
if (newWindow) {
  for (const form of document.querySelectorAll("form[data-launch]")) {
    const frame = form.target;
    form.addEventListener("submit", () => {
      form.target = newWindow.checked ? "_blank" : frame;
      let flag = form.querySelector("input[name=window]");
      if (newWindow.checked && !flag) {
        flag = Object.assign(document.createElement("input"), { type: "hidden", name: "window", value: "1" });
        form.appendChild(flag);
      } else if (!newWindow.checked && flag) {
        flag.remove();
      }
    });
  }
}

// OIDC steps: post the login initiation or the id_token on to the tool at once.
const autopost = document.querySelector("form[data-autosubmit]");
if (autopost) {
  autopost.submit();
}
