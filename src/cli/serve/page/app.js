// stpreset preview: the page's whole logic, hand-written (docs/serve.md says why).
// Every text that comes from a preset or a chat goes into the page through `textContent`,
// never as markup: a node whose text is HTML shows that HTML as text.
"use strict";

const MAX_INPUT = 2 * 1024 * 1024; // the CLI's input limit, per file
const $ = (id) => document.getElementById(id);

const state = {
  preset: null, // {name, text}
  context: { name: "", text: "" }, // name "" = the built-in sample chat
  sample: "",
  // Without a prototype, so that a node named `__proto__` is a key like any other.
  toggles: Object.create(null),
  shape: "",
  layout: "", // "" = the context's own `layout`
  generation: "", // "" = the context's own `generation_type`
  allowRegex: false,
  seq: 0,
  inflight: null,
  names: new Map(), // node identifier → name, for the messages' labels
  open: new Map(), // header node identifier → whether its section is open
  store: null, // {server, id}: the stored preset the page previews (`serve --db`)
  search: "",
  startErrors: "", // about the files on the command line: shown until another file is opened
};

// --- Small helpers ---------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") e.className = v;
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

// Names, identifiers and messages about them show control and direction-changing characters
// as visible marks, so a node named with a right-to-left override cannot disguise itself or
// reorder the page around it. (Message text is shown exactly, isolated by CSS.)
const INVISIBLE = /[\u0000-\u001f\u007f\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g;
function shown(s) {
  return String(s ?? "").replace(INVISIBLE, (c) => {
    const n = c.codePointAt(0);
    if (n < 0x20) return String.fromCodePoint(0x2400 + n);
    if (n === 0x7f) return "\u2421";
    return "\u27e8U+" + n.toString(16).toUpperCase().padStart(4, "0") + "\u27e9";
  });
}

function plural(n, word) {
  return `${n.toLocaleString()} ${word}${n === 1 ? "" : "s"}`;
}

function showError(message) {
  const e = $("error");
  e.textContent = message || "";
  e.hidden = !message;
}

function setStatus(text) {
  $("status").textContent = text;
}

// --- Files -----------------------------------------------------------------------------

// Reads a dropped or picked file as the CLI would: at most 2 MiB, UTF-8 (a byte order mark
// dropped, as the library drops it), JSON.
async function readFile(file) {
  if (file.size > MAX_INPUT) {
    throw new Error(`${file.name}: input is over the limit of ${MAX_INPUT} bytes`);
  }
  const bytes = await file.arrayBuffer();
  let text;
  try {
    // The decoder drops a byte order mark, as the library does.
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new Error(`${file.name}: not valid UTF-8`);
  }
  let json;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new Error(`${file.name}: not JSON (${e.message})`);
  }
  return { name: file.name, text, json };
}

// A dropped file is a preset when it has a preset's keys, else a context.
function isPreset(json) {
  return json !== null && typeof json === "object" && !Array.isArray(json) &&
    ("prompts" in json || "prompt_order" in json || "sysprompt" in json);
}

async function takeFiles(files, as) {
  state.startErrors = "";
  showError("");
  for (const file of files) {
    try {
      const f = await readFile(file);
      const kind = as || (isPreset(f.json) ? "preset" : "context");
      if (kind === "preset") {
        state.preset = { name: f.name, text: f.text };
        state.toggles = Object.create(null);
        state.open = new Map();
        // Another file is not the stored preset: nothing to save it to.
        state.store = null;
        $("save").hidden = true;
      } else {
        state.context = { name: f.name, text: f.text };
      }
    } catch (e) {
      showError(e.message);
      return;
    }
  }
  refresh();
}

// --- Talking to the server -------------------------------------------------------------

