// One benchmark instance: what the model is shown, as a transcript, and the answer in the task's shape. Every
// answer is saved the moment it is given (PUT .../answer with the version last seen). Text only, never HTML.
"use strict";
(() => {
  const { api, el, boot } = Review;
  const start = boot();
  const url = `/api/bench/items/${encodeURIComponent(start.task)}/${start.number}`;
  const state = { item: null, value: null, version: 0, saving: Promise.resolve() };
  const $ = (id) => document.getElementById(id);

  function status(text, kind) {
    const node = $("bench-status");
    node.textContent = text;
    node.className = kind || "";
  }

  function rowNode(row, tag) {
    const targets = (row.target || []).join(", ");
    const node = el(tag, {},
      el("span.who", { text: row.primary_speaker }),
      el("span.meta", { text: `to ${targets || "—"} · ${row.timestamp || ""}` }),
      el("div.text", { text: row.dialogue_cleaned }));
    for (const b of row.background_dialogue || []) {
      node.append(el("div.background", { text: `(${b.speaker} to ${(b.target || []).join(", ")}: ${b.content})` }));
    }
    return node;
  }

  function showConversation(item) {
    $("bench-title").textContent = `${item.title} — ${item.task.toUpperCase()} ${item.number} of ${item.total}` +
      ` (your ${item.queue.position} of ${item.queue.of}, ${item.queue.answered} answered)`;
    $("bench-instructions").querySelector("pre").textContent = item.instructions;
    $("bench-statement").textContent = item.statement;
    const media = $("bench-media");
    media.replaceChildren();
    if (item.media) {
      media.append(el("p.meta", { text: item.media.note }),
        ...item.media.frames.map((f) => el("figure", {}, el("img", { src: f.src, alt: f.caption }), el("figcaption", { text: f.caption }))));
    }
    const given = $("bench-given");
    given.replaceChildren(...Object.entries(item.given).map(([k, v]) => el("div.bench-given", { text: `${k.replace(/_/g, " ")}: ${v}` })));
    const context = $("bench-context");
    context.replaceChildren(...item.context.map((row) => rowNode(row, "li")));
    if (!item.shown) context.append(el("li", { text: "(not shown: this instance is locked)" }));
    else if (!item.context.length) context.append(el("li", { text: "(no earlier rows are shown)" }));
    const current = $("bench-current");
    current.replaceChildren();
    if (item.current) current.append(el("h2", { text: "Current turn" }), rowNode(item.current, "div.bench-current"));
    else if (item.shown) current.append(el("p.meta", { text: "The next turn (the target row) is hidden: that is what you " +
      "predict (whose turn it is: the task above" + (Object.keys(item.given).length ? " and the facts given" : "") + ")." }));
  }

  async function save(value) {
    if (state.item.locked) { status(lockText(state.item), "error"); return Promise.resolve(); }
    state.value = value;
    const sent = state.saving.then(async () => {
      status("saving…");
      const answer = await api("PUT", url + "/answer", { value, version: state.version });
      if (answer.ok) {
        state.version = answer.data.version;
        status(`Saved (${new Date().toLocaleTimeString()})`, "saved");
      } else if (answer.status === 423) {
        state.item.locked = answer.data.locked;
        drawAnswer();
        status(answer.data.detail, "error");
      } else if (answer.status === 409) {
        state.version = answer.data.current.version;
        state.value = answer.data.current.value;
        drawAnswer();
        status(answer.data.detail, "error");
      } else {
        status(typeof answer.data === "object" && answer.data ? answer.data.detail : "not saved", "error");
      }
    });
    state.saving = sent;
    return sent;
  }

  function choiceButton(entry, index, chosen, onPick, prefix) {
    return el("button.choice" + (chosen ? ".chosen" : ""), { type: "button", "data-label": entry.label, title: entry.definition || entry.label, onclick: () => onPick(entry.label) },
      el("span.rank", { text: prefix || `${index + 1}` }), entry.label,
      entry.definition ? el("span.definition", { text: entry.definition }) : null);
  }

  const drawers = {
    label(item, box) {
      $("bench-question").textContent = item.task === "itp" ? "Should the therapist take the very next turn?" : "Your answer";
      box.replaceChildren(...item.labels.map((entry, i) =>
        choiceButton(entry, i, state.value === entry.label, (label) => { save(label); drawAnswer(); })));
      return `keys: 1–${item.labels.length} choose` + (item.labels.some((l) => l.label === "yes") ? ", y / n" : "");
    },
    ranking(item, box) {
      const ranked = Array.isArray(state.value) ? state.value : [];
      $("bench-question").textContent = `Rank the ${item.rank} most likely labels, most likely first`;
      const pick = (label) => {
        const next = ranked.includes(label) ? ranked.filter((x) => x !== label) : ranked.concat([label]).slice(0, item.rank);
        if (next.length) save(next); else state.value = next;
        drawAnswer();
      };
      // The ranking itself: drag an entry onto another to put it in that place.
      const move = (from, to) => {
        const next = ranked.slice();
        next.splice(to, 0, next.splice(from, 1)[0]);
        save(next);
        drawAnswer();
      };
      const list = ranked.length ? el("ol#bench-ranking", {}, ...ranked.map((label, i) => el("li", {
        draggable: "true", "data-rank": String(i), text: label,
        ondragstart: (e) => { e.dataTransfer.setData("text/plain", String(i)); },
        ondragover: (e) => { e.preventDefault(); },
        ondrop: (e) => { e.preventDefault(); move(Number(e.dataTransfer.getData("text/plain")), i); },
      }))) : el("p#bench-ranking", { text: "(nothing ranked yet)" });
      box.replaceChildren(list,
        ...item.labels.map((entry, i) => {
          const at = ranked.indexOf(entry.label);
          return choiceButton(entry, i, at >= 0, pick, at >= 0 ? `#${at + 1}` : `${i + 1 < 10 ? i + 1 : 0}`);
        }));
      return "keys: a label's number adds it to the ranking (again: removes it), Backspace removes the last; drag to reorder";
    },
    emotion(item, box) {
      const value = state.value || {};
      $("bench-question").textContent = `How does ${item.speaker} feel as they say the current turn?`;
      const text = el("input#bench-emotion", { type: "text", value: value.emotion || "", placeholder: "a short phrase, e.g. feels dismissed and frustrated" });
      const [low, high] = item.intensity;
      const level = el("input#bench-intensity", { type: "number", min: low, max: high, step: 1, value: value.intensity ?? "" });
      const send = () => {
        const intensity = Number.parseInt(level.value, 10);
        if (!text.value.trim() || Number.isNaN(intensity)) { status("write the emotion and give an intensity", "error"); return; }
        save({ emotion: text.value.trim(), intensity });
      };
      for (const input of [text, level]) input.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); send(); } });
      box.replaceChildren(el("label", {}, "Emotion ", text), el("label", {}, `Intensity (${low}–${high}) `, level),
        el("button.primary#bench-save", { type: "button", onclick: send, text: "Save (Enter)" }));
      return "keys: Enter saves; Esc leaves the field (then j / k move on)";
    },
    viewpoints(item, box) {
      $("bench-question").textContent = `Which views of others does ${item.speaker} express in the current turn?`;
      const rows = (Array.isArray(state.value) && state.value.length ? state.value : [{ source: item.speaker, target: "", viewpoint: "" }])
        .map((v) => ({ ...v }));
      const people = item.people;
      const send = () => {
        const value = rows.filter((r) => r.viewpoint.trim()).map((r) => ({ source: r.source, target: r.target, viewpoint: r.viewpoint.trim() }));
        if (!value.length || value.some((v) => !people.includes(v.target) || !people.includes(v.source))) {
          status("give each viewpoint a source, a target and a phrase", "error"); return;
        }
        save(value);
      };
      const select = (row, key) => {
        const node = el("select", { "aria-label": key, onchange: (e) => { row[key] = e.target.value; } },
          el("option", { value: "", text: `${key}…` }), ...people.map((p) => el("option", { value: p, text: p })));
        node.value = row[key] || "";
        return node;
      };
      const draw = () => box.replaceChildren(...rows.map((row) => {
        const text = el("input", { type: "text", value: row.viewpoint, placeholder: "the view, e.g. she is impossible to please",
          oninput: (e) => { row.viewpoint = e.target.value; },
          onkeydown: (e) => { if (e.key === "Enter") { e.preventDefault(); send(); } } });
        return el("div.vp-row", {}, select(row, "source"), select(row, "target"), text);
      }), el("button#bench-add", { type: "button", text: "+ add a viewpoint", onclick: () => { rows.push({ source: item.speaker, target: "", viewpoint: "" }); draw(); } }),
      el("button.primary#bench-save", { type: "button", onclick: send, text: "Save (Enter)" }));
      draw();
      return "keys: Enter saves; Esc leaves the field (then j / k move on)";
    },
  };

  const named = (key) => key.replace("/", " ").toUpperCase();

  function lockText(item) {
    return item.version
      ? `Your answer is final: what this instance hides was shown to you on ${named(item.locked.by)}.`
      : `Locked: what this instance hides was shown to you on ${named(item.locked.by)} before you answered it, so ` +
        "it stays unanswered (it counts as not answered, never as wrong).";
  }

  function drawAnswer() {
    const item = state.item;
    if (item.locked && !item.shown) {
      $("bench-question").textContent = "Locked";
      $("bench-answer").replaceChildren(el("p#bench-locked", { text: lockText(item) }));
      $("bench-keys").textContent = "keys: j next, k previous, Enter next unanswered";
      return;
    }
    $("bench-keys").textContent = drawers[item.answer_kind](item, $("bench-answer")) + "; j next, k previous, Enter next unanswered";
    if (item.locked) {
      for (const node of $("bench-answer").querySelectorAll("button, input, select")) node.disabled = true;
      $("bench-answer").prepend(el("p#bench-locked", { text: lockText(item) }));
    }
  }

  function go(link) { if (link) state.saving.then(() => { location.href = link; }); }

  function onKey(event) {
    const item = state.item;
    if (!item || event.ctrlKey || event.metaKey || event.altKey) return;
    const typing = ["INPUT", "SELECT", "TEXTAREA"].includes(document.activeElement.tagName);
    if (typing) { if (event.key === "Escape") document.activeElement.blur(); return; }
    const labels = item.labels.map((l) => l.label);
    const digit = event.key === "0" ? 10 : Number.parseInt(event.key, 10);
    if (item.answer_kind === "label" || item.answer_kind === "ranking") {
      let label = digit >= 1 && digit <= labels.length ? labels[digit - 1] : null;
      if (!label && (event.key === "y" || event.key === "n") && labels.includes("yes")) label = event.key === "y" ? "yes" : "no";
      if (label) { event.preventDefault(); document.querySelector(`.choice[data-label="${CSS.escape(label)}"]`).click(); return; }
      if (event.key === "Backspace" && item.answer_kind === "ranking" && Array.isArray(state.value) && state.value.length) {
        event.preventDefault();
        document.querySelector(`.choice[data-label="${CSS.escape(state.value[state.value.length - 1])}"]`).click();
        return;
      }
    }
    if (event.key === "j") go(item.queue.next);
    else if (event.key === "k") go(item.queue.previous);
    else if (event.key === "Enter") go(item.queue.next_open || "/");
  }

  // Before a page is shown: what it would lock. Instances not yet answered are named, and the person chooses.
  async function confirmed() {
    const ahead = await api("GET", url + "/reveals");
    if (!ahead.ok || !ahead.data.unanswered.length) return true;
    $("bench-question").textContent = "Open this instance?";
    return new Promise((resolve) => {
      $("bench-answer").replaceChildren(
        el("p#bench-warning", { text: `This page shows what ${ahead.data.unanswered.map(named).join(", ")} ` +
          "hide(s): you have not answered them, and once this page is shown they stay unanswered." }),
        el("button.primary#bench-open", { type: "button", text: "Open it anyway", onclick: () => resolve(true) }),
        el("button#bench-back", { type: "button", text: "Back to my queue", onclick: () => { location.href = "/"; resolve(false); } }));
    });
  }

  async function load() {
    if (!(await confirmed())) return;
    const answer = await api("GET", url);
    if (!answer.ok) { status(answer.data && answer.data.detail ? answer.data.detail : "cannot load", "error"); return; }
    state.item = answer.data;
    state.value = answer.data.value;
    state.version = answer.data.version;
    showConversation(state.item);
    drawAnswer();
    if (state.item.locked) status(lockText(state.item), "error");
    else if (state.version) status("Answered before; changing it saves at once (until a later page shows what it hides)", "saved");
    $("bench-prev").disabled = !state.item.queue.previous;
    $("bench-prev").addEventListener("click", () => go(state.item.queue.previous));
    $("bench-next").addEventListener("click", () => go(state.item.queue.next || "/"));
    const first = document.querySelector("#bench-emotion, .vp-row input");
    if (first) first.focus();
  }

  document.addEventListener("keydown", onKey);
  window.benchState = () => state;
  load();
})();
