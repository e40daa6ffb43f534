// The adjudication view: every annotator's version beside the draft and the final copy, row by row;
// picking a cell writes that value into the final copy (versioned like any other save).
"use strict";
(() => {
  const { api, el, boot, segmentUrl } = Review;
  const B = boot();
  const app = document.getElementById("app");
  let data = null;
  let onlyDiffering = true;
  const same = Review.equal;
  const show = (v, f) => Review.show(v, f, "\n");
  async function load() {
    const answer = await api("GET", segmentUrl(B.segment) + "/versions");
    if (!answer.ok) { app.replaceChildren(el("p.error", { text: answer.data.detail })); return; }
    data = answer.data;
    render();
  }

  async function pick(row, field, value, note) {
    const answer = await api("PUT", `${segmentUrl(B.segment)}/rows/${row.row_index}?copy=final`, { version: row.version, fields: { [field]: value } });
    if (answer.ok) { await load(); note.textContent = ""; return; }
    if (answer.status === 409) { note.textContent = "Someone changed the final copy meanwhile; reloaded — pick again."; await load(); return; }
    note.textContent = (answer.data.problems || []).map((p) => `${p.field}: ${p.message}`).join("; ") || answer.data.detail;
  }

  function render() {
    const final = data.final;
    const names = data.annotators;
    const note = el("p.error", { id: "adj-error" });
    const body = [];
    final.rows.forEach((row, i) => {
      for (const f of final.fields) {
        const versions = names.map((n) => data.copies[n][i][f.name]);
        const differs = versions.some((v) => !same(v, versions[0])) || versions.some((v) => !same(v, row.values[f.name]));
        if (onlyDiffering && !differs) continue;
        const cell = (value, label) => {
          const chosen = same(value, row.values[f.name]);
          return el("td" + (differs ? ".differs" : "") + (chosen ? ".chosen" : ""), {},
            el("div.value", { text: show(value, f) }),
            chosen ? el("span.badge.verified", { text: "final" }) :
              el("button.link", { type: "button", text: "use " + label, onclick: () => pick(row, f.name, value, note) }));
        };
        body.push(el("tr", {}, el("td", { text: String(row.row_index) }), el("th.field-name", { text: f.title }),
          cell(row.draft[f.name], "draft"), ...names.map((n, j) => cell(versions[j], n)),
          el("td", {}, el("div.value", { text: show(row.values[f.name], f) }))));
      }
    });
    app.replaceChildren(
      el("div.seg-head", {}, el("div", {}, el("h1", { text: "Adjudicate " + final.sample_id }),
        el("span.muted", { text: names.length ? `Annotators: ${names.map((n) => `${n} (${data.states[n]})`).join(", ")}` : "No annotator has worked on this segment yet." }),
        " ", el("span.badge." + final.status.status, { text: "final: " + final.status.status })),
      el("div.actions", {},
        el("label.inline", {}, el("input", { type: "checkbox", id: "only-differing", checked: onlyDiffering, onchange: (e) => { onlyDiffering = e.target.checked; render(); } }), " only fields that differ"),
        el("a.button", { href: "/segments/" + encodeURIComponent(final.sample_id) + "?copy=final", text: "Edit final copy" }),
        el("button.primary", { id: "verify-final", type: "button", text: "Verify final", onclick: async () => {
          const answer = await api("POST", `${segmentUrl(B.segment)}/verify?copy=final`);
          if (answer.ok) await load(); else note.textContent = (answer.data.problems || []).map((p) => `row ${p.row_index ?? "-"} ${p.field}: ${p.message}`).join("; ");
        } }))),
      note,
      el("table.grid.adj", {}, el("thead", {}, el("tr", {}, el("th", { text: "Row" }), el("th", { text: "Field" }), el("th", { text: "Draft" }),
        ...names.map((n) => el("th", { text: n })), el("th", { text: "Final" }))),
      el("tbody", {}, ...(body.length ? body : [el("tr", {}, el("td", { colspan: String(names.length + 4), text: "The annotators agree everywhere; verify the final copy or open it to edit." }))]))));
  }
  load();
})();
