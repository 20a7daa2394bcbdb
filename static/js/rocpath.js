// rocpath's own script, served from static files: the Content-Security-Policy allows no
// inline script or event handler, so behaviour that markup asks for is wired up here.
"use strict";

// <select data-autosubmit> submits its form when changed (the dashboard's status filter).
document.addEventListener("change", (event) => {
  const field = event.target;
  if (field instanceof HTMLSelectElement && field.hasAttribute("data-autosubmit") && field.form) {
    field.form.requestSubmit();
  }
});
