// Dynamic Registration's last step: tell the LMS window that opened us that we are done.
(function () {
  "use strict";
  var button = document.getElementById("close-registration");
  function close() {
    var lms = window.opener || window.parent;
    if (lms && lms !== window) {
      // The message carries no secret, and the LMS's origin may differ from its issuer.
      lms.postMessage({ subject: "org.imsglobal.lti.close" }, "*");
    }
  }
  if (button) {
    button.addEventListener("click", close);
  }
})();