function body(extra = "") {
  // The files' own text goes in as it is: the server imports those bytes, as the CLI would.
  const ctx = state.context.text || state.sample;
  // Scripts are named only while the Regex tab is open: each costs the server one more pass.
  const byScript = state.allowRegex && !$("panel-regex").hidden;
  return `{"preset":${state.preset.text},"context":${ctx},"toggles":${JSON.stringify(state.toggles)},` +
    `"shape":${JSON.stringify(state.shape || null)},"layout":${JSON.stringify(state.layout || null)},` +
    `"generation":${JSON.stringify(state.generation || null)},` +
    `"allow_regex":${state.allowRegex},` +
    `"regex_by_script":${byScript}${extra}}`;
}

async function refresh() {
  if (!state.preset) return;
  const seq = ++state.seq;
  if (state.inflight) state.inflight.abort();
  const abort = new AbortController();
  state.inflight = abort;
  document.body.setAttribute("aria-busy", "true");
  let answer;
  try {
    const r = await fetch("/api/preview", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: body(),
      signal: abort.signal,
    });
    answer = await r.json();
    if (!r.ok) throw new Error(answer?.error?.message || `the server answered ${r.status}`);
  } catch (e) {
    if (e.name === "AbortError" || seq !== state.seq) return;
    document.body.removeAttribute("aria-busy");
    showError(e.message);
    // The hook moves on errors too, so a test waiting for an answer sees this one.
    document.body.dataset.rendered = `error-${seq}`;
    return;
  }
  if (seq !== state.seq) return;
  document.body.removeAttribute("aria-busy");
  showError(state.startErrors);
  show(answer);
  document.body.dataset.rendered = String(seq);
}

// Switches and selects ask after a short pause: a burst of clicks costs the server one render,
// not one each (it finishes a render even when the page no longer wants it).
let pending = null;
function soon() {
  clearTimeout(pending);
  pending = setTimeout(refresh, 120);
}

// --- Showing an answer -----------------------------------------------------------------

function show(a) {
  const render = a.render;
  showNodes(a.nodes, a.outline);
  showLore(a.lore);
  showMessages(render.messages, a.tokens);
  showDiagnostics($("diagnostics"), render.diagnostics, a.sources);
  showDiagnostics($("audit"), a.audit.diagnostics, a.sources);
  const total = (list, more) => (list.length + more).toLocaleString();
  $("diagnostics-count").textContent = `(${total(render.diagnostics, a.omitted.render)})`;
  $("audit-count").textContent = `(${total(a.audit.diagnostics, a.omitted.audit)})`;
  const more = (n) => n ? `${plural(n, "more diagnostic")} not shown; \`stpreset render --format json\` lists every one.` : "";
  $("diagnostics-more").textContent = more(a.omitted.render);
  $("audit-more").textContent = more(a.omitted.audit).replace("render", "audit");
  showRequest(a.request, render.diagnostics.length, a.sources);
  showSettings(render.effective, a.settings);
  showRegex(a.regex);
  const on = a.nodes.filter((n) => n.enabled).length;
  const ctx = state.context.name ? `context ${shown(state.context.name)}` : "the sample chat";
  setStatus(`${shown(state.preset.name)}: ${on} of ${plural(a.nodes.length, "node")} on · ` +
    `${plural(render.messages.length, "message")} · ${ctx}`);
}

// The prompt manager: the nodes under the sections their author's header nodes open (the
// library's outline, `stpreset nodes`), each with its switch, badges and tooltip. Large
// presets open with their sections closed; a section keeps its state across renders.
function showNodes(nodes, outline) {
  state.names = new Map();
  for (const n of nodes) if (!state.names.has(n.identifier)) state.names.set(n.identifier, n.name);
  const counts = new Map();
  const walk = (sections) => {
    for (const s of sections) {
      counts.set(s.identifier, s);
      walk(s.sections);
    }
  };
  walk(outline.sections);
  const openByDefault = nodes.length <= 60;
  const top = document.createDocumentFragment();
  let main = null;
  let sub = null;
  nodes.forEach((n, i) => {
    const o = outline.nodes[i] || {};
    const row = nodeRow(n, o, i);
    if (o.header) {
      const s = counts.get(n.identifier) || { title: n.name, enabled: 0, total: 0 };
      const open = state.open.has(n.identifier) ? state.open.get(n.identifier) : openByDefault;
      const list = el("ol", {});
      const details = el("details", { open },
        el("summary", {}, el("span", { class: "title" }, shown(s.title)), " ",
          el("span", { class: "count", title: "nodes on, of the nodes under this header" }, `${s.enabled}/${s.total}`)),
        list);
      details.addEventListener("toggle", () => {
        // The search opens sections to show its hits: that is not the reader's choice.
        if (!state.search) state.open.set(n.identifier, details.open);
      });
      const item = el("li", { class: `section ${o.header}`, "data-section": n.identifier }, details);
      list.append(row);
      if (o.header === "sub" && main) {
        main.append(item);
        sub = list;
      } else {
        // A sub-header before any main header stands alone, as a main one.
        top.append(item);
        main = list;
        sub = null;
      }
      return;
    }
    (sub || main || top).append(row);
  });
  $("nodes").replaceChildren(top);
  filterNodes();
}

