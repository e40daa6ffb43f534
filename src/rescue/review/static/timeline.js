// The segment's timeline under the video (the rows as blocks in one lane per speaker, the playhead, the clip's
// waveform; click to seek, drag a block's edge to move that boundary) and the row cuts: split at the playhead,
// merge with the next row, a new row at the playhead, delete, start/end to the playhead, frame steps.
// Without a clip the timeline still shows the rows, and a click places the playhead the cuts use.
// segment.js owns the rows and the editor; it hands this file a `view` (see `const view` there).
"use strict";
const ReviewTimeline = (() => {
  const { api, el, segmentUrl } = Review;
  const MIN_PX_PER_SECOND = 12;  // below this a 1-second row is too thin to grab; the timeline scrolls instead
  const EDGE_PX = 6;             // the grab zone of a block's edge
  const NEW_ROW_SECONDS = 2;
  // One colour per speaker (per lane, in the lanes' order), readable on the dark track and told apart at a glance.
  const COLOURS = ["#4b6cb7", "#2e9e6b", "#c0563f", "#8e5cc7", "#b58a12", "#2a9bb5", "#c2478a", "#6b7a8f"];
  const colour = (lane) => COLOURS[lane % COLOURS.length];
  // What a write did, for undo (undo.js; the adjudication view, read only, has none).
  const remember = (entry) => { if (typeof ReviewUndo !== "undefined") ReviewUndo.record(entry); };
  let view = null;
  let wave = null;               // {duration, fps, rate, peaks} once loaded; null without a clip
  let box = null, track = null, canvas = null, head = null;
  let pxPerSecond = MIN_PX_PER_SECOND;
  let zoom = 1;                  // times the fitted scale; the buttons double or halve it
  let dragging = null;           // {index, which, block, time}
  let lastCaret = null;          // where the cursor last stood in the Dialogue box, for a split of the text
  let cursor = 0;                // the playhead without a clip: where the timeline was last clicked

  const KEYS = [[", .", "frame back/forward"], ["s", "split at playhead"], ["m", "merge with next"], ["n", "new row at playhead"],
    ["i / o", "start / end to playhead"], ["Shift+Del", "delete row"]];

  function duration() {
    const video = view.video;
    const end = Math.max(0, ...view.seg.rows.map((r) => r.end_time || 0));
    return Math.max((wave && wave.duration) || 0, (video && Number.isFinite(video.duration) && video.duration) || 0, end, 1);
  }
  function lanes() {
    const names = [...view.seg.entities];
    for (const r of view.seg.rows) {
      const speaker = view.working(r).primary_speaker || "";
      if (!names.includes(speaker)) names.push(speaker);
    }
    return names.filter((n) => n === "" ? view.seg.rows.some((r) => !view.working(r).primary_speaker) : true);
  }
  const x = (t) => t * pxPerSecond;
  const timeAt = (clientX) => {
    const rect = track.getBoundingClientRect();
    return Math.max(0, Math.min(duration(), (clientX - rect.left) / pxPerSecond));
  };

  // --- drawing -------------------------------------------------------------------------------------------
  function mount(v) {
    view = v;
    box = el("div.timeline", { id: "timeline", "aria-label": "Timeline: click to seek, drag a row's edge to move it" });
    const host = document.querySelector(".media");
    if (!host) return;
    cursor = Math.min(cursor, duration());
    host.after(box, tools());
    draw();
    if (view.video) {
      view.video.addEventListener("timeupdate", playhead);
      view.video.addEventListener("seeked", playhead);
      view.video.addEventListener("loadedmetadata", draw);
      view.video.addEventListener("play", () => requestAnimationFrame(follow));
    }
    if (!wave && view.seg.media.clip) loadWave();
    else paintWave();
  }

  async function loadWave() {
    const answer = await api("GET", segmentUrl(view.seg.sample_id) + "/waveform");
    if (answer.ok) { wave = answer.data; draw(); }
  }

  function draw() {
    if (!box || !view) return;
    const names = lanes();
    pxPerSecond = Math.max(MIN_PX_PER_SECOND, (box.clientWidth || 600) / duration()) * zoom;
    canvas = el("canvas.wave", { id: "waveform", height: 36, width: Math.min(16_000, Math.ceil(x(duration()))) });
    head = el("div.playhead", { id: "playhead" });
    const laneNodes = names.map((name, lane) => {
      const label = el("span.lane-name", { text: name || "(no speaker)" });
      label.style.color = colour(lane);
      return el("div.lane", { "data-speaker": name }, label);
    });
    view.seg.rows.forEach((r, i) => {
      const w = view.working(r);
      const lane = Math.max(0, names.indexOf(w.primary_speaker || ""));
      const block = el("div.block", { id: "block-" + r.row_index, "data-index": String(i),
        title: `#${r.row_index} ${w.primary_speaker || "?"}: ${w.dialogue_cleaned || ""}` },
      el("span.block-label", { text: w.primary_speaker || "?" }),
      el("span.edge.start", { "data-which": "start_time" }), el("span.edge.end", { "data-which": "end_time" }));
      // Through the CSSOM: the Content-Security-Policy refuses style attributes.
      block.style.left = x(r.start_time) + "px";
      block.style.width = Math.max(2, x(r.end_time - r.start_time)) + "px";
      block.style.background = colour(lane);
      if (i === view.selected) block.classList.add("selected");
      laneNodes[lane].append(block);
    });
    track = el("div.track", { onpointerdown: pointerDown }, canvas, ...laneNodes, head);
    track.style.width = canvas.style.width = Math.ceil(x(duration())) + "px";
    box.replaceChildren(track);
    paintWave();
    playhead();
  }

  function paintWave() {
    if (!canvas) return;
    const g = canvas.getContext("2d");
    g.clearRect(0, 0, canvas.width, canvas.height);
    if (!wave || !wave.peaks.length) return;
    const scale = canvas.width / x(duration());
    const middle = canvas.height / 2;
    g.fillStyle = "#6f86b8";
    wave.peaks.forEach((p, i) => {
      const h = Math.max(1, (p / 255) * middle);
      g.fillRect(Math.floor(x(i / wave.rate) * scale), middle - h, Math.max(1, Math.ceil(x(1 / wave.rate) * scale)), 2 * h);
    });
  }

  const at = () => (view.video ? view.video.currentTime : cursor);
  function playhead() {
    if (!head) return;
    const left = x(at());
    head.style.left = left + "px";
    if (left < box.scrollLeft || left > box.scrollLeft + box.clientWidth - 20) box.scrollLeft = Math.max(0, left - box.clientWidth / 3);
  }
  function follow() {
    playhead();
    if (view.video && !view.video.paused) requestAnimationFrame(follow);
  }

  // A row's edit changed it: move its block when its speaker (lane) changed, else only its tooltip.
  function refresh(r) {
    const block = box && document.getElementById("block-" + r.row_index);
    if (!block) return;
    const w = view.working(r);
    if (block.parentElement.dataset.speaker !== (w.primary_speaker || "")) { draw(); return; }
    block.title = `#${r.row_index} ${w.primary_speaker || "?"}: ${w.dialogue_cleaned || ""}`;
  }

  function selected(i) {
    if (!box) return;
    box.querySelectorAll(".block.selected").forEach((n) => n.classList.remove("selected"));
    const r = view.seg.rows[i];
    const block = r && document.getElementById("block-" + r.row_index);
    if (!block) return;
    block.classList.add("selected");
    // Choosing a row brings its block into view (with a clip the seek to its start moves the playhead there).
    if (!view.video) { cursor = r.start_time; playhead(); }
    const left = x(r.start_time);
    if (left < box.scrollLeft || left > box.scrollLeft + box.clientWidth - 40) box.scrollLeft = Math.max(0, left - box.clientWidth / 3);
  }

  // --- pointer: seek, choose, drag an edge -----------------------------------------------------------------
  function pointerDown(e) {
    if (e.button !== 0) return;
    const block = e.target.closest(".block");
    const edge = e.target.closest(".edge");
    const t = timeAt(e.clientX);
    if (edge && block && !view.readOnly) {
      e.preventDefault();
      const index = Number(block.dataset.index);
      const partner = shared(index, edge.dataset.which);
      dragging = { index, which: edge.dataset.which, block, time: t, moved: false,
        partner: partner === null ? null : document.getElementById("block-" + view.seg.rows[partner].row_index) };
      track.setPointerCapture(e.pointerId);
      track.addEventListener("pointermove", pointerMove);
      track.addEventListener("pointerup", pointerUp, { once: true });
      return;
    }
    if (block) view.select(Number(block.dataset.index), false);
    cursor = t;
    if (view.video) view.video.currentTime = t; else playhead();
  }
  function pointerMove(e) {
    if (!dragging) return;
    const r = view.seg.rows[dragging.index];
    dragging.time = Math.round(timeAt(e.clientX) * 1000) / 1000;
    dragging.moved = true;
    const start = dragging.which === "start_time" ? dragging.time : r.start_time;
    const end = dragging.which === "end_time" ? dragging.time : r.end_time;
    dragging.block.style.left = x(Math.min(start, end)) + "px";
    dragging.block.style.width = Math.max(2, x(Math.abs(end - start))) + "px";
    if (dragging.partner) {  // the row on the other side of a shared boundary follows
      const other = view.seg.rows[Number(dragging.partner.dataset.index)];
      const [s, e] = dragging.which === "end_time" ? [dragging.time, other.end_time] : [other.start_time, dragging.time];
      dragging.partner.style.left = x(Math.min(s, e)) + "px";
      dragging.partner.style.width = Math.max(2, x(Math.abs(e - s))) + "px";
    }
    cursor = dragging.time;
    if (view.video) view.video.currentTime = dragging.time; else playhead();
  }
  async function pointerUp() {
    track.removeEventListener("pointermove", pointerMove);
    const done = dragging;
    dragging = null;
    if (done && done.moved) await moveBoundary(done.index, done.which, done.time);
    else draw();
  }

  // --- writes --------------------------------------------------------------------------------------------
  const rowUrl = (r, suffix = "") => `${segmentUrl(view.seg.sample_id)}/rows${r ? "/" + r.row_index : ""}${suffix}${view.copyParam}`;

  // The row on the other side of row i's edge when the two rows meet there (one ends where the other starts), else null.
  function shared(i, which) {
    const rows = view.seg.rows, r = rows[i];
    const j = which === "end_time" ? i + 1 : i - 1;
    const other = rows[j];
    if (!r || !other) return null;
    const meets = which === "end_time" ? other.start_time === r.end_time : other.end_time === r.start_time;
    return meets ? j : null;
  }
  // A boundary two rows share moves for both, in one write (POST .../boundary).
  async function moveShared(first, t) {
    const a = view.seg.rows[first], b = view.seg.rows[first + 1];
    const before = a.end_time;
    if (!(await view.saveAll())) { view.status("Boundary: save or resolve the open edits first", "bad"); draw(); return; }
    const answer = await api("POST", `${segmentUrl(view.seg.sample_id)}/boundary${view.copyParam}`,
      { layout: view.seg.layout, row: a.row_index, version: a.version, next_version: b.version, at: t });
    if (!answer.ok) { await refused(answer, "Boundary not moved"); return; }
    remember({ kind: "boundary", row: a.row_index, before, after: t });
    view.replace(answer.data.segment, view.selected);
    view.status(`Boundary of rows ${a.row_index} and ${b.row_index} moved to ${view.fmtTime(t)}`, "good");
  }

  async function moveBoundary(i, which, time) {
    const r = view.seg.rows[i];
    const t = Math.round(time * 1000) / 1000;
    if (!r || view.readOnly || r[which] === t) { draw(); return; }
    const partner = shared(i, which);
    if (partner !== null) { await moveShared(Math.min(i, partner), t); return; }
    const answer = await api("PUT", rowUrl(r), { version: r.version, fields: { [which]: t } });
    if (answer.status === 200) {
      remember({ kind: "edit", row: r.row_index, before: { [which]: r[which] }, after: { [which]: t } });
      r[which] = t;
      r.values = { ...r.values, [which]: t };
      const p = view.pending()[r.row_index];
      if (p && p.base === r.version) { p.base = answer.data.version; view.persist(); }
      r.version = answer.data.version;
      r.updated_by = view.me;
      view.refreshRow(r);
      if (i === view.selected) view.editor();  // its header shows the span
      draw();
      view.status(`${which === "start_time" ? "Start" : "End"} of row ${r.row_index} moved to ${view.fmtTime(t)}`, "good");
      return;
    }
    await refused(answer, `Boundary not moved`);
  }

  async function refused(answer, what) {
    if (answer.status === 409) {
      await view.reload();
      view.status(`${what}: the rows changed since they were loaded (shown now); try again`, "bad");
      return;
    }
    const problems = answer.data && answer.data.problems;
    view.status(`${what}: ` + (problems ? problems.map((p) => `${p.field}: ${p.message}`).join("; ") : (answer.data && answer.data.detail) || answer.status), "bad");
    draw();
  }

  // Every cut renumbers rows, and unsaved edits are kept by row number: they are saved first.
  // ``record(rows before, answer)`` says what the cut did, for undo.
  async function cut(method, url, body, what, record) {
    if (view.readOnly) return;
    if (!(await view.saveAll())) { view.status(`${what}: save or resolve the open edits first`, "bad"); return; }
    const before = JSON.parse(JSON.stringify(view.seg.rows.map((r) => r.values)));
    const accepted = JSON.parse(JSON.stringify(view.seg.rows.map((r) => r.accepted || [])));
    const answer = await api(method, url, { layout: view.seg.layout, ...body() });
    if (answer.ok) {
      remember({ ...record(before, answer.data), accepted, after: answer.data.segment.rows.map((r) => r.values) });
      view.replace(answer.data.segment, answer.data.row_index - 1);
      view.status(`${what}: done (row ${answer.data.row_index})`, "good");
      return true;
    }
    await refused(answer, what);
    return false;
  }

  const now = () => Math.round(at() * 1000) / 1000;
  // The row a playhead action means: the chosen row when the playhead is inside it, else the row under the playhead.
  function rowAt(t) {
    const chosen = view.seg.rows[view.selected];
    if (chosen && t > chosen.start_time && t < chosen.end_time) return chosen;
    return view.seg.rows.find((r) => t > r.start_time && t < r.end_time) || null;
  }

  function split() {
    const t = now();
    const r = rowAt(t);
    if (!r) { view.status("Split: put the playhead inside a row first", "bad"); return; }
    const text = view.working(r).dialogue_cleaned || "";
    const caret = lastCaret && lastCaret.row === r.row_index && lastCaret.at > 0 && lastCaret.at < text.length ? lastCaret.at : null;
    return cut("POST", rowUrl(r, "/split"), () => ({ version: r.version, at: t, text_at: caret }), `Split row ${r.row_index}`,
      (rows) => ({ kind: "split", row: r.row_index, rows }));
  }
  async function merge() {
    const r = view.seg.rows[view.selected], next = view.seg.rows[view.selected + 1];
    if (!r || !next) { view.status("Merge: the last row has no next row", "bad"); return; }
    // The merged row keeps the first row's speaker and both rows' targets: joining a therapist row and a client
    // row that speaks to the therapist would make the speaker a target of their own row, which verify refuses.
    const first = view.working(r), second = view.working(next);
    const speaker = first.primary_speaker;
    const selfTarget = speaker && [...(first.target || []), ...(second.target || [])].includes(speaker);
    let drop = false;
    if (selfTarget) {
      const choice = await ask(`Merge rows ${r.row_index} (${speaker}) and ${next.row_index} (${second.primary_speaker || "?"})?`,
        `The merged row keeps ${speaker} as its speaker and both rows' targets, so ${speaker} would be a target of their ` +
        "own row: a self-target, which verify refuses.",
        [["merge-fix", `Merge and remove ${speaker} from the targets`, "fix"], ["merge-anyway", "Merge as it is", "as-is"], ["merge-cancel", "Cancel", null]]);
      if (!choice) return;
      drop = choice === "fix";
    }
    return cut("POST", rowUrl(r, "/merge"), () => ({ version: r.version, next_version: next.version, drop_self_target: drop }),
      `Merge rows ${r.row_index}+${next.row_index}`, (rows) => ({ kind: "merge", row: r.row_index, rows }));
  }
  // A question with buttons, in the page's dialog place; resolves to the chosen button's value (null: cancel, Esc).
  function ask(title, text, buttons) {
    const host = document.getElementById("dialog-host");
    return new Promise((resolve) => {
      const close = (value) => { host.replaceChildren(); resolve(value); };
      const dialog = el("div.dialog", { role: "dialog", "aria-modal": "true", "aria-label": title, id: "merge-dialog",
        onkeydown: (e) => { if (e.key === "Escape") { e.stopPropagation(); close(null); } } },
      el("h3", { text: title }), el("p", { text }),
      el("div.actions", {}, ...buttons.map(([id, label, value], i) => el(i === 0 ? "button.primary" : "button",
        { id, type: "button", text: label, onclick: () => close(value) }))));
      host.replaceChildren(dialog);
      dialog.querySelector("button").focus();
    });
  }
  function insert() {
    const start = now();
    const end = Math.min(Math.max(duration(), start + 0.1), start + NEW_ROW_SECONDS);
    return cut("POST", rowUrl(null), () => ({ start_time: start, end_time: Math.round(end * 1000) / 1000 }), "New row",
      (rows, data) => ({ kind: "insert", row: data.row_index, rows }));
  }
  function remove() {
    const r = view.seg.rows[view.selected];
    if (!r || !window.confirm(`Delete row ${r.row_index}? (${view.working(r).primary_speaker || "?"}: ${view.working(r).dialogue_cleaned || ""})`)) return;
    return cut("DELETE", rowUrl(r), () => ({ version: r.version }), `Delete row ${r.row_index}`,
      (rows) => ({ kind: "delete", row: r.row_index, rows }));
  }
  function toPlayhead(which) {
    return moveBoundary(view.selected, which, now());
  }
  function frame(step) {
    const video = view.video;
    if (!video) return;
    video.pause();
    const fps = (wave && wave.fps) || 25;
    video.currentTime = Math.max(0, Math.min(duration(), video.currentTime + step / fps));
  }

  function rezoom(factor) {
    zoom = Math.max(0.25, Math.min(16, zoom * factor));
    draw();
    const left = x(at());  // keep the playhead in view
    box.scrollLeft = Math.max(0, left - box.clientWidth / 2);
  }

  function tools() {
    const disabled = view.readOnly;
    const button = (id, text, title, onclick) => el("button", { id, type: "button", title, text, disabled, onclick });
    return el("div.cut-tools", { id: "cut-tools" },
      el("button", { id: "zoom-out", type: "button", title: "Zoom the timeline out", text: "−", onclick: () => rezoom(0.5) }),
      el("button", { id: "zoom-in", type: "button", title: "Zoom the timeline in", text: "+", onclick: () => rezoom(2) }),
      el("button", { id: "frame-back", type: "button", title: "One frame back (,)", text: "◂ frame", onclick: () => frame(-1) }),
      el("button", { id: "frame-forward", type: "button", title: "One frame forward (.)", text: "frame ▸", onclick: () => frame(1) }),
      ...(view.readOnly ? [] : [button("set-start", "Start ⇤", "Set the row's start to the playhead (i)", () => toPlayhead("start_time")),
      button("set-end", "⇥ End", "Set the row's end to the playhead (o)", () => toPlayhead("end_time")),
      button("split-row", "Split", "Split the row at the playhead (s); the dialogue at the cursor's place in the Dialogue box", split),
      button("merge-row", "Merge ↓", "Merge the row with the next (m)", merge),
      button("insert-row", "New row", "A new row at the playhead, for speech nobody annotated (n)", insert),
      button("delete-row", "Delete", "Delete the row (Shift+Delete)", remove)]));
  }

  document.addEventListener("focusout", (e) => {
    if (e.target && e.target.id === "input-dialogue_cleaned" && view) {
      const r = view.seg.rows[view.selected];
      lastCaret = r ? { row: r.row_index, at: e.target.selectionStart } : null;
    }
  });
  document.addEventListener("keydown", (e) => {
    if (!view || !view.seg) return;
    const typing = e.target.closest && e.target.closest("input, textarea, select");
    if (typing || e.altKey || e.ctrlKey || e.metaKey) return;
    const keys = { ",": () => frame(-1), ".": () => frame(1) };
    if (!view.readOnly) {
      Object.assign(keys, { s: split, m: merge, n: insert, i: () => toPlayhead("start_time"), o: () => toPlayhead("end_time") });
      if (e.shiftKey && e.key === "Delete") { e.preventDefault(); remove(); return; }
    }
    if (keys[e.key]) { e.preventDefault(); keys[e.key](); }
  });
  window.addEventListener("resize", () => { if (box) draw(); });

  // The colour of a speaker's lane and blocks (other views draw rows in the same colours).
  const colourOf = (speaker) => colour(Math.max(0, lanes().indexOf(speaker || "")));

  return { mount, draw, refresh, selected, colourOf, KEYS, state: () => ({ pxPerSecond, zoom, wave: wave && { duration: wave.duration, fps: wave.fps, peaks: wave.peaks.length } }) };
})();
