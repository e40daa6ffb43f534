// The accounts page (admins): add, new password, disable, enable; each through the JSON API, then a reload.
"use strict";
(() => {
  const { api } = Review;
  const said = document.getElementById("admin-status");
  async function run(method, url, body, done) {
    const answer = await api(method, url, body);
    if (answer.ok) { said.textContent = done; said.className = "save-status good"; setTimeout(() => location.reload(), 400); }
    else { said.textContent = (answer.data && answer.data.detail) || String(answer.status); said.className = "save-status bad"; }
  }
  const user = (name) => "/api/users/" + encodeURIComponent(name);
  for (const row of document.querySelectorAll("#users tbody tr")) {
    const name = row.dataset.name;
    row.querySelector("form.passwd").addEventListener("submit", (event) => {
      event.preventDefault();
      run("POST", user(name) + "/password", { password: new FormData(event.target).get("password") }, `New password set for ${name}`);
    });
    const toggle = row.querySelector("button.disable, button.enable");
    if (toggle) toggle.addEventListener("click", () => {
      const disabling = toggle.classList.contains("disable");
      if (disabling && !confirm(`Disable ${name}? Their work stays; they can no longer log in.`)) return;
      run("POST", user(name) + (disabling ? "/disable" : "/enable"), undefined, `${name} ${disabling ? "disabled" : "enabled"}`);
    });
  }
  document.getElementById("add-user").addEventListener("submit", (event) => {
    event.preventDefault();
    const data = new FormData(event.target);
    run("POST", "/api/users", { name: data.get("name"), role: data.get("role"), password: data.get("password") }, `Added ${data.get("name")}`);
  });
})();