function nodeRow(n, o, i) {
  const box = el("input", { type: "checkbox", id: `node-${i}`, checked: n.enabled });
  box.dataset.identifier = n.identifier;
  box.addEventListener("change", () => {
    if (box.checked) switchOn(n.identifier, box);
    else {
      state.toggles[n.identifier] = false;
      clearOffers();
      soon();
    }
  });
  // Most nodes speak as system: only the others say so.
  const badges = n.role === "system" ? [] : [el("span", { class: "badge" }, n.role)];
  if (n.marker) badges.push(el("span", { class: "badge marker" }, "marker"));
  if (n.injection) {
    badges.push(el("span", { class: "badge inject" },
      `@ depth ${n.injection.depth}, order ${n.injection.order}`));
  }
  if (o.header) badges.push(el("span", { class: "badge" }, "header"));
  for (const b of o.badges || []) badges.push(el("span", { class: "badge author" }, shown(b)));
  for (const g of o.groups || []) {
    badges.push(el("span", { class: "badge group", title: "at most one node of this group on" }, `one of: ${shown(g)}`));
  }
  const label = el("label", { for: `node-${i}`, title: o.tooltip ? shown(o.tooltip) : null }, box,
    el("span", { class: "about" }, el("span", { class: "name" }, shown(n.name)), " ", ...badges,
      el("span", { class: "id", title: shown(n.identifier) }, shown(n.identifier))));
  const li = el("li", { class: n.enabled ? "node" : "node off", "data-identifier": n.identifier }, label);
  li.dataset.search = `${n.name}\n${n.identifier}`.toLowerCase();
  return li;
}

// Shows the nodes whose name or identifier holds the search text, with the sections they
// are in opened; an empty search shows everything as the reader left it.
function filterNodes() {
  const q = state.search.trim().toLowerCase();
  const list = $("nodes");
  for (const li of list.querySelectorAll("li.node")) li.hidden = q !== "" && !li.dataset.search.includes(q);
  // Inner sections first, so an outer one sees whether any of its sub-sections has a hit.
  for (const sec of [...list.querySelectorAll("li.section")].reverse()) {
    const details = sec.firstElementChild;
    if (q === "") {
      sec.hidden = false;
      const id = sec.dataset.section;
      if (state.open.has(id)) details.open = state.open.get(id);
      continue;
    }
    const hit = sec.querySelector("li.node:not([hidden])") !== null;
    sec.hidden = !hit;
    details.open = hit;
  }
}

