// Shared by every page: the JSON API client (CSRF header on writes) and DOM helpers that only ever set
// text, never HTML, so data and user text always show as text.
"use strict";
const Review = (() => {
  const meta = document.querySelector('meta[name="csrf"]');
  let csrf = meta ? meta.content : "";

  async function api(method, url, body) {
    const headers = { "Accept": "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (method !== "GET") headers["X-CSRF-Token"] = csrf;
    const response = await fetch(url, {
      method, headers, credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    let data = null;
    const type = response.headers.get("content-type") || "";
    if (type.includes("json")) data = await response.json();
    else data = await response.text();
    if (response.status === 401 && !url.endsWith("/api/login")) {
      location.href = "/login?next=" + encodeURIComponent(location.pathname + location.search);
    }
    return { status: response.status, ok: response.ok, data };
  }

  // el("div.cls#id", {attr: v, onclick: f}, child, "text", ...) — strings become text nodes.
  function el(spec, attrs, ...children) {
    const [, tag, rest] = spec.match(/^([a-z0-9]+)(.*)$/i);
    const node = document.createElement(tag);
    for (const part of rest.match(/[.#][^.#]+/g) || []) {
      if (part[0] === ".") node.classList.add(part.slice(1)); else node.id = part.slice(1);
    }
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else if (key === "text") node.textContent = value;
      else if (key in node && typeof value !== "string") node[key] = value;
      else node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function boot() {
    const node = document.getElementById("boot");
    const data = node ? JSON.parse(node.textContent) : {};
    if (data.csrf) csrf = data.csrf;
    return data;
  }

  // Values, not JSON text: the server stores list entries with sorted keys while the draft keeps the model's
  // order, so two spellings of one value must compare equal. A missing key counts as null, as in the export.
  function equal(a, b) {
    if (a === undefined) a = null;
    if (b === undefined) b = null;
    if (a === b) return true;
    if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
    if (Array.isArray(a) !== Array.isArray(b)) return false;
    if (Array.isArray(a)) return a.length === b.length && a.every((x, i) => equal(x, b[i]));
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) if (!equal(a[k], b[k])) return false;
    return true;
  }

  // A value as text. A list entry's parts come in the field's own order (``field.item``), whatever order the
  // object's keys have, so every copy of one entry reads the same.
  function show(value, field, separator = "; ") {
    if (value === null || value === undefined || value === "") return "—";
    if (Array.isArray(value)) {
      if (!value.length) return "(none)";
      const order = field && field.item && field.item.length ? field.item.map((p) => p.key) : null;
      const part = (x) => (Array.isArray(x) ? x.join("+") : x);
      return value.map((v) => {
        if (v === null || typeof v !== "object") return v;
        const keys = order ? [...order, ...Object.keys(v).filter((k) => !order.includes(k))] : Object.keys(v);
        return keys.filter((k) => k in v).map((k) => part(v[k])).join(" · ");
      }).join(separator);
    }
    return String(value);
  }

  function segmentUrl(id) { return "/api/segments/" + encodeURIComponent(id); }

  const logout = document.getElementById("logout");
  if (logout) logout.addEventListener("click", async () => {
    await api("POST", "/api/logout");
    location.href = "/login";
  });

  return { api, el, boot, segmentUrl, equal, show };
})();
