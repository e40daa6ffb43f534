// Undo and redo (Ctrl+Z, Shift+Ctrl+Z or Ctrl+Y) of an annotator's saved edits and cuts, last first. Nothing new
// on the server: each undo is the opposite write (a save of the old values, a merge for a split, a split for a
// merge, a delete for an insert, an insert for a delete, then a save that gives the rows back their values), each
// sent with the versions and the cut revision it starts from, so it is conflict-checked like any write. Before
// each, the rows must still hold what the action left: if another tab or person changed them since, the undo is
// refused with a message and nothing is written. The two stacks live in this tab's sessionStorage (a reload keeps
// them); segment.js and timeline.js record their writes here.
"use strict";
const ReviewUndo = (() => {
  const { api, segmentUrl, equal } = Review;
  let view = null;
  let key = "";
  let stacks = { undo: [], redo: [] };
  let busy = false;
  const LIMIT = 200;
  const TIMES = ["start_time", "end_time"];

  function mount(v, storeKey) {
    view = v;
    key = storeKey + ":undo";
    try { stacks = JSON.parse(sessionStorage.getItem(key) || "null") || stacks; } catch (e) { /* a fresh stack */ }
  }
  function persist() {
    sessionStorage.setItem(key, JSON.stringify(stacks));
  }
  const copy = (value) => JSON.parse(JSON.stringify(value));
  // A new action of the annotator's own: the redo stack no longer follows from it.
  function record(entry) {
    if (busy) return;  // the writes of an undo are recorded by the undo itself
    stacks.undo.push(copy(entry));
    if (stacks.undo.length > LIMIT) stacks.undo.shift();
    stacks.redo = [];
    persist();
  }

  const editable = () => [...view.seg.fields.map((f) => f.name), ...TIMES];
  const rowAt = (index) => view.seg.rows[index - 1];
  const rowUrl = (index, suffix = "") => `${segmentUrl(view.seg.sample_id)}/rows${index ? "/" + index : ""}${suffix}${view.copyParam}`;
  const holds = (r, values, names) => r && names.every((name) => equal(r.values[name], values[name]));

  class Refused extends Error {}

  // ``accepted`` (a cut's undo): the row's accepted fields as they were, given back with its values, so the
  // saves of an undo accept nothing nobody accepted. ``remove``: fields to take out of the row (ones it never held).
  async function put(index, fields, accepted, remove = []) {
    const r = rowAt(index);
    const acceptance = accepted && !equal([...(r.accepted || [])].sort(), [...accepted].sort());
    if (!Object.keys(fields).length && !remove.length && !acceptance) return;
    const body = { version: r.version, fields };
    if (accepted) body.restore_accepted = accepted;
    if (remove.length) body.remove = remove;
    const answer = await api("PUT", rowUrl(index), body);
    if (answer.status !== 200) throw new Refused(problem(answer));
    if (accepted) r.accepted = [...accepted];
    r.values = { ...r.values, ...fields };
    for (const name of remove) delete r.values[name];
    if ("start_time" in fields) r.start_time = fields.start_time;
    if ("end_time" in fields) r.end_time = fields.end_time;
    r.version = answer.data.version;
    r.checks = answer.data.checks;
    r.acknowledged = answer.data.acknowledged;
    r.updated_by = view.me;
  }
  // Give row ``index`` the values ``target`` holds (the editable fields that differ) and its set of fields.
  function restore(index, target, accepted) {
    const r = rowAt(index);
    const fields = {}, remove = [];
    for (const name of editable()) {
      if (name in target) {
        if (!equal(r.values[name], target[name]) || !(name in r.values)) fields[name] = target[name];
        continue;
      }
      // A field the row did not hold (a draft may leave out the relation fields) is taken out again where the
      // release lets a row leave it out: a split's half holds every field of the merged row, and a null would be
      // a change nobody made (in the copy and in its export).
      const spec = view.seg.fields.find((f) => f.name === name);
      if (name in r.values && spec && spec.optional) remove.push(name);
    }
    return put(index, fields, accepted, remove);
  }
  // Every row back to ``rows`` (what the copy held before the action undone): a cut renumbers the evidence
  // references of other rows too, and a merge or a delete loses what a split or an insert cannot bring back.
  async function restoreAll(rows, accepted) {
    if (rows.length !== view.seg.rows.length) throw new Refused("the rows changed since (another tab or person)");
    for (let i = 1; i <= rows.length; i += 1) await restore(i, rows[i - 1], accepted && accepted[i - 1]);
  }
  const snapshot = () => copy(view.seg.rows.map((r) => r.values));
  const acceptedNow = () => copy(view.seg.rows.map((r) => r.accepted || []));
  async function cut(method, url, body) {
    const answer = await api(method, url, { layout: view.seg.layout, ...body });
    if (!answer.ok) throw new Refused(problem(answer));
    view.replace(answer.data.segment, answer.data.row_index - 1);
    return answer.data.row_index;
  }
  function problem(answer) {
    if (answer.status === 409) return "the rows changed since (another tab or person)";
    const problems = answer.data && answer.data.problems;
    return problems ? problems.map((p) => `${p.field}: ${p.message}`).join("; ") : (answer.data && answer.data.detail) || String(answer.status);
  }
  const still = (ok, what) => { if (!ok) throw new Refused(`${what} changed since (another tab or person)`); };
  // A cut is undone only while the rows are as it left them (``after``): otherwise someone changed them since.
  const unchanged = (after) => after.length === view.seg.rows.length && view.seg.rows.every((r, i) => holds(r, after[i], editable()));

  // The opposite of each recorded action; each returns the entry of what it did (its own opposite).
  const REVERSE = {
    async edit(e) {
      const r = rowAt(e.row);
      still(holds(r, e.after, Object.keys(e.after)), `row ${e.row}`);
      const names = Object.keys(e.before);
      const now = Object.fromEntries(names.map((n) => [n, r.values[n]]));
      await put(e.row, e.before);
      view.refreshRow(r);
      return { kind: "edit", did: e.did || e.kind, row: e.row, before: now, after: e.before };
    },
    async boundary(e) {
      const a = rowAt(e.row), b = rowAt(e.row + 1);
      still(a && b && a.end_time === e.after && b.start_time === e.after, `rows ${e.row}–${e.row + 1}`);
      const answer = await api("POST", `${segmentUrl(view.seg.sample_id)}/boundary${view.copyParam}`,
        { layout: view.seg.layout, row: e.row, version: a.version, next_version: b.version, at: e.before });
      if (!answer.ok) throw new Refused(problem(answer));
      view.replace(answer.data.segment, e.row - 1);
      return { kind: "boundary", did: e.did || e.kind, row: e.row, before: e.after, after: e.before };
    },
    async split(e) {
      still(unchanged(e.after), "the rows");
      const first = rowAt(e.row), second = rowAt(e.row + 1), whole = e.rows[e.row - 1];
      // Not that they touch: a merge undone gives back two rows with the gap between them (redoing it merges them).
      still(first && second && first.start_time === whole.start_time, `rows ${e.row}–${e.row + 1}`);
      const rows = snapshot(), accepted = acceptedNow();
      await cut("POST", rowUrl(e.row, "/merge"), { version: first.version, next_version: second.version });
      await restoreAll(e.rows, e.accepted);
      return { kind: "merge", did: e.did || e.kind, row: e.row, rows, accepted, after: snapshot() };
    },
    async merge(e) {
      still(unchanged(e.after), "the rows");
      const [a, b] = [e.rows[e.row - 1], e.rows[e.row]];
      const merged = rowAt(e.row);
      still(merged && merged.start_time === a.start_time, `row ${e.row}`);
      const rows = snapshot(), accepted = acceptedNow();
      const first = String(a.dialogue_cleaned || "").trim(), text = String(merged.values.dialogue_cleaned || "");
      const textAt = first && first.length < text.length ? first.length : null;
      await cut("POST", rowUrl(e.row, "/split"), { version: merged.version, at: b.start_time, text_at: textAt });
      await restoreAll(e.rows, e.accepted);
      return { kind: "split", did: e.did || e.kind, row: e.row, rows, accepted, after: snapshot() };
    },
    async insert(e) {
      still(unchanged(e.after), "the rows");
      const r = rowAt(e.row);
      const rows = snapshot(), accepted = acceptedNow();
      await cut("DELETE", rowUrl(e.row), { version: r.version });
      await restoreAll(e.rows, e.accepted);
      return { kind: "delete", did: e.did || e.kind, row: e.row, rows, accepted, after: snapshot() };
    },
    async delete(e) {
      still(unchanged(e.after), "the rows");
      const b = e.rows[e.row - 1];
      const rows = snapshot(), accepted = acceptedNow();
      const index = await cut("POST", rowUrl(null), { start_time: b.start_time, end_time: b.end_time,
        primary_speaker: b.primary_speaker || "", dialogue_cleaned: b.dialogue_cleaned || "" });
      still(index === e.row, `the place of row ${e.row}`);
      await restoreAll(e.rows, e.accepted);
      return { kind: "insert", did: e.did || e.kind, row: index, rows, accepted, after: snapshot() };
    },
  };
  const NAMES = { edit: "edit", boundary: "boundary move", split: "split", merge: "merge", insert: "new row", delete: "delete" };

  async function step(from, to, verb, again) {
    if (!view || !view.seg || view.readOnly || busy) return;
    if (!(await view.saveAll())) { view.status(`${verb}: save or resolve the open edits first`, "bad"); return; }
    const entry = stacks[from].pop();
    if (!entry) { view.status(`Nothing to ${verb.toLowerCase()}`); return; }
    busy = true;
    try {
      const done = await REVERSE[entry.kind](entry);
      stacks[to].push(done);
      view.select(Math.max(0, Math.min(done.row - 1, view.seg.rows.length - 1)), false);
      view.editor();
      ReviewTimeline.draw();
      // Named as the annotator did it: redoing a split is a split again, though its entry holds the merge that undid it.
      view.status(`${verb} ${NAMES[entry.did || entry.kind]} of row ${entry.row} (${again} ${verb === "Undone" ? "redoes" : "undoes"} it)`, "good");
    } catch (error) {
      if (!(error instanceof Refused)) { stacks[from].push(entry); throw error; }
      await view.reload();  // the rows as they now stand, then the reason (the reload redraws the status line)
      view.status(`Not ${verb.toLowerCase()}: ${error.message}`, "bad");
    } finally {
      busy = false;
      persist();
    }
  }
  const undo = () => step("undo", "redo", "Undone", "Shift+Ctrl+Z");
  const redo = () => step("redo", "undo", "Redone", "Ctrl+Z");

  document.addEventListener("keydown", (e) => {
    if (!(e.ctrlKey || e.metaKey) || e.altKey) return;
    if (e.target.closest && e.target.closest("input, textarea")) return;  // the text box's own undo
    const k = e.key.toLowerCase();
    if (k === "z" && !e.shiftKey) { e.preventDefault(); undo(); }
    else if ((k === "z" && e.shiftKey) || k === "y") { e.preventDefault(); redo(); }
  });

  return { mount, record, undo, redo, KEYS: [["Ctrl+Z / Shift+Ctrl+Z", "undo / redo"]],
    state: () => ({ undo: stacks.undo.length, redo: stacks.redo.length }) };
})();