// Switching a node on asks the server whether the author's constraints allow it (the
// library's check, as the store's toggle makes it). Allowed: the switches it makes are
// applied (with what the author's own directives resolve). Refused: the page offers to
// switch the nodes in the way off (or the required ones on), or to switch it on anyway.
async function switchOn(identifier, box) {
  clearOffers();
  let answer;
  try {
    const r = await fetch("/api/switch", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: body(`,"switch":${JSON.stringify({ [identifier]: true })}`),
    });
    answer = await r.json();
    if (!r.ok) throw new Error(answer?.error?.message || `the server answered ${r.status}`);
  } catch (e) {
    showError(e.message);
    box.checked = false;
    return;
  }
  if (answer.switched) {
    apply(answer.switched);
    return;
  }
  box.checked = false;
  const { node, issues } = answer.refused;
  const offer = el("div", { class: "offer", role: "group", "aria-label": "This switch breaks the preset's rules" });
  for (const i of issues) {
    offer.append(el("p", {}, shown(i.message), i.author ? el("span", { class: "author" }, ` — “${shown(i.author)}”`) : ""));
  }
  const buttons = el("div", { class: "actions" });
  const fix = answer.resolution;
  if (fix) {
    const others = fix.changes.filter((c) => c.identifier !== node);
    const off = others.filter((c) => !c.enabled).length;
    const on = others.length - off;
    const what = [off ? `switch ${plural(off, "other")} off` : "", on ? `switch ${plural(on, "required node")} on` : ""]
      .filter(Boolean).join(" and ");
    const b = el("button", { type: "button", class: "primary", "data-action": "resolve" }, `Turn it on and ${what}`);
    b.addEventListener("click", () => {
      clearOffers();
      apply(fix);
    });
    buttons.append(b);
  }
  const anyway = el("button", { type: "button", "data-action": "anyway" }, "Turn it on anyway");
  anyway.addEventListener("click", () => {
    clearOffers();
    state.toggles[identifier] = true;
    soon();
  });
  const cancel = el("button", { type: "button", "data-action": "cancel" }, "Cancel");
  cancel.addEventListener("click", () => {
    clearOffers();
    box.focus();
  });
  buttons.append(anyway, cancel);
  offer.append(buttons);
  box.closest("li").append(offer);
  offer.querySelector("button").focus();
}

function clearOffers() {
  for (const o of document.querySelectorAll("#nodes .offer")) o.remove();
}

function apply(done) {
  for (const c of done.changes) state.toggles[c.identifier] = c.enabled;
  // What was resolved is said as what was switched (the rule's text read like an error).
  const name = (id) => shown(state.names.get(id) || id);
  const notes = done.resolved.map((r) => `${r.kind === "missing-dependency" ? "Switched on" : "Switched off"}: ` +
    `${r.others.map(name).join(", ")} (for ${name(r.node)})`);
  for (const w of done.warnings) notes.push(shown(w.message) + (w.author ? ` — “${shown(w.author)}”` : ""));
  $("switch-note").textContent = notes.join("\n");
  refresh();
}

// The preset file with the page's switches, as the library reads a file's switches: the
// order list of `character_id` 100001, else 100000; without one, the prompts' own `enabled`.
function switchedPreset() {
  const doc = JSON.parse(state.preset.text);
  const lists = Array.isArray(doc.prompt_order) ? doc.prompt_order : [];
  const has = (id) => lists.find((e) => e && e.character_id === id && Array.isArray(e.order));
  const order = has(100001) || has(100000);
  for (const [id, on] of Object.entries(state.toggles)) {
    const entries = order ? order.order : (Array.isArray(doc.prompts) ? doc.prompts : []);
    for (const e of entries) if (e && e.identifier === id) e.enabled = on;
  }
  return JSON.stringify(doc, null, 4);
}

// Writes the page's switches to the stored preset, through the store's checked toggle: a
// switch the author's constraints refuse is refused there too, and nothing is written.
async function save() {
  if (!state.store) return;
  try {
    const r = await fetch("/api/store/save", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      // Pairs, in the order the page switched them: the store checks the ons in that order.
      body: JSON.stringify({ toggles: Object.entries(state.toggles) }),
    });
    const answer = await r.json();
    if (!r.ok) throw new Error(answer?.error?.message || `the server answered ${r.status}`);
    showError("");
    $("switch-note").textContent = `Saved to the store (preset ${state.store.id}, server ${state.store.server}).`;
  } catch (e) {
    showError(`not saved: ${e.message}`);
  }
}

