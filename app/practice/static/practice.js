// The practice platform's page behaviour; forms still work without it (launches open in
// the frame, and the auto-posting forms show a Continue button).
"use strict";

// "Open in a new window": the launch goes to a new top-level window instead of the frame.
const launchForm = document.getElementById("launch-form");
if (launchForm) {
  const frame = launchForm.target;
  launchForm.addEventListener("submit", () => {
    launchForm.target = document.getElementById("new-window").checked ? "_blank" : frame;
  });
}

// OIDC steps: post the login initiation or the id_token on to the tool at once.
const autopost = document.querySelector("form[data-autosubmit]");
if (autopost) {
  autopost.submit();
}
