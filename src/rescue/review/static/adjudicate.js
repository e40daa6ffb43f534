// The adjudication view: every annotator's version beside the draft and the final copy, row by row, with the
// clip to check them against. Picking a cell writes that value into the final copy; "take" writes an
// annotator's whole row, or every row of theirs that differs, the same way (versioned, like any other save).
"use strict";
(() => {
  const { api, el, boot, segmentUrl } = Review;
  const B = boot();
  const app = document.getElementById("app");
  let data = null;
  let mode = "fields";  // fields: only fields that differ | rows: whole rows where copies differ | all
  let video = null;
  let stopAt = null;    // playing one row: pause at its end
  let busy = false;
  let side = null;      // the clip and its timeline: made once, kept across re-renders (and the playhead with them)
  let chosen = 0;       // the final row last chosen on the timeline
  const same = Review.equal;
  const show = (v, f) => Review.show(v, f, "\n");
  const fmtTime = (t) => (typeof t === "number" ? `${Math.floor(t / 60)}:${(t % 60).toFixed(1).padStart(4, "0")}` : "");

  async function load() {
    const answer = await api("GET", segmentUrl(B.segment) + "/versions");
    if (!answer.ok) { app.replaceChildren(el("p.error", { text: answer.data.detail })); return; }
    data = answer.data;
    render();
  }

  // Each annotator's row for final row i (aligned by time on the server where the cuts differ).
  const theirs = (name, i) => (data.aligned ? data.aligned[name][i] : data.copies[name][i]) || null;

  function note(text) { const n = document.getElementById("adj-error"); if (n) n.textContent = text || ""; }
  function problems(answer) {
    return (answer.data.problems || []).map((p) => `${p.field}: ${p.message}`).join("; ") || answer.data.detail || String(answer.status);
  }

  async function write(row, fields) {
    return api("PUT", `${segmentUrl(B.segment)}/rows/${row.row_index}?copy=final`, { version: row.version, fields });
  }
  async function pick(row, field, value) {
    const answer = await write(row, { [field]: value });
    if (answer.ok) { note(""); await load(); return; }
    if (answer.status === 409) { await load(); note("Someone changed the final copy meanwhile; reloaded — pick again."); return; }
    note(problems(answer));
  }

  // The fields where an annotator's row departs from the final one.
  function departures(name, i) {
    const mine = theirs(name, i), row = data.final.rows[i];
    if (!mine) return {};
    const out = {};
    for (const f of data.final.fields) if (!same(mine[f.name], row.values[f.name])) out[f.name] = mine[f.name];
    return out;
  }
  // One write for all of them (POST .../rows/take-fields): every row's version is checked first and each row as
  // a save is, so either every differing row is taken or none is.
  async function takeRows(name, positions) {
    if (busy) return;
    busy = true;
    try {
      const final = data.final;
      const answer = await api("POST", `${segmentUrl(B.segment)}/rows/take-fields?copy=final`, { layout: final.layout, source: name,
        versions: Object.fromEntries(final.rows.map((r) => [r.row_index, r.version])), rows: positions.map((i) => final.rows[i].row_index) });
      await load();
      if (answer.ok) { note(""); status(`Took ${answer.data.taken.length} row(s) from ${name}`); return; }
      note(answer.status === 409 ? "The final copy changed meanwhile; reloaded, nothing was taken — take again." : `Nothing was taken: ${problems(answer)}`);
    } finally { busy = false; }
  }
  // An annotator who re-cut the rows (split, merged, inserted, deleted) has a segmentation the final copy lacks;
  // taking it replaces the final copy's rows with theirs, cut included (POST .../rows/take).
  const spans = (rows) => rows.map((r) => `${r.start_time}-${r.end_time}`).join(",");
  const cutDiffers = (name) => spans(data.copies[name]) !== spans(data.final.rows.map((r) => r.values));
  async function takeCut(name) {
    if (busy || !confirm(`Replace every row of the final copy with ${name}'s rows (${data.copies[name].length} rows, their cut)?`)) return;
    busy = true;
    try {
      const answer = await api("POST", `${segmentUrl(B.segment)}/rows/take?copy=final`, { layout: data.final.layout, source: name });
      await load();
      if (answer.ok) { note(""); status(`The final copy now has ${name}'s ${data.final.rows.length} rows`); }
      else note(answer.status === 409 ? "The final copy's rows changed meanwhile; reloaded — take again." : problems(answer));
    } finally { busy = false; }
  }
  function status(text) { const n = document.getElementById("adj-status"); if (n) n.textContent = text; }

  // --- the clip ----------------------------------------------------------------------------------------
  function player() {
    const media = data.final.media || {};
    if (!media.clip) { video = null; return el("div.media.none", {}, el("p.muted", { text: "No clip for this segment." })); }
    video = el("video", { id: "video", controls: true, preload: "auto", src: media.clip });
    if (media.subtitles) video.append(el("track", { kind: "subtitles", src: media.subtitles, srclang: "en", label: "Subtitles", default: true }));
    video.addEventListener("timeupdate", () => {
      if (stopAt !== null && video.currentTime >= stopAt) { video.pause(); stopAt = null; }
      const t = video.currentTime;
      document.getElementById("clock").textContent = fmtTime(t);
      document.querySelectorAll("tr.row-head").forEach((tr) => {
        tr.classList.toggle("playing", t >= Number(tr.dataset.start) && t < Number(tr.dataset.end));
      });
    });
    return el("div.media.adj-media", {}, video, el("div.controls", {}, el("span.muted", { id: "clock" })));
  }
  // The timeline (timeline.js, as in the segment view) over the final copy's rows, read only: a click on a block
  // seeks there and brings that row's comparison into view.
  const timelineView = {
    get seg() { return data.final; }, get selected() { return chosen; }, get video() { return video; },
    readOnly: true, me: B.me, copyParam: "?copy=final",
    working: (r) => r.values, status: (text) => status(text), fmtTime,
    select(i) {
      chosen = i;
      ReviewTimeline.selected(i);
      const head = document.getElementById("adj-row-" + data.final.rows[i].row_index);
      if (head) head.scrollIntoView({ block: "start" });
    },
  };
  function sidePanel() {
    if (side) return side;
    side = el("div.adj-side", {}, player());
    return side;
  }

  // Each annotator's rows as a strip under the final copy's timeline, on the same scale and scrolled with it:
  // blocks in the speaker's colour, labelled with the speaker, so cuts and speakers that differ show at a glance.
  function copyTimelines() {
    const box = document.getElementById("timeline"), track = box && box.querySelector(".track");
    if (!track) return;
    const scale = ReviewTimeline.state().pxPerSecond;
    const strips = data.annotators.map((name) => {
      const strip = el("div.lane.copy-lane", { "data-copy": name }, el("span.lane-name", { text: name }));
      data.copies[name].forEach((row, i) => {
        const speaker = row.primary_speaker || "";
        const block = el("div.block.copy-block", { title: `${name} #${i + 1} ${speaker || "?"}: ${row.dialogue_cleaned || ""}`, "data-speaker": speaker },
          el("span.block-label", { text: speaker || "?" }));
        block.style.left = row.start_time * scale + "px";
        block.style.width = Math.max(2, (row.end_time - row.start_time) * scale) + "px";
        block.style.background = ReviewTimeline.colourOf(speaker);
        strip.append(block);
      });
      return strip;
    });
    const inner = el("div.track", {}, ...strips);
    inner.style.width = track.style.width;
    const holder = el("div.timeline.copy-timelines", { id: "copy-timelines", "aria-label": "Each annotator's rows" }, inner);
    document.getElementById("copy-timelines")?.remove();
    box.after(holder);
    holder.scrollLeft = box.scrollLeft;
    box.onscroll = () => { holder.scrollLeft = box.scrollLeft; };
  }

  function playRow(row) {
    if (!video) return;
    video.currentTime = row.start_time;
    stopAt = row.end_time;
    video.play();
  }

  // --- the table ---------------------------------------------------------------------------------------
  function render() {
    const first = !side;
    sidePanel();  // first: the rows' play buttons need to know whether there is a clip
    const final = data.final;
    const names = data.annotators;
    const body = [];
    let shownRows = 0;
    final.rows.forEach((row, i) => {
      const fields = final.fields.map((f) => {
        const versions = names.map((n) => (theirs(n, i) || {})[f.name]);
        const copiesDiffer = versions.some((v) => !same(v, versions[0]));
        const differs = copiesDiffer || versions.some((v) => !same(v, row.values[f.name]));
        return { f, versions, copiesDiffer, differs };
      });
      const rowDiffers = fields.some((x) => x.copiesDiffer);
      const shown = mode === "all" ? fields : mode === "rows" ? (rowDiffers ? fields : []) : fields.filter((x) => x.differs);
      if (!shown.length) return;
      shownRows += 1;
      const speaker = row.values.primary_speaker || "";
      body.push(el("tr.row-head" + (rowDiffers ? ".copies-differ" : ""), { id: "adj-row-" + row.row_index, "data-start": String(row.start_time), "data-end": String(row.end_time) },
        el("th", { colspan: String(names.length + 4) },
          el("span.row-title", { text: `Row ${row.row_index}` }), " ",
          el("span.muted", { text: `${fmtTime(row.start_time)}–${fmtTime(row.end_time)} · ${speaker}` }), " ",
          video ? el("button.link", { type: "button", class: "play-row", text: "▶ play", title: "Play this row", onclick: () => playRow(row) }) : "",
          ...names.map((n) => (Object.keys(departures(n, i)).length
            ? el("button.take-row", { type: "button", "data-name": n, text: `take ${n}'s row`, title: `Write ${n}'s version of every field of this row into the final copy`,
              onclick: () => takeRows(n, [i]) })
            : "")))));
      for (const { f, versions, differs } of shown) {
        const cell = (value, label) => {
          const chosen = same(value, row.values[f.name]);
          return el("td" + (differs ? ".differs" : "") + (chosen ? ".chosen" : ""), {},
            el("div.value", { text: show(value, f) }),
            chosen ? el("span.badge.verified", { text: "final" }) :
              el("button.link", { type: "button", text: "use " + label, onclick: () => pick(row, f.name, value) }));
        };
        body.push(el("tr", {}, el("td", { text: String(row.row_index) }), el("th.field-name", { text: f.title }),
          cell(row.draft[f.name], "draft"), ...names.map((n, j) => cell(versions[j], n)),
          el("td", {}, el("div.value", { text: show(row.values[f.name], f) }))));
      }
    });
    const filter = el("select", { id: "adj-filter", "aria-label": "Which rows", onchange: (e) => { mode = e.target.value; render(); } },
      el("option", { value: "fields", text: "Fields that differ" }),
      el("option", { value: "rows", text: "Rows where the copies differ" }),
      el("option", { value: "all", text: "Every row" }));
    filter.value = mode;
    const head = el("div.seg-head", {}, el("div", {}, el("h1", { text: "Adjudicate " + final.sample_id }),
      el("span.muted", { text: names.length ? `Annotators: ${names.map((n) => `${n} (${data.states[n]})`).join(", ")}` : "No annotator has worked on this segment yet." }),
      " ", el("span.badge." + final.status.status, { text: "final: " + final.status.status })),
    el("div.actions", {},
      el("label.inline", {}, "Show ", filter),
      typeof ReviewGuide !== "undefined" ? el("button", { type: "button", id: "guidelines-toggle", text: "Guidelines", onclick: () => ReviewGuide.toggle() }) : null,
      el("a.button", { href: "/segments/" + encodeURIComponent(final.sample_id) + "?copy=final", text: "Edit final copy" }),
      el("button.primary", { id: "verify-final", type: "button", text: "Verify final", onclick: async () => {
        const answer = await api("POST", `${segmentUrl(B.segment)}/verify?copy=final`);
        if (answer.ok) await load(); else note((answer.data.problems || []).map((p) => `row ${p.row_index ?? "-"} ${p.field}: ${p.message}`).join("; ") || answer.data.detail);
      } })));
    const columns = el("tr", {}, el("th", { text: "Row" }), el("th", { text: "Field" }), el("th", { text: "Draft" }),
      ...names.map((n) => el("th", {}, n, " ", el("button.link.take-all", { type: "button", "data-name": n, text: "take all",
        title: `Write ${n}'s version of every row where it differs into the final copy`,
        onclick: () => { if (confirm(`Write ${n}'s version of every differing row into the final copy?`)) takeRows(n, final.rows.map((_, i) => i)); } }),
        cutDiffers(n) ? el("button.link.take-cut", { type: "button", "data-name": n, text: "take cut",
          title: `${n} re-cut the rows: replace the final copy's rows with ${n}'s, their cut included`, onclick: () => takeCut(n) }) : null)),
      el("th", { text: "Final" }));
    const guideOpen = !(document.getElementById("guidelines") || { hidden: true }).hidden;
    app.replaceChildren(head, el("div.adj-body", {}, side, el("div", {},
      el("p.error", { id: "adj-error" }), el("p.save-status.good", { id: "adj-status", "aria-live": "polite" }),
      el("p.muted", { id: "adj-count", text: `${shownRows} of ${final.rows.length} rows shown` }),
      el("table.grid.adj", {}, el("thead", {}, columns),
        el("tbody", {}, ...(body.length ? body : [el("tr", {}, el("td", { colspan: String(names.length + 4), text: "The annotators agree everywhere; verify the final copy or open it to edit." }))]))))),
    typeof ReviewGuide !== "undefined" ? ReviewGuide.panel(final.labels) : "");
    if (guideOpen) ReviewGuide.toggle(true);
    if (typeof ReviewTimeline !== "undefined" && video) {
      if (first) ReviewTimeline.mount(timelineView); else ReviewTimeline.draw();
      copyTimelines();
    }
  }
  load();
})();
