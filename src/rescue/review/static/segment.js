// The segment view: the clip beside the rows, an editor for the chosen row, edits kept in localStorage
// until the server confirms them, and the conflict dialog when someone saved first.
"use strict";
(() => {
  const { api, el, boot, segmentUrl, equal } = Review;
  const B = boot();
  const app = document.getElementById("app");
  const storeKey = `rescue-review:${B.me}:${B.copy}:${B.segment}`;
  const SPEEDS = [0.5, 0.75, 1, 1.25, 1.5, 2];
  let seg = null;          // the segment as the server last sent it
  let selected = Math.max(0, Number((location.hash.match(/^#row-(\d+)$/) || [0, 1])[1]) - 1);  // position of the chosen row (a search hit links to #row-N)
  let loop = false;
  let pending = load();    // row_index -> {base, fields, accepted, acknowledged?}
  let video = null;
  let readOnly = false;
  const copyParam = B.copy && B.copy !== "mine" ? `?copy=${encodeURIComponent(B.copy)}` : "";

  function load() {
    try { return JSON.parse(localStorage.getItem(storeKey) || "{}"); } catch (e) { return {}; }
  }
  function persist() {
    for (const [k, v] of Object.entries(pending)) {
      if (!Object.keys(v.fields).length && !v.accepted.length && !v.acknowledged) delete pending[k];
    }
    if (Object.keys(pending).length) localStorage.setItem(storeKey, JSON.stringify(pending));
    else localStorage.removeItem(storeKey);
  }

  const row = (i = selected) => seg.rows[i];
  const same = equal;
  function working(r) {
    const p = pending[r.row_index];
    return p ? { ...r.values, ...p.fields } : r.values;
  }
  function pendingFor(r) {
    if (!pending[r.row_index]) pending[r.row_index] = { base: r.version, layout: seg.layout || 0, fields: {}, accepted: [] };
    return pending[r.row_index];
  }
  function setField(r, name, value) {
    const p = pendingFor(r);
    if (same(value, r.values[name])) delete p.fields[name]; else p.fields[name] = value;
    persist();
    refreshRowItem(r);
    status(Object.keys(pending).length ? "Unsaved edits (kept in this browser)" : "");
  }
  function fmtTime(t) {
    if (t === null || t === undefined) return "";
    const m = Math.floor(t / 60), s = (t - m * 60).toFixed(1).padStart(4, "0");
    return `${m}:${s}`;
  }
  const fieldSpec = (name) => seg && seg.fields.find((f) => f.name === name);
  const show = (value, name) => Review.show(value, name && fieldSpec(name));
  function status(text, kind) {
    const node = document.getElementById("save-status");
    if (node) { node.textContent = text; node.className = "save-status " + (kind || ""); }
  }

  // --- loading ---------------------------------------------------------------------------------------
  async function fetchSegment() {
    const answer = await api("GET", segmentUrl(B.segment) + copyParam);
    if (!answer.ok) {
      app.replaceChildren(el("p.error", { text: answer.data && answer.data.detail || "Could not load the segment" }));
      return;
    }
    seg = answer.data;
    readOnly = seg.copy !== B.me && seg.copy !== "final";
    setAside();
    render();
  }

  // Unsaved edits are kept by row number, and a cut (in another tab) renumbers rows: edits made before the
  // current cut are set aside and shown beside the rows, never applied to whatever row now has their number.
  const asideKey = storeKey + ":aside";
  const asideList = () => { try { return JSON.parse(localStorage.getItem(asideKey) || "[]"); } catch (e) { return []; } };
  function setAside() {
    const aside = asideList();
    for (const [k, p] of Object.entries(pending)) {
      if ((p.layout || 0) === (seg.layout || 0)) continue;
      if (Object.keys(p.fields).length) aside.push({ row: Number(k), fields: p.fields });
      delete pending[k];
    }
    persist();
    if (aside.length) localStorage.setItem(asideKey, JSON.stringify(aside)); else localStorage.removeItem(asideKey);
  }
  function asideNotice() {
    const aside = asideList();
    if (!aside.length) return null;
    return el("div.set-aside", { id: "set-aside", role: "status" },
      el("h3", { text: "Unsaved edits from before the rows were re-cut" }),
      el("p.muted", { text: "Row numbers have changed since: copy what you still need into the right row." }),
      el("ul", {}, ...aside.map((a) => el("li", {}, el("b", { text: `row ${a.row}: ` }),
        Object.entries(a.fields).map(([name, value]) => `${name} = ${show(value, name)}`).join("; ")))),
      el("button", { type: "button", id: "dismiss-aside", text: "Dismiss", onclick: () => { localStorage.removeItem(asideKey); render(); } }));
  }

  // --- layout ----------------------------------------------------------------------------------------
  function render() {
    const head = el("div.seg-head",
      {},
      el("div", {},
        el("h1", { text: seg.sample_id }),
        el("span.muted", { text: `${seg.scenario} · ${seg.participants.join(", ")} · ${seg.rows.length} rows · copy: ${seg.copy}` }),
        " ",
        el("span.badge." + seg.status.status, { id: "seg-status", text: seg.status.status + (seg.status.reason ? ` (${seg.status.reason})` : "") })),
      el("div.actions", {},
        B.previous ? el("a.button", { href: "/segments/" + encodeURIComponent(B.previous), text: "← Previous" }) : null,
        B.next ? el("a.button", { href: "/segments/" + encodeURIComponent(B.next), text: "Next →" }) : null,
        copySwitch(),
        el("button", { id: "guidelines-toggle", type: "button", onclick: () => ReviewGuide.toggle(), title: "Guidelines and label definitions (g)", text: "Guidelines" }),
        el("button.primary", { id: "verify", type: "button", onclick: verify, disabled: readOnly, title: "Verify segment (Shift+V)", text: "Verify segment" }),
        seg.status.status === "open" ? null : el("button", { id: "reopen", type: "button", disabled: readOnly, text: "Reopen",
          title: "Back to open: verify or discard again later", onclick: async () => {
            const answer = await api("POST", `${segmentUrl(B.segment)}/reopen${copyParam}`);
            if (answer.ok) await fetchSegment();
          } }),
        el("button.danger", { id: "discard", type: "button", onclick: discardDialog, disabled: readOnly, text: "Discard…" })));

    const left = el("section.left", {}, asideNotice(), mediaBlock(), rowList(), segmentNotes());
    const right = el("section.right", { id: "editor" });
    const guideOpen = !(document.getElementById("guidelines") || { hidden: true }).hidden;
    app.replaceChildren(head, el("div.seg-body", {}, left, right), el("div#dialog-host"), ReviewGuide.panel(seg.labels),
      ReviewGuide.shortcutBar(SHORTCUTS));
    if (guideOpen) ReviewGuide.toggle(true);
    ReviewTimeline.mount(view);
    renderEditor();
    selectRow(Math.min(selected, seg.rows.length - 1), false);
  }

  function copySwitch() {
    if (B.role === "annotator") return null;
    const select = el("select", { id: "copy", "aria-label": "Which copy",
      onchange: (e) => { location.href = location.pathname + (e.target.value === "mine" ? "" : "?copy=" + encodeURIComponent(e.target.value)); } },
    el("option", { value: "mine", text: "My copy" }), el("option", { value: "final", text: "Final (adjudicated)" }),
    ...seg.assigned.filter((n) => n !== B.me).map((n) => el("option", { value: n, text: `${n} (read only)` })));
    select.value = B.copy === B.me ? "mine" : B.copy;
    return el("label.inline", {}, "Copy ", select,
      el("a.button", { href: location.pathname + "/adjudicate", text: "Adjudicate" }));
  }

  function mediaBlock() {
    if (!seg.media.clip) return el("div.media.none", {}, el("p.muted", { text: "No clip for this segment (draft only): review against the transcript." }));
    video = el("video", { id: "video", controls: true, preload: "auto", src: seg.media.clip });
    if (seg.media.subtitles) video.append(el("track", { kind: "subtitles", src: seg.media.subtitles, srclang: "en", label: "Subtitles", default: true }));
    const speed = el("select", { id: "speed", "aria-label": "Playback speed", onchange: (e) => { video.playbackRate = Number(e.target.value); } },
      ...SPEEDS.map((s) => el("option", { value: String(s), text: `${s}×`, selected: s === 1 })));
    const loopBox = el("input", { type: "checkbox", id: "loop", onchange: (e) => { loop = e.target.checked; } });
    video.addEventListener("timeupdate", onTime);
    video.addEventListener("play", () => requestAnimationFrame(tick));
    return el("div.media", {}, video,
      el("div.controls", {},
        el("button", { type: "button", onclick: togglePlay, title: "Play / pause (space)", text: "Play/Pause" }),
        el("button", { type: "button", onclick: () => seekRow(true), title: "Replay the row (r)", text: "Replay row" }),
        el("label.inline", {}, loopBox, " Loop row (l)"),
        el("label.inline", {}, "Speed ", speed),
        el("span.muted", { id: "clock" })),
      el("p.cue", { id: "cue", "aria-live": "off" }));
  }

  function tick() {
    if (!video || video.paused) return;
    keepInLoop();
    requestAnimationFrame(tick);
  }
  function keepInLoop() {
    const r = row();
    if (loop && r && (video.currentTime >= r.end_time || video.currentTime < r.start_time - 0.25)) {
      video.currentTime = r.start_time;
    }
  }
  function onTime() {
    keepInLoop();
    const t = video.currentTime;
    document.getElementById("clock").textContent = fmtTime(t);
    let playing = null;
    seg.rows.forEach((r, i) => {
      const on = t >= r.start_time && t < r.end_time;
      const item = document.getElementById("row-" + r.row_index);
      if (item) item.classList.toggle("playing", on);
      if (on && playing === null) playing = i;
    });
    const cue = document.getElementById("cue");
    if (playing === null) { cue.textContent = ""; return; }
    const w = working(seg.rows[playing]);
    cue.replaceChildren(el("b", { text: w.primary_speaker + ": " }), w.dialogue_cleaned || "");
  }
  function togglePlay() { if (video) (video.paused ? video.play() : video.pause()); }
  function seekRow(play) {
    if (!video) return;
    video.currentTime = row().start_time;
    if (play) video.play();
  }

  function rowList() {
    const body = el("tbody");
    seg.rows.forEach((r, i) => body.append(rowItem(r, i)));
    return el("div.rows", {}, el("table.grid.rowlist", {},
      el("thead", {}, el("tr", {}, ...["#", "Time", "Speaker", "Target", "Text", "Dur.", "Review", "Edit", ""].map((h) => el("th", { text: h })))),
      body));
  }
  function reviewState(r) {
    const n = seg.fields.length, done = new Set([...r.accepted, ...(pending[r.row_index] || { accepted: [] }).accepted]).size;
    return done >= n ? "reviewed" : done ? `${done}/${n}` : "—";
  }
  function editState(r) {
    const p = pending[r.row_index];
    if (p && (Object.keys(p.fields).length || p.accepted.length)) return "unsaved";
    // A cut (split, merge, new row) or a moved boundary shows as such: the span is no longer the draft's.
    const span = r.origin === "re-cut" ? "re-cut"
      : r.origin === "re-timed" || r.start_time !== r.draft.start_time || r.end_time !== r.draft.end_time ? "re-timed" : "";
    const edited = seg.fields.some((f) => !same(r.values[f.name], r.draft[f.name])) ? "edited" : "";
    return [span, edited].filter(Boolean).join(" · ") || "draft";
  }
  function rowItem(r, i) {
    const w = working(r);
    const tr = el("tr", { id: "row-" + r.row_index, tabindex: "0", "data-index": String(i),
      onclick: () => selectRow(i, true), onkeydown: (e) => { if (e.key === "Enter") { selectRow(i, true); focusEditor(); } } },
    el("td", { text: String(r.row_index) }),
    el("td.num", { text: fmtTime(r.start_time) }),
    el("td", { text: w.primary_speaker }),
    el("td", { text: (w.target || []).join(", ") }),
    el("td.text", { text: w.dialogue_cleaned || "", title: w.dialogue_cleaned || "" }),
    el("td.num", { text: (r.end_time - r.start_time).toFixed(1) + "s" }),
    el("td", {}, el("span.badge." + reviewState(r).replace(/[^a-z]/g, "") || "none", { text: reviewState(r) })),
    el("td", {}, el("span.badge." + editState(r).split(" ")[0], { text: editState(r) })),
    el("td", { title: [...r.problems.map((p) => p.message), ...openChecks(r).map((c) => `${c.field}: ${c.message}`)].join("\n") },
      r.problems.length + openChecks(r).length ? el("span.warn", { text: "⚠ " + (r.problems.length + openChecks(r).length) }) : ""));
    if (i === selected) tr.classList.add("selected");
    return tr;
  }
  function refreshRowItem(r) {
    const old = document.getElementById("row-" + r.row_index);
    const i = seg.rows.indexOf(r);
    if (old) old.replaceWith(rowItem(r, i));
    ReviewTimeline.refresh(r);
  }

  function selectRow(i, seek) {
    if (i < 0 || i >= seg.rows.length) return;
    const previous = selected;
    selected = i;
    document.querySelectorAll(".rowlist tr.selected").forEach((n) => n.classList.remove("selected"));
    const item = document.getElementById("row-" + row().row_index);
    if (item) { item.classList.add("selected"); item.scrollIntoView({ block: "nearest" }); }
    ReviewTimeline.selected(i);
    if (previous !== i || !document.getElementById("field-primary_speaker")) renderEditor();
    if (seek) seekRow(false);
  }
  function focusEditor() {
    const first = document.querySelector("#editor select, #editor input, #editor textarea");
    if (first) first.focus();
  }

  // --- the editor ------------------------------------------------------------------------------------
  // The fields a row's role calls for, after the build's own rules: a Therapist row carries no utterance
  // type; on a client row the support strategy and the relation fields are rare. Those stay folded under
  // "more fields" unless the row (or its draft) fills them.
  const FOLDED_ON_CLIENT = new Set(["support_strategy", "relation_pattern", "relation_pattern_reason",
    "relation_pattern_evidence_rows", "relation_cycle_state", "relation_cycle_reason", "relation_cycle_evidence_rows"]);
  const FOLDED_ON_THERAPIST = new Set(["utterance_type"]);
  const filled = (v) => !(v === null || v === undefined || v === "" || (Array.isArray(v) && !v.length));
  function folded(f, r, w) {
    const rare = w.primary_speaker === "Therapist" ? FOLDED_ON_THERAPIST : FOLDED_ON_CLIENT;
    return rare.has(f.name) && !filled(w[f.name]) && !filled(r.draft[f.name]);
  }
  const rowAccepted = (r) => seg.fields.every((f) => r.accepted.includes(f.name));

  function renderEditor() {
    const r = row();
    const editor = document.getElementById("editor");
    if (!editor || !r) return;
    const w = working(r);
    const rowComments = seg.comments.filter((c) => c.row_index === r.row_index);
    const groups = new Map();
    const more = [];
    for (const f of seg.fields) {
      const block = fieldBlock(r, f, w);
      if (folded(f, r, w)) { more.push([f, block]); continue; }
      if (!groups.has(f.dimension)) groups.set(f.dimension, []);
      groups.get(f.dimension).push(block);
    }
    const role = w.primary_speaker === "Therapist" ? "therapist" : "client";
    editor.replaceChildren(...[
      el("div.editor-head", {},
        el("h2", { text: `Row ${r.row_index}` }),
        el("span.muted", {}, `${w.primary_speaker || "?"} · ${fmtTime(r.start_time)}–${fmtTime(r.end_time)} · v${r.version}` + (r.updated_by ? ` · ${r.updated_by}` : ""),
          rowAccepted(r) ? el("span.badge.reviewed", { id: "row-accepted", text: "accepted" }) : ""),
        el("div.actions", {},
          el("button.primary", { id: "save", type: "button", onclick: () => queueSave(r), disabled: readOnly, title: "Save (Ctrl+S)", text: "Save" }),
          el("button", { id: "accept-row", type: "button", onclick: () => acceptRow(r), disabled: readOnly, title: "Accept every field, save, go to the next row (a)", text: "Accept row" }),
          el("button", { id: "history", type: "button", onclick: () => history(r), text: "History" })),
        el("p", { id: "save-status", class: "save-status" })),
      r.problems.length ? el("ul.problems", {}, ...r.problems.map((p) => el("li", { text: `${p.field ? p.field + ": " : ""}${p.message} (${p.source})` }))) : null,
      (r.checks || []).length ? el("ul.checks#checks", {}, ...r.checks.map((c) => checkItem(r, c))) : null,
      el("div#conflict"),
      ...[...groups].map(([name, blocks]) => el("fieldset.dimension", {}, el("legend", { text: name }), ...blocks)),
      more.length ? el("details.more-fields", { id: "more-fields" },
        el("summary", { text: `${more.length} more field${more.length > 1 ? "s" : ""}, rare on a ${role} row: ${more.map(([f]) => f.title).join(", ")}` }),
        ...more.map(([, block]) => block)) : null,
      el("details.comments", { open: rowComments.length > 0 }, el("summary", { text: `Row comments (${rowComments.length})` }),
        el("ul", {}, ...rowComments.map((c) => el("li", {}, el("b", { text: c.author }), " ", c.text))),
        commentForm(r.row_index)),
      el("div#audit")].filter(Boolean));
    if (Object.keys(pending[r.row_index]?.fields || {}).length) status("Unsaved edits (kept in this browser)");
  }

  function fieldBlock(r, f, w) {
    const value = w[f.name];
    const draft = r.draft[f.name];
    const draftBox = el("div.draft-box", { id: "draft-" + f.name });
    const holder = el("div.control", { id: "field-" + f.name });
    const emptyList = f.kind === "list" && !filled(value);
    const block = el("div.field" + (emptyList ? ".empty-list" : ""), { id: "block-" + f.name },
      el("label.fname", { for: "input-" + f.name, text: f.title }), holder, draftBox);
    const update = (v) => {
      setField(r, f.name, v);
      if (f.name === "primary_speaker") { renderEditor(); document.getElementById("input-primary_speaker")?.focus(); return; }
      drawDraft();
    };
    function drawDraft() {
      const current = working(r)[f.name];
      block.classList.toggle("changed", !same(current, draft));
      if (same(current, draft)) { draftBox.replaceChildren(); return; }
      draftBox.replaceChildren(el("span.muted", { text: "Draft: " }), el("span.draft-value", { text: show(draft, f.name) }), " ",
        readOnly ? "" : el("button.link", { type: "button", text: "use draft", onclick: () => { setField(r, f.name, draft); renderEditor(); } }));
    }
    const input = control(f, value, update, r);
    holder.append(input);
    if (input.addEntry && !readOnly) {  // a list's "+ add" sits by its name, so a list takes no extra line
      block.firstChild.after(el("button.add", { type: "button", id: "add-" + f.name, title: `Add an entry to ${f.title}`, text: "+ add", onclick: input.addEntry }));
      block.classList.add("list-field");
    }
    const problems = r.problems.filter((p) => p.field && (p.field === f.name || p.field.startsWith(f.name + "[") || p.field.startsWith(f.name + ".")));
    if (problems.length) { block.classList.add("has-problem"); block.append(el("p.warn", { text: problems.map((x) => x.message).join("; ") })); }
    block.append(el("p.error", { id: "error-" + f.name }));
    drawDraft();
    return block;
  }

  function entitySelect(value, onchange, id) {
    const options = [...seg.entities];
    if (value && !options.includes(value)) options.push(value);
    const s = el("select", { id, disabled: readOnly, onchange: (e) => onchange(e.target.value) },
      el("option", { value: "", text: "—" }),
      ...options.map((n) => el("option", { value: n, text: seg.entities.includes(n) ? n : `${n} (not in cast)`, selected: n === value })));
    return s;
  }
  function entityChecks(values, onchange, id) {
    const chosen = new Set(values || []);
    const all = [...seg.entities, ...[...chosen].filter((n) => !seg.entities.includes(n))];
    return el("div.checks", { id, role: "group" }, ...all.map((n) => el("label.inline", {},
      el("input", { type: "checkbox", value: n, checked: chosen.has(n), disabled: readOnly, onchange: (e) => {
        if (e.target.checked) chosen.add(n); else chosen.delete(n);
        onchange(all.filter((x) => chosen.has(x)));
      } }), " " + n)));
  }
  function labelSelect(set, value, onchange, id, nullable, bare) {
    const labels = seg.labels[set];
    const definition = el("p.definition");
    const describe = (v) => { const l = labels.find((x) => x.name === v); definition.textContent = definition.title = l ? l.definition : (v ? "Not a label of this taxonomy" : ""); };
    const names = labels.map((l) => l.name);
    const s = el("select", { id, disabled: readOnly, onchange: (e) => { const v = e.target.value || (nullable ? null : ""); describe(v); onchange(v); } },
      el("option", { value: "", text: "0 (none)" }),
      ...labels.map((l, i) => el("option", { value: l.name, title: l.definition, text: `${i + 1} ${l.name}`, selected: l.name === value })),
      ...(value && !names.includes(value) ? [el("option", { value, text: `${value} (not in taxonomy)`, selected: true })] : []));
    describe(value);
    ReviewGuide.labelHotkeys(s);
    if (bare) { s.title = definition.textContent; s.addEventListener("change", () => { s.title = definition.textContent; }); return s; }
    return el("div.label-control", {}, s, definition);
  }

  function control(f, value, update, r) {
    const id = "input-" + f.name;
    switch (f.kind) {
      case "entity": return entitySelect(value, update, id);
      case "entities": return entityChecks(value, update, id);
      case "label": return labelSelect(f.labels, value, update, id, f.nullable);
      case "text": return el("input", { id, type: "text", value: value ?? "", disabled: readOnly, oninput: (e) => update(e.target.value) });
      case "longtext": return autosize(el("textarea", { id, rows: "1", disabled: readOnly, text: value ?? "", oninput: (e) => { autosize(e.target); update(e.target.value || (f.nullable && value === null ? null : e.target.value)); } }));
      case "rows": return el("input", { id, type: "text", inputmode: "numeric", placeholder: "row numbers, e.g. 3, 5", disabled: readOnly,
        value: (value || []).join(", "),
        oninput: (e) => {
          const rows = e.target.value.split(/[\s,]+/).filter(Boolean).map(Number).filter((n) => Number.isInteger(n));
          update(rows.length || value !== null ? rows : null);  // cleared where the draft had none: back to null
        } });
      case "list": return listControl(f, value || [], update, r);
      default: return el("span", { text: show(value, f.name) });
    }
  }

  // A text box as tall as its text (up to a few lines), once it is on the page and whenever it is typed in.
  function autosize(box) {
    const fit = () => { box.style.height = "auto"; box.style.height = Math.min(box.scrollHeight + 2, 140) + "px"; };
    if (box.isConnected) fit(); else requestAnimationFrame(fit);
    return box;
  }

  // A list is one line per entry (each part a bare control named by its placeholder or first option), and
  // nothing but its "+ add" while empty.
  function listControl(f, entries, update, r) {
    const items = entries.map((e) => ({ ...e }));
    const box = el("div.list", { id: "input-" + f.name });
    const commit = () => update(items.map((e) => ({ ...e })));
    function draw() {
      box.replaceChildren(...items.map((entry, i) => el("div.entry", {},
        ...f.item.map((part) => partControl(f, part, entry, i, commit)),
        readOnly ? "" : el("button.link.remove", { type: "button", title: "Remove this entry", "aria-label": "Remove this entry", text: "×",
          onclick: () => { items.splice(i, 1); commit(); draw(); } }))),
      );
    }
    box.addEntry = () => {
      const fresh = {};
      for (const part of f.item) fresh[part.key] = part.kind === "entities" ? [] : part.kind === "intensity" ? 5 : part.key === "provider" ? "Therapist" : "";
      items.push(fresh); commit(); draw();
      const inputs = box.querySelectorAll(".entry:last-of-type select, .entry:last-of-type input");
      if (inputs.length) inputs[0].focus();
    };
    draw();
    return box;
  }
  function partControl(f, part, entry, i, commit) {
    const id = `input-${f.name}-${i}-${part.key}`;
    const name = part.key.replace(/_/g, " ");
    const set = (v) => { entry[part.key] = v; commit(); };
    let node;
    if (part.kind === "entity") { node = entitySelect(entry[part.key], set, id); node.options[0].textContent = `— ${name} —`; }
    else if (part.kind === "entities") node = el("span.part-entities", {}, el("span.part-name", { text: name + ":" }), entityChecks(entry[part.key], set, id));
    else if (part.kind === "strategy") node = labelSelect("strategy", entry[part.key], set, id, false, true);
    else if (part.kind === "intensity") {
      const out = el("output", { text: String(entry[part.key] ?? "—") });
      node = el("span.intensity", { title: "intensity 0-10" }, el("input", { id, type: "range", min: "0", max: "10", step: "1", value: String(entry[part.key] ?? 5), disabled: readOnly,
        "aria-label": name, oninput: (e) => { out.textContent = e.target.value; set(Number(e.target.value)); } }), out);
    } else node = el("input", { id, type: "text", value: entry[part.key] ?? "", placeholder: name, title: name, disabled: readOnly, oninput: (e) => set(e.target.value) });
    if (node.tagName === "SELECT" || node.tagName === "INPUT") node.setAttribute("aria-label", name);
    return el("span.part.part-" + part.kind, {}, node);
  }

  // --- saving ----------------------------------------------------------------------------------------
  // The rulebook's verdict on the row as saved: errors must be fixed; warnings may be acknowledged.
  function acknowledgedOf(r) {
    const p = pending[r.row_index];
    return (p && p.acknowledged) || r.acknowledged || [];
  }
  function openChecks(r) {
    return (r.checks || []).filter((c) => c.severity === "error" || !acknowledgedOf(r).includes(c.key));
  }
  function checkItem(r, c) {
    const item = el("li", { class: "check-" + c.severity }, `${c.severity === "error" ? "✖" : "⚠"} ${c.field}: ${c.message} `);
    if (c.severity === "warning") {
      item.append(el("label", {}, el("input.ack", { type: "checkbox", "data-key": c.key, checked: acknowledgedOf(r).includes(c.key),
        disabled: readOnly, onchange: (e) => {
          const keys = new Set(acknowledgedOf(r));
          if (e.target.checked) keys.add(c.key); else keys.delete(c.key);
          pendingFor(r).acknowledged = [...keys];
          persist();
          refreshRowItem(r);
        } }), " acknowledge (I know, it stays)"));
    }
    return item;
  }

  async function save(r) {
    const p = pending[r.row_index];
    if (!p || (!Object.keys(p.fields).length && !p.accepted.length && !p.acknowledged)) { status("Nothing to save"); return true; }
    status("Saving…");
    document.querySelectorAll("#editor p.error").forEach((n) => { n.textContent = ""; });
    let answer;
    try {
      const body = { version: p.base, fields: p.fields, accepted: p.accepted };
      if (p.acknowledged) body.acknowledged = p.acknowledged;
      answer = await api("PUT", `${segmentUrl(B.segment)}/rows/${r.row_index}${copyParam}`, body);
    } catch (e) {
      status("Not saved: no connection. Your edits are kept in this browser; save again when back online.", "bad");
      return false;
    }
    if (answer.status === 200) {
      if (Object.keys(p.fields).length) {
        ReviewUndo.record({ kind: "edit", row: r.row_index, after: { ...p.fields },
          before: Object.fromEntries(Object.keys(p.fields).map((name) => [name, r.values[name]])) });
      }
      r.values = { ...r.values, ...p.fields };
      r.accepted = [...new Set([...r.accepted, ...Object.keys(p.fields), ...p.accepted])];
      r.version = answer.data.version;
      r.checks = answer.data.checks;
      r.acknowledged = answer.data.acknowledged;
      r.updated_by = B.me;
      delete pending[r.row_index];
      persist();
      refreshRowItem(r);
      if (r === row()) renderEditor();
      status(`Saved (version ${r.version})`, "good");
      seg.status.status = seg.status.status === "verified" ? "open" : seg.status.status;
      return true;
    }
    if (answer.status === 409) { conflict(r, answer.data); return false; }
    if (answer.status === 422) {
      for (const problem of answer.data.problems || []) {
        const root = (problem.field || "").split(/[.[]/)[0];
        const node = document.getElementById("error-" + root);
        if (node) node.textContent = `${problem.field}: ${problem.message}`;
      }
      status("Not saved: " + (answer.data.problems || []).map((x) => `${x.field}: ${x.message}`).join("; "), "bad");
      return false;
    }
    status("Not saved: " + (answer.data && answer.data.detail || answer.status), "bad");
    return false;
  }

  function conflict(r, data) {
    if (data.layout !== undefined && data.layout !== (seg.layout || 0)) {  // re-cut meanwhile: the row number moved
      fetchSegment().then(() => status("The rows were re-cut meanwhile (another tab): your unsaved edits are set aside, shown above the clip", "bad"));
      return;
    }
    const p = pending[r.row_index];
    const theirs = data.current;
    const box = document.getElementById("conflict");
    const choice = {};
    const names = Object.keys(p.fields);
    box.replaceChildren(el("div.conflict", { role: "alertdialog", "aria-label": "Conflict" },
      el("h3", { text: "Someone saved this row first" }),
      el("p", { text: `${data.detail}. Your edits are safe in this browser. Choose, per field, which version to keep:` }),
      el("table.grid", {}, el("thead", {}, el("tr", {}, el("th", { text: "Field" }), el("th", { text: `Theirs (v${theirs.version}, ${theirs.updated_by || "?"})` }), el("th", { text: "Yours" }))),
        el("tbody", {}, ...names.map((name) => {
          choice[name] = "mine";
          const group = "pick-" + name;
          return el("tr", {}, el("td", { text: name }),
            el("td", {}, el("label.inline", {}, el("input", { type: "radio", name: group, value: "theirs", onchange: () => { choice[name] = "theirs"; } }), " ", el("span.theirs", { text: show(theirs.values[name], name) }))),
            el("td", {}, el("label.inline", {}, el("input", { type: "radio", name: group, value: "mine", checked: true, onchange: () => { choice[name] = "mine"; } }), " ", el("span.mine", { text: show(p.fields[name], name) }))));
        }))),
      el("div.actions", {}, el("button.primary", { id: "resolve", type: "button", text: "Keep these and save", onclick: async () => {
        r.values = theirs.values; r.version = theirs.version; r.accepted = theirs.accepted; r.updated_by = theirs.updated_by;
        p.base = theirs.version;
        for (const name of names) if (choice[name] === "theirs") delete p.fields[name];
        persist();
        box.replaceChildren();
        renderEditor();
        await save(r);
      } }))));
    status("Conflict: choose which version to keep", "bad");
  }

  // Saves run one after another: "a" pressed down a segment queues one save per row, and verify waits for
  // them, so no save ever races another of the same row (which the server would refuse as a conflict).
  let saving = Promise.resolve(true);
  function queueSave(r) {
    const next = saving.then(() => save(r));
    saving = next.catch(() => false);
    return next;
  }
  function acceptRow(r, advance = false) {
    const p = pendingFor(r);
    const unsaved = Object.keys(p.fields).length > 0;
    p.accepted = seg.fields.map((f) => f.name).filter((name) => !r.accepted.includes(name));
    persist();
    const done = unsaved || p.accepted.length ? queueSave(r) : Promise.resolve(true);
    if (advance && selected < seg.rows.length - 1) {
      selectRow(selected + 1, true);
      document.getElementById("row-" + row().row_index)?.focus();
    }
    return done;
  }
  async function saveAll() {
    await saving;
    for (const r of seg.rows) if (pending[r.row_index]) { if (!(await queueSave(r))) return false; }
    return true;
  }

  async function verify() {
    if (!(await saveAll())) { status("Save or resolve the open edits before verifying", "bad"); return; }
    const answer = await api("POST", `${segmentUrl(B.segment)}/verify${copyParam}`);
    if (answer.ok) { await fetchSegment(); status("Segment verified", "good"); }
    else status("Not verified: " + (answer.data.problems || []).map((x) => `row ${x.row_index ?? "-"} ${x.field}: ${x.message}`).join("; "), "bad");
  }

  function discardDialog() {
    const host = document.getElementById("dialog-host");
    const reason = el("select", { id: "discard-reason" }, ...Object.entries(seg.discard_reasons).map(([k, v]) => el("option", { value: k, text: v })));
    const comment = el("textarea", { id: "discard-comment", rows: "2", placeholder: "What is wrong (required for Other)" });
    const error = el("p.error");
    const dialog = el("div.dialog", { role: "dialog", "aria-modal": "true", "aria-label": "Discard segment" },
      el("h3", { text: "Discard this segment" }),
      el("label", {}, "Reason ", reason), el("label", {}, "Comment ", comment), error,
      el("div.actions", {},
        el("button.danger", { id: "discard-confirm", type: "button", text: "Discard", onclick: async () => {
          const answer = await api("POST", `${segmentUrl(B.segment)}/discard${copyParam}`, { reason: reason.value, comment: comment.value });
          if (answer.ok) { host.replaceChildren(); await fetchSegment(); status("Segment discarded", "good"); }
          else error.textContent = (answer.data.problems || []).map((x) => x.message).join("; ") || answer.data.detail;
        } }),
        el("button", { type: "button", text: "Cancel", onclick: () => host.replaceChildren() })));
    host.replaceChildren(dialog);
    reason.focus();
  }

  function commentForm(rowIndex) {
    const text = el("textarea", { rows: "2", id: rowIndex === null ? "segment-comment" : "row-comment", placeholder: "Add a comment" });
    return el("div.comment-form", {}, text, el("button", { type: "button", text: "Comment", onclick: async () => {
      if (!text.value.trim()) return;
      const answer = await api("POST", `${segmentUrl(B.segment)}/comments`, { text: text.value, row_index: rowIndex });
      if (answer.ok) { seg.comments.push(answer.data); text.value = ""; rowIndex === null ? render() : renderEditor(); }
    } }));
  }
  function segmentNotes() {
    const general = seg.comments.filter((c) => c.row_index === null);
    // Folded to one line under the rows (the rows keep the room); the line says what is inside.
    const summary = [seg.problems.length ? `⚠ ${seg.problems.length} build problem${seg.problems.length > 1 ? "s" : ""}` : "",
      `${general.length} segment comment${general.length === 1 ? "" : "s"}`].filter(Boolean).join(" · ");
    return el("details.notes", { id: "segment-notes" }, el("summary", { text: summary }),
      seg.problems.length ? el("div", {}, el("h3", { text: "Build problems" }), el("ul.problems", {}, ...seg.problems.map((p) => el("li", { text: p.message })))) : null,
      el("h3", { text: "Segment comments" }),
      el("ul", {}, ...general.map((c) => el("li", {}, el("b", { text: c.author }), " ", c.text))),
      commentForm(null));
  }

  async function history(r) {
    const box = document.getElementById("audit");
    if (box.childElementCount) { box.replaceChildren(); return; }
    const answer = await api("GET", `${segmentUrl(B.segment)}/rows/${r.row_index}/audit`);
    box.replaceChildren(el("h3", { text: "History" }), el("table.grid.audit", {},
      el("thead", {}, el("tr", {}, ...["When", "Who", "Copy", "Field", "Old", "New"].map((h) => el("th", { text: h })))),
      el("tbody", {}, ...answer.data.map((a) => el("tr", {}, el("td", { text: a.at.replace("T", " ").slice(0, 19) }), el("td", { text: a.user }),
        el("td", { text: a.copy }), el("td", { text: a.field }), el("td", { text: show(a.old, a.field) }), el("td", { text: show(a.new, a.field) }))))));
  }

  const SHORTCUTS = [["j/k", "next/previous row"], ["a", "accept row, next"], ["Enter", "edit row"], ["Esc", "back to rows"],
    ["1–9", "label (in a label list)"], ["space", "play/pause"], ["r", "replay row"], ["l", "loop row"], ["[ ]", "speed"],
    ["Ctrl+S", "save"], ["g", "guidelines"], ["Shift+V", "verify segment"], ...ReviewTimeline.KEYS, ...ReviewUndo.KEYS];

  // --- keyboard --------------------------------------------------------------------------------------
  document.addEventListener("keydown", (e) => {
    if (!seg) return;
    if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "s") { e.preventDefault(); if (!readOnly) queueSave(row()); return; }
    const typing = e.target.closest && e.target.closest("input, textarea, select");
    if (e.key === "Escape") { const item = document.getElementById("row-" + row().row_index); if (item) item.focus(); return; }
    if (typing || e.altKey || e.ctrlKey || e.metaKey) return;
    const keys = {
      j: () => selectRow(selected + 1, true), ArrowDown: () => selectRow(selected + 1, true),
      k: () => selectRow(selected - 1, true), ArrowUp: () => selectRow(selected - 1, true),
      " ": togglePlay, r: () => seekRow(true),
      l: () => { loop = !loop; const box = document.getElementById("loop"); if (box) box.checked = loop; },
      "[": () => changeSpeed(-1), "]": () => changeSpeed(1),
      a: () => { if (!readOnly) acceptRow(row(), true); },
      g: () => ReviewGuide.toggle(),
      V: () => { if (!readOnly) verify(); },
    };
    if (keys[e.key]) {
      e.preventDefault(); keys[e.key]();
      const item = document.getElementById("row-" + row().row_index);
      if (item && (e.key === "j" || e.key === "k" || e.key.startsWith("Arrow"))) item.focus();
    }
  });
  function changeSpeed(step) {
    if (!video) return;
    const i = Math.max(0, Math.min(SPEEDS.length - 1, SPEEDS.indexOf(video.playbackRate) + step));
    video.playbackRate = SPEEDS[i];
    document.getElementById("speed").value = String(SPEEDS[i]);
  }

  // What timeline.js (the timeline and the row cuts) needs of this view.
  const view = {
    get seg() { return seg; }, get selected() { return selected; }, get video() { return video; },
    get readOnly() { return readOnly; }, me: B.me, copyParam,
    working, status, fmtTime, saveAll, persist, pending: () => pending,
    select: selectRow, refreshRow: refreshRowItem, reload: fetchSegment, editor: renderEditor,
    replace(data, index) {  // after a cut: the new rows, the playhead where it was
      const at = video ? video.currentTime : 0;
      seg = data; selected = Math.max(0, Math.min(index, seg.rows.length - 1)); setAside(); render();
      if (video && at) video.currentTime = at;
    },
  };

  ReviewUndo.mount(view, storeKey);
  window.reviewState = () => ({ undo: ReviewUndo.state(), selected, loop, pending, rows: seg && seg.rows.map((r) => ({ row_index: r.row_index, version: r.version, start: r.start_time, end: r.end_time })) });
  fetchSegment();
})();