function download() {
  if (!state.preset) return;
  const url = URL.createObjectURL(new Blob([switchedPreset()], { type: "application/json" }));
  const a = el("a", { href: url, download: state.preset.name || "preset.json", hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

// `injection` is, in the seed layout, the list of sources joined into one message and, in
// the SillyTavern layout, one depth message's `{depth, order, role}`.
function joined(source) {
  return Array.isArray(source.injection) ? source.injection : null;
}

// The identifier or tag a message came from (`data-source`).
function sourceId(source) {
  if ("node" in source) return source.node;
  if ("tag" in source) return source.tag ?? "untagged";
  if ("setting" in source) return `setting:${source.setting}`;
  if ("example" in source) return `example:${source.example}`;
  if ("injection" in source) {
    const parts = joined(source);
    return parts ? parts.map(sourceId).join(" ") : `depth:${source.injection?.depth}`;
  }
  return "";
}

function sourceLabel(source) {
  if ("node" in source) {
    const name = state.names.get(source.node);
    return name && name !== source.node ? `${shown(name)} (${shown(source.node)})` : `node ${shown(source.node)}`;
  }
  if ("tag" in source) return source.tag ? `host item ${source.tag}` : "untagged host item";
  if ("setting" in source) return `setting ${shown(source.setting)}`;
  if ("example" in source) return `example line ${Number(source.example) + 1}`;
  if ("injection" in source) {
    const parts = joined(source);
    if (parts) return `injected at depth: ${parts.map(sourceId).map(shown).join(", ")}`;
    const at = source.injection ?? {};
    return `injected at depth ${at.depth}, order ${at.order} (${at.role})`;
  }
  return "";
}

function showMessages(messages, tokens) {
  const list = document.createDocumentFragment();
  messages.forEach((m, i) => {
    const injected = "injection" in m.source;
    const cost = tokens.messages[i];
    const head = el("header", {},
      el("span", { class: "role" }, m.role),
      el("span", { class: "src" }, sourceLabel(m.source)),
      el("span", { class: "tok" }, cost === undefined ? "" : plural(cost, "token")));
    const item = el("li", {
      class: injected ? "msg injected" : "msg",
      "data-role": m.role,
      "data-source": sourceId(m.source),
      "data-index": i,
    }, head);
    m.parts.forEach((p, k) => {
      // A history message's later parts are depth nodes merged into it (`\n[System: …]`).
      const merged = k > 0 && m.source.tag === "DIALOGUE_HISTORY";
      const part = el("div", {
        class: merged ? "part injected" : "part",
        "data-part": k,
        "data-from": merged ? "at this depth" : null,
      });
      part.textContent = p;
      if (p === "") part.append(el("span", { class: "empty" }, "(empty)"));
      item.append(part);
    });
    list.append(item);
  });
  $("messages").replaceChildren(list);
  let t = `· ${plural(tokens.total, "token")}`;
  if (tokens.max_context_tokens !== null && tokens.max_context_tokens !== undefined) {
    const room = tokens.max_context_tokens - tokens.reserve_tokens;
    t += ` of ${room.toLocaleString()} available (context ${tokens.max_context_tokens.toLocaleString()}` +
      `, ${tokens.reserve_tokens.toLocaleString()} kept for the reply)`;
  }
  $("tokens").textContent = t;
}

// The lines around a diagnostic, its span marked. Line and column count as the library does:
// lines split at `\n`, the column is 1-based in UTF-8 bytes. Long lines are cut to a window
// around the mark, so a 2 MiB one-line node shows a few hundred characters.
// The side panel is narrow: a long line shows from a little before the mark to a little after.
const WINDOW = 120;
const BEFORE = 40;
const AFTER = 80;
function snippet(content, d) {
  const lines = content.split("\n");
  const at = d.line - 1;
  if (at < 0 || at >= lines.length) return null;
  const enc = new TextEncoder();
  const dec = new TextDecoder();
  const line = lines[at];
  const bytes = enc.encode(line);
  const startByte = Math.min(bytes.length, Math.max(0, (d.column || 1) - 1));
  const spanLen = d.span ? Math.max(0, d.span[1] - d.span[0]) : 0;
  const endByte = Math.min(bytes.length, startByte + spanLen);
  const start = dec.decode(bytes.subarray(0, startByte)).length;
  const end = Math.max(start, dec.decode(bytes.subarray(0, endByte)).length);
  const pre = el("pre", { class: "snippet", tabindex: 0 });
  const cut = (text, from, to) => {
    from = Math.max(0, from);
    to = Math.min(text.length, to);
    return [from > 0 ? "…" : "", text.slice(from, to), to < text.length ? "…" : ""];
  };
  const width = String(Math.min(lines.length, at + 3)).length;
  const number = (n) => el("span", { class: "ln" }, String(n).padStart(width) + " │ ");
  for (let k = Math.max(0, at - 2); k <= Math.min(lines.length - 1, at + 2); k++) {
    if (k !== at) {
      const [a, b, c] = cut(lines[k], 0, WINDOW);
      pre.append(number(k + 1), a + b + c, "\n");
      continue;
    }
    const from = line.length > WINDOW ? start - BEFORE : 0;
    const to = line.length > WINDOW ? Math.max(end, start) + AFTER : line.length;
    const [lead, , trail] = cut(line, from, to);
    const lo = Math.max(0, from);
    const hit = el("span", { class: "hit" }, number(k + 1), lead, line.slice(lo, start),
      el("mark", {}, end > start ? line.slice(start, Math.min(end, to)) : " "),
      line.slice(Math.min(end, to), Math.min(line.length, to)), trail);
    pre.append(hit, "\n");
  }
  return pre;
}

function showDiagnostics(target, diags, sources) {
  const list = document.createDocumentFragment();
  diags.forEach((d, i) => {
    const where = [d.node ? `node ${shown(d.node)}` : null,
      d.line ? `line ${d.line}, column ${d.column}` : null,
      d.script !== undefined && d.script !== null ? `script ${d.script + 1}` : null]
      .filter(Boolean).join(" · ");
    const source = d.node && d.line ? sources[d.node] : undefined;
    const button = el("button", {
      type: "button", class: "diag", "aria-expanded": source === undefined ? null : "false",
    },
      el("span", { class: `sev ${d.severity}` }, d.severity), el("strong", {}, d.kind), " ",
      el("span", { class: "where" }, where),
      el("span", { class: "text" }, shown(d.message)));
    const item = el("li", { "data-kind": d.kind, "data-index": i }, button);
    if (source !== undefined) {
      button.addEventListener("click", () => {
        const open = item.querySelector(".snippet");
        if (open) {
          open.remove();
          button.setAttribute("aria-expanded", "false");
          return;
        }
        const pre = snippet(source, d);
        if (pre) {
          item.append(pre);
          pre.scrollIntoView({ block: "nearest" });
        }
        button.setAttribute("aria-expanded", "true");
      });
    }
    list.append(item);
  });
  // Empty, the list shows "None." by CSS: its children are exactly its diagnostics.
  target.replaceChildren(list);
}

function showRequest(doc, renderDiags, sources) {
  $("request-hint").hidden = doc !== null;
  $("request").hidden = doc === null;
  $("request").textContent = doc === null ? "" : JSON.stringify(doc.request, null, 2);
  let extra = $("request-diagnostics");
  if (!extra) {
    extra = el("ol", { id: "request-diagnostics", class: "diags" });
    $("panel-request").append(extra);
  }
  const own = doc === null ? [] : doc.diagnostics.slice(renderDiags);
  if (own.length) showDiagnostics(extra, own, sources);
  else extra.replaceChildren();
}

function table(target, obj) {
  const list = document.createDocumentFragment();
  const keys = Object.keys(obj || {});
  for (const k of keys) {
    const v = obj[k];
    list.append(el("dt", {}, shown(k)), el("dd", {}, typeof v === "string" ? shown(v) : shown(JSON.stringify(v))));
  }
  if (!keys.length) list.append(el("dt", {}, "—"), el("dd", {}, "none"));
  target.replaceChildren(list);
}

function showSettings(effective, settings) {
  table($("effective"), effective);
  table($("settings"), settings);
}

const PLACEMENTS = { 1: "user input", 2: "AI output", 3: "slash commands", 5: "world info", 6: "reasoning" };

function clip(text, n) {
  return text.length > n ? text.slice(0, n) + more(text.length - n) : text;
}

// The server sends the start of a long text and the count of the rest.
function more(omitted) {
  return omitted ? `… (${omitted.toLocaleString()} more characters)` : "";
}

function showRegex(r) {
  const names = new Map(r.scripts.map((s) => [s.position, s.name || `script ${s.position + 1}`]));
  // (The page asks for the scripts' names only while this tab is open.)
  $("regex-hint").textContent = r.scripts.length === 0
    ? "This preset has no regex scripts."
    : r.allowed
      ? (r.attributed || r.messages.length === 0
        ? "The prompt pass ran on the history: each changed message names the scripts that changed it."
        : "The prompt pass ran on the history (too many scripts to tell them apart).")
      : "The scripts did not run: a bot runs them only when it allows them (allow_preset_regex). Tick “Run regex scripts” to see them at work.";
  const scripts = document.createDocumentFragment();
  for (const s of r.scripts) {
    const flags = [s.disabled ? "disabled" : null, s.prompt_only ? "prompt only" : null,
      s.markdown_only ? "display only" : null, s.run_on_edit ? "on edit" : null]
      .filter(Boolean);
    const where = s.placement.map((p) => PLACEMENTS[p] || `placement ${p}`).join(", ") || "no placement";
    scripts.append(el("li", { "data-position": s.position },
      el("strong", {}, `${s.position + 1}. `, el("span", { class: "name" }, shown(s.name || "(unnamed)"))),
      el("div", { class: "hint" }, `${where}${flags.length ? " · " + flags.join(", ") : ""}`),
      el("code", {}, shown(clip(s.find_regex, 300)))));
  }
  $("regex-scripts").replaceChildren(scripts);
  const changes = document.createDocumentFragment();
  for (const m of r.messages) {
    const by = m.scripts === null ? "" : ` · changed by ${m.scripts.map((p) => shown(names.get(p))).join(", ")}`;
    changes.append(el("li", { "data-item": m.item },
      el("div", {}, el("strong", {}, `History item ${m.item + 1}`), ` (depth ${m.depth})${by}`),
      el("del", { class: "text" }, m.before + more(m.before_omitted)),
      el("ins", { class: "text" }, m.after === null ? "(dropped)" : m.after + more(m.after_omitted))));
  }
  if (r.omitted) {
    changes.append(el("li", { class: "hint" }, `${plural(r.omitted, "more changed message")} not listed.`));
  }
  $("regex-messages").replaceChildren(changes);
}

const WHERE = { 0: "before the character", 1: "after the character", 2: "Author's Note, top",
  3: "Author's Note, bottom", 5: "before the examples", 6: "after the examples", 7: "outlet" };

// The World Info entries this render activated, one by one (the prompt carries them joined).
function showLore(lore) {
  const total = lore.entries.length + lore.omitted;
  $("lore-count").textContent = total ? `(${total.toLocaleString()})` : "";
  $("lore-hint").textContent = total === 0
    ? "No World Info entry fired in this render. A context with lorebooks (or `stpreset serve --card/--book`) brings them."
    : `${total.toLocaleString()} ${total === 1 ? "entry" : "entries"} fired, in activation order.` +
      (lore.omitted ? ` The first ${lore.entries.length.toLocaleString()} are listed.` : "");
  const list = document.createDocumentFragment();
  for (const e of lore.entries) {
    const where = e.position === 4 ? `at depth ${e.depth}` : WHERE[e.position] || `position ${e.position}`;
    const text = el("pre", { class: "text" });
    text.textContent = e.content + more(e.content_omitted);
    list.append(el("li", { "data-entry": e.name },
      el("details", {},
        el("summary", {}, el("strong", {}, shown(e.comment || e.name)), " ",
          el("span", { class: "hint" }, `${where} · order ${e.order}` +
            (e.keys.length ? ` · keys: ${e.keys.map(shown).join(", ")}` : " · constant"))),
        text)));
  }
  $("lore").replaceChildren(list);
}

// --- Tabs ------------------------------------------------------------------------------

function selectTab(tab) {
  for (const t of document.querySelectorAll("[role=tab]")) {
    const on = t === tab;
    t.setAttribute("aria-selected", String(on));
    t.tabIndex = on ? 0 : -1;
    $(t.getAttribute("aria-controls")).hidden = !on;
  }
  // Opening the Regex tab asks the server which script changed what.
  if (tab.id === "tab-regex" && state.allowRegex && state.preset) soon();
}

function setUpTabs() {
  const tabs = [...document.querySelectorAll("[role=tab]")];
  for (const t of tabs) {
    t.addEventListener("click", () => selectTab(t));
    t.addEventListener("keydown", (e) => {
      const i = tabs.indexOf(t);
      const next = e.key === "ArrowRight" ? tabs[(i + 1) % tabs.length]
        : e.key === "ArrowLeft" ? tabs[(i - 1 + tabs.length) % tabs.length]
        : e.key === "Home" ? tabs[0] : e.key === "End" ? tabs[tabs.length - 1] : null;
      if (next) {
        e.preventDefault();
        selectTab(next);
        next.focus();
      }
    });
  }
}

// --- Start -----------------------------------------------------------------------------

function setUpInputs() {
  $("preset-file").addEventListener("change", (e) => takeFiles(e.target.files, "preset"));
  $("context-file").addEventListener("change", (e) => takeFiles(e.target.files, "context"));
  $("sample-context").addEventListener("click", () => {
    state.context = { name: "", text: "" };
    refresh();
  });
  $("shape").addEventListener("change", (e) => {
    state.shape = e.target.value;
    soon();
  });
  $("layout").addEventListener("change", (e) => {
    state.layout = e.target.value;
    soon();
  });
  $("generation").addEventListener("change", (e) => {
    state.generation = e.target.value;
    soon();
  });
  $("node-search").addEventListener("input", (e) => {
    state.search = e.target.value;
    filterNodes();
  });
  $("download").addEventListener("click", download);
  $("save").addEventListener("click", save);
  $("allow-regex").addEventListener("change", (e) => {
    state.allowRegex = e.target.checked;
    soon();
  });
  let depth = 0;
  window.addEventListener("dragenter", (e) => {
    e.preventDefault();
    depth++;
    $("drop").hidden = false;
  });
  window.addEventListener("dragleave", () => {
    if (--depth <= 0) {
      depth = 0;
      $("drop").hidden = true;
    }
  });
  window.addEventListener("dragover", (e) => e.preventDefault());
  window.addEventListener("drop", (e) => {
    e.preventDefault();
    depth = 0;
    $("drop").hidden = true;
    if (e.dataTransfer?.files?.length) takeFiles(e.dataTransfer.files, null);
  });
}

async function start() {
  setUpTabs();
  setUpInputs();
  try {
    const r = await fetch("/api/start");
    const s = await r.json();
    if (!r.ok) throw new Error(s?.error?.message || `the server answered ${r.status}`);
    if (s.context.name) state.context = s.context;
    else state.sample = s.context.text;
    if (s.preset) state.preset = s.preset;
    if (s.store) {
      // The stored switches, over the file's.
      state.store = { server: s.store.server, id: s.store.id };
      state.toggles = Object.assign(Object.create(null), s.store.toggles);
      $("save").hidden = false;
    }
    // The files were read as the CLI reads them; one that is not JSON is said here, not as
    // a broken request body.
    for (const f of [state.preset, s.context]) {
      if (!f) continue;
      try {
        JSON.parse(f.text);
      } catch (e) {
        s.errors.push(`${shown(f.name)}: not JSON (${e.message})`);
        if (f === state.preset) state.preset = null;
        else state.context = { name: "(empty context)", text: "null" };
      }
    }
    state.startErrors = s.errors.join("\n");
    showError(state.startErrors);
  } catch (e) {
    showError(`cannot reach the server: ${e.message}`);
    return;
  }
  if (state.preset) refresh();
  else document.body.dataset.rendered = "none";
}

start();
