// What an annotator needs in sight while working, kept apart from the editor itself: the shortcut bar,
// the guidelines panel (the lab's guidelines.md and the taxonomy's definitions) and digit keys that pick a
// label in a focused label list.
"use strict";
const ReviewGuide = (() => {
  const { el } = Review;

  // A bar fixed to the bottom of the window: every key the page answers to, always in sight.
  function shortcutBar(keys) {
    return el("footer.shortcut-bar", { id: "shortcut-bar", "aria-label": "Keyboard shortcuts" },
      ...keys.map(([key, what]) => el("span.shortcut", {}, el("kbd", { text: key }), " " + what)));
  }

  const SET_TITLES = { utterance: "Utterance types", strategy: "Support strategies", relation: "Relation patterns" };

  function taxonomy(labels) {
    return el("section.taxonomy", {}, el("h3", { text: "Taxonomy" }),
      ...Object.entries(labels).map(([set, items]) => el("details.label-set", { open: set !== "utterance" ? false : true },
        el("summary", { text: `${SET_TITLES[set] || set} (${items.length})` }),
        el("dl", {}, ...items.flatMap((l, i) => [
          el("dt", {}, el("span.digit", { text: String(i + 1) }), " ", el("code", { text: l.name })),
          el("dd", {}, l.definition,
            (l.use_when || []).length ? el("div.use", { text: "Use when: " + l.use_when.join("; ") }) : null,
            (l.do_not_use_when || []).length ? el("div.dont", { text: "Not when: " + l.do_not_use_when.join("; ") }) : null),
        ])))));
  }

  // The panel at the side of the page; the lab's file first (it overrides the defaults), then the taxonomy.
  function panel(labels) {
    const source = document.getElementById("lab-guidelines");
    const lab = source && source.content.childNodes.length
      ? el("section.lab", {}, el("h3", { text: "Lab guidelines" }), el("div.markdown", {}, source.content.cloneNode(true)))
      : el("section.lab", {}, el("p.muted", { text: `No lab guidelines: put them in ${source ? source.dataset.path : "guidelines.md"} in the project folder (Markdown).` }));
    const box = el("aside.guidelines", { id: "guidelines", hidden: true, "aria-label": "Guidelines" },
      el("div.guidelines-head", {}, el("h2", { text: "Guidelines" }),
        el("button.link", { type: "button", id: "guidelines-close", text: "close (g)", onclick: () => toggle(false) })),
      lab, taxonomy(labels));
    return box;
  }
  function toggle(force) {
    const box = document.getElementById("guidelines");
    if (!box) return;
    box.hidden = force === undefined ? !box.hidden : !force;
    document.body.classList.toggle("with-guidelines", !box.hidden);
  }

  // Digits pick a label in a focused label list: 1 is the first label, 0 clears it. Two digits typed
  // in quick succession reach the labels past the ninth (18 in the family strategies).
  function labelHotkeys(select) {
    let typed = "", last = 0;
    select.addEventListener("keydown", (e) => {
      if (!/^[0-9]$/.test(e.key) || e.ctrlKey || e.metaKey || e.altKey) return;
      e.preventDefault();
      const count = select.options.length - 1;  // the first option is "(none)"
      const now = Date.now();
      typed = now - last < 900 ? typed + e.key : e.key;
      last = now;
      let n = Number(typed);
      if (typed.length > 1 && (n > count || n === 0)) { typed = e.key; n = Number(e.key); }
      if (n > count) return;
      select.selectedIndex = n;
      select.dispatchEvent(new Event("change", { bubbles: true }));
    });
    return select;
  }

  return { shortcutBar, panel, toggle, labelHotkeys };
})();
