"use strict";
(() => {
  const form = document.getElementById("login");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const answer = await Review.api("POST", "/api/login", { name: data.get("name"), password: data.get("password") });
    if (answer.ok) {
      location.href = form.dataset.next || "/";
    } else {
      document.getElementById("login-error").textContent =
        typeof answer.data === "object" && answer.data ? answer.data.detail : "Could not log in";
    }
  });
})();
