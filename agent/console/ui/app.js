// The StoatFlow console. Everything it shows comes from the agent's documented endpoints
// (docs/http.md): /topology, /topology/ks, /v1/status, /v1/stores…, /v1/tap/{node}.
import { graphlib, layout } from "/ui/vendor/dagre.js";

const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const POLL_MS = 1000;
const HISTORY = 60; // samples kept for rates and sparklines
const COUNT_EVERY_MS = 30000; // entries are counted by walking the stores: not every second

// --- the token: #token=… in the address (not sent to the server), else sessionStorage ---
const TOKEN_KEY = "stoatflow.token";
if (location.hash.startsWith("#token=")) {
  sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(location.hash.slice(7)));
  history.replaceState(null, "", location.pathname);
}
const headers = () => {
  const t = sessionStorage.getItem(TOKEN_KEY);
  return t ? { Authorization: "Bearer " + t } : {};
};

class HTTPError extends Error {
  constructor(status, body) {
    super(body.error || "HTTP " + status);
    this.status = status;
    this.code = body.code;
  }
}

// Integers beyond 2^53 (a long in a store, as in the purchases example's lastOrderId) lose
// digits as JavaScript numbers: they are read as BigInt from the JSON text and written back
// with their digits (JSON.rawJSON). A browser without these shows the nearest number.
const parseJSON = (text) => JSON.parse(text, (_, v, ctx) =>
  typeof v === "number" && !Number.isSafeInteger(v) && ctx && /^-?\d+$/.test(ctx.source) ? BigInt(ctx.source) : v);
// Values are shown as JSON with a space after each comma and colon, where a long value can
// wrap (strings hold no raw line breaks, so only the indentation's are replaced).
const toJSON = (v) => JSON.stringify(v, (_, x) => (typeof x === "bigint" ? JSON.rawJSON(String(x)) : x), 1)?.replace(/\n */g, " ");

async function request(path, init = {}, as = "json") {
  const res = await fetch(path, { ...init, headers: { ...headers(), ...init.headers } });
  if (res.status === 401) $("token-form").hidden = false;
  if (!res.ok) {
    let body = {};
    try { body = await res.json(); } catch { /* not JSON */ }
    throw new HTTPError(res.status, body);
  }
  return as === "json" ? parseJSON(await res.text()) : res.text();
}

const get = (path, as = "json") => request(path, {}, as);
const post = (path, body) => request(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });

function showError(err) {
  const el = $("error");
  if (!err) { el.hidden = true; return; }
  el.hidden = false;
  el.textContent = err.message;
}

$("token-form").addEventListener("submit", (e) => {
  e.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $("token").value);
  $("token").value = "";
  $("token-form").hidden = true;
  start();
});

// --- formatting ---
const fmt = (n, digits = 0) => Number(n).toLocaleString("en", { maximumFractionDigits: digits, minimumFractionDigits: digits });
const rate = (n) => (n >= 100 ? fmt(n) : fmt(n, 1));
const bytes = (n) => {
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  for (; n >= 1024 && i < u.length - 1; i++) n /= 1024;
  return (i ? fmt(n, 1) : fmt(n)) + " " + u[i];
};
const when = (ms) => (ms < 0 ? "–" : new Date(ms).toISOString().replace("T", " ").replace("Z", ""));
const el = (tag, text, cls) => {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
};
const row = (cells) => {
  const tr = el("tr");
  for (const c of cells) tr.append(c instanceof HTMLTableCellElement ? c : c instanceof Node ? wrapCell(c) : el("td", c));
  return tr;
};
const wrapCell = (n) => { const td = el("td"); td.append(n); return td; };
const num = (text) => el("td", text, "num"); // a right-aligned number cell
const json = (v) => (typeof v === "string" ? v : toJSON(v));

// --- the state of the page ---
let topology = null; // GET /topology
let describeText = ""; // GET /topology/ks
let stores = []; // GET /v1/stores
const samples = []; // the last GET /v1/status answers
let selected = null; // the node whose details are shown
let entries = {}; // store → count, from GET /v1/stores/{store}/count
let lastCount = 0;

function nodeRates(name) {
  // records/s into a node, between consecutive samples
  const out = [];
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1], b = samples[i];
    const dt = (b.at - a.at) / 1000;
    const na = a.nodes[name], nb = b.nodes[name];
    out.push(dt > 0 && na && nb ? Math.max(0, (nb.processed - na.processed) / dt) : 0);
  }
  return out;
}

// rates over the last few seconds: records/s, drops/s by reason, Lua share of a core
function recent(name) {
  const n = samples.length;
  if (n < 2) return { rate: 0, drops: {}, lua: 0 };
  const a = samples[Math.max(0, n - 4)], b = samples[n - 1];
  const dt = (b.at - a.at) / 1000;
  const na = a.nodes[name], nb = b.nodes[name];
  if (!na || !nb || dt <= 0) return { rate: 0, drops: {}, lua: 0 };
  const drops = {};
  for (const [reason, v] of Object.entries(nb.dropped)) {
    const d = (v - (na.dropped[reason] || 0)) / dt;
    if (d > 0) drops[reason] = d;
  }
  return { rate: (nb.processed - na.processed) / dt, drops, lua: (nb.luaSeconds - na.luaSeconds) / dt };
}

// --- the graph ---
const measure = document.createElement("canvas").getContext("2d");
function textWidth(text, font) {
  measure.font = font;
  return measure.measureText(text).width;
}
const FONT = getComputedStyle(document.documentElement).fontFamily;
// a node's rate line at its widest, which sets the narrowest a node is drawn
const RATE_WIDTH = textWidth("1,000 rec/s · Lua 100.0% of a core", "12px " + FONT);

function graphModel() {
  const g = new graphlib.Graph({ compound: true });
  g.setGraph({ rankdir: "TB", nodesep: 24, ranksep: 34, marginx: 12, marginy: 12 });
  g.setDefaultEdgeLabel(() => ({}));
  const internalSource = {};
  const groups = topology.subtopologies.map((s) => ({ id: "sub:" + s.id, title: "Sub-topology " + s.id, nodes: s.nodes }));
  for (const gs of topology.globalStores) {
    groups.push({ id: "sub:" + gs.id, title: "Sub-topology " + gs.id + " (global store)", nodes: [gs.source, gs.processor] });
  }
  for (const grp of groups) for (const n of grp.nodes) {
    if (n.type === "source" && n.internal) for (const t of n.topics) internalSource[t] = n.name;
  }
  const edges = [];
  const extra = (id, label, kind) => {
    if (!g.hasNode(id)) g.setNode(id, { label, kind, width: Math.max(90, textWidth(label, "12px " + FONT) + 28), height: 30 });
    return id;
  };
  for (const grp of groups) {
    g.setNode(grp.id, { label: grp.title, cluster: true });
    for (const n of grp.nodes) {
      g.setNode(n.name, { node: n, kind: n.type, width: Math.max(RATE_WIDTH, textWidth(n.name, "600 12px " + FONT)) + 24, height: 56 });
      g.setParent(n.name, grp.id);
    }
  }
  for (const grp of groups) for (const n of grp.nodes) {
    if (n.type === "source" && !n.internal) for (const t of n.topics) edges.push([extra("topic:" + t, t, "topic"), n.name, "topic"]);
    if (n.type === "sink" && n.internal && internalSource[n.topic]) edges.push([n.name, internalSource[n.topic], "memory"]);
    else if (n.type === "sink" && n.topic) edges.push([n.name, extra("topic:" + n.topic, n.topic, "topic"), "topic"]);
    for (const s of n.stores || []) edges.push([n.name, extra("store:" + s, s, "store"), "store"]);
    // a join with a global table reads the global store, which describe() does not list
    for (const s of n.readsGlobal || []) edges.push([n.name, extra("store:" + s, s, "store"), "global"]);
    for (const c of n.successors) edges.push([n.name, c, "flow"]);
  }
  for (const [from, to, kind] of edges) g.setEdge(from, to, { kind });
  layout(g);
  return g;
}

let model = null;

function svg(tag, attrs, parent) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (parent) parent.append(e);
  return e;
}

function drawGraph() {
  model = graphModel();
  const root = $("graph");
  root.replaceChildren();
  const gr = model.graph();
  root.setAttribute("width", Math.ceil(gr.width));
  root.setAttribute("height", Math.ceil(gr.height));
  root.setAttribute("viewBox", `0 0 ${Math.ceil(gr.width)} ${Math.ceil(gr.height)}`);
  const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 9, markerHeight: 9, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" }, svg("defs", {}, root));
  svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#64748b" }, marker);
  for (const id of model.nodes()) {
    const v = model.node(id);
    if (!v.cluster) continue;
    const c = svg("g", { class: "cluster" }, root);
    svg("rect", { x: v.x - v.width / 2, y: v.y - v.height / 2, width: v.width, height: v.height, rx: 6 }, c);
    svg("text", { x: v.x - v.width / 2 + 8, y: v.y - v.height / 2 + 14 }, c).textContent = v.label;
  }
  for (const e of model.edges()) {
    const v = model.edge(e);
    const d = v.points.map((p, i) => (i ? "L" : "M") + p.x.toFixed(1) + "," + p.y.toFixed(1)).join(" ");
    const plain = v.kind === "store" || v.kind === "global";
    v.path = svg("path", { class: "edge " + v.kind, d, "marker-end": plain ? "" : "url(#arrow)", "data-from": e.v, "data-to": e.w }, root);
  }
  for (const id of model.nodes()) {
    const v = model.node(id);
    if (v.cluster) continue;
    const x = v.x - v.width / 2, y = v.y - v.height / 2;
    if (v.node) {
      const n = v.node;
      const g = svg("g", { class: "node " + n.type, "data-node": n.name, tabindex: 0 }, root);
      svg("rect", { x, y, width: v.width, height: v.height, rx: 5 }, g);
      svg("text", { x: x + 10, y: y + 17, class: "name" }, g).textContent = n.name;
      v.rateText = svg("text", { x: x + 10, y: y + 33, class: "rate" }, g);
      v.dropText = svg("text", { x: x + 10, y: y + 48, class: "drops" }, g);
      g.addEventListener("click", () => select(n.name));
      g.addEventListener("keydown", (ev) => { if (ev.key === "Enter") select(n.name); });
    } else if (v.kind === "store") {
      const g = svg("g", { class: "store", "data-store": v.label }, root);
      const r = 6;
      svg("path", { d: `M${x},${y + r} a${v.width / 2},${r} 0 0,0 ${v.width},0 a${v.width / 2},${r} 0 0,0 ${-v.width},0 v${v.height - 2 * r} a${v.width / 2},${r} 0 0,0 ${v.width},0 v${-(v.height - 2 * r)}` }, g);
      svg("text", { x: v.x, y: v.y + 9, "text-anchor": "middle" }, g).textContent = v.label;
    } else {
      const g = svg("g", { class: "topic", "data-topic": v.label }, root);
      svg("rect", { x, y, width: v.width, height: v.height, rx: 15 }, g);
      svg("text", { x: v.x, y: v.y + 4, "text-anchor": "middle" }, g).textContent = v.label;
    }
  }
  if (selected) select(selected);
}

function paintGraph() {
  if (!model) return;
  let max = 1;
  const rates = {};
  for (const id of model.nodes()) {
    const v = model.node(id);
    if (!v.node) continue;
    const r = recent(v.node.name);
    rates[v.node.name] = r.rate;
    max = Math.max(max, r.rate);
    v.rateText.textContent = `${rate(r.rate)} rec/s · Lua ${fmt(r.lua * 100, 1)}% of a core`;
    const drops = Object.entries(r.drops).map(([k, d]) => `${k} ${rate(d)}/s`).join(", ");
    v.dropText.textContent = drops ? "dropped: " + drops : "";
  }
  for (const e of model.edges()) {
    const v = model.edge(e);
    // An edge carries what enters its target (from a topic: what enters the source).
    const target = rates[e.w] ?? rates[e.v] ?? 0;
    const w = v.kind === "store" || v.kind === "global" ? 1.2 : 1.2 + 7 * Math.log1p(target) / Math.log1p(max);
    v.path.setAttribute("stroke-width", w.toFixed(2));
  }
}

// --- node details ---
function describeLines(name) {
  const lines = describeText.split("\n");
  const start = lines.findIndex((l) => /^\s+(Source|Processor|Sink): /.test(l) && l.includes(": " + name + " "));
  if (start < 0) return "";
  const out = [lines[start]];
  for (let i = start + 1; i < lines.length && /^\s+(-->|<--)/.test(lines[i]); i++) out.push(lines[i]);
  return out.join("\n");
}

function findNode(name) {
  for (const s of topology.subtopologies) for (const n of s.nodes) if (n.name === name) return n;
  for (const g of topology.globalStores) for (const n of [g.source, g.processor]) if (n.name === name) return n;
  return null;
}

function select(name) {
  selected = name;
  for (const g of document.querySelectorAll("#graph .node")) g.classList.toggle("selected", g.dataset.node === name);
  const n = findNode(name);
  const box = $("details");
  box.replaceChildren();
  if (!n) return;
  box.append(el("h3", name));
  box.append(el("pre", describeLines(name), "describe"));
  box.append(el("p", "records/s, last minute"));
  const spark = svg("svg", { class: "spark", viewBox: "0 0 300 60", preserveAspectRatio: "none" }, box);
  spark.id = "spark";
  box.append(el("p", "", "spark-value"));
  const st = n.stores || [];
  box.append(el("p", st.length ? "stores: " + st.join(", ") : "no stores"));
  const tap = el("button", "Tap this node");
  tap.type = "button";
  tap.addEventListener("click", () => { $("tap-node").value = name; startTap(); $("tap").scrollIntoView(); });
  box.append(tap);
  paintDetails();
}

function paintDetails() {
  const spark = $("spark");
  if (!spark || !selected) return;
  const r = nodeRates(selected);
  const max = Math.max(1, ...r);
  const pts = r.map((v, i) => `${(i * 300 / Math.max(1, r.length - 1)).toFixed(1)},${(58 - 56 * v / max).toFixed(1)}`).join(" ");
  spark.replaceChildren();
  svg("polyline", { points: pts }, spark);
  const v = document.querySelector("#details .spark-value");
  if (v) v.textContent = `now ${rate(recent(selected).rate)} rec/s, peak ${rate(max === 1 && !r.some((x) => x) ? 0 : max)}`;
}

// --- time, state, health ---
// records/s read from a source partition over the last few seconds, null while unknown
function partitionRate(p) {
  const n = samples.length;
  const a = samples[Math.max(0, n - 6)], b = samples[n - 1];
  const pa = a?.time?.partitions.find((x) => x.topic === p.topic && x.partition === p.partition);
  const dt = (b.at - a.at) / 1000;
  if (!pa || pa.position < 0 || p.position < 0 || dt <= 0) return null;
  return Math.max(0, p.position - pa.position) / dt;
}

function paintTime(s) {
  const t = s.time;
  if (!t) return;
  $("watermark").textContent = when(t.watermark);
  $("watermark-lag").textContent = t.watermark >= 0 ? `(${fmt((s.at - t.watermark) / 1000, 1)} s behind the wall clock)` : "(none yet)";
  $("partitions").replaceChildren(...t.partitions.map((p) => {
    const r = partitionRate(p);
    const tags = el("span");
    if (p.holdsBack) tags.append(el("span", "holds the watermark back", "tag holds"));
    // The engine calls a partition idle once its consumer has kept up for
    // max.task.idle.ms: between its records, too. Only one that receives none is shown idle.
    if (p.idle && r !== null) {
      const tag = r > 0 ? el("span", "caught up", "tag caught-up") : el("span", "idle", "tag idle");
      tag.title = (r > 0 ? "its consumer is at the log end" : "no records arrive") + ": the watermark does not wait for it";
      tags.append(tag);
    }
    return row([`${p.topic}-${p.partition}`, when(p.streamTime), num(r === null ? "–" : rate(r)), num(p.lag < 0 ? "–" : fmt(p.lag)), tags]);
  }));
}

function paintState(s) {
  const r = s.restore;
  $("restore").hidden = !r;
  if (r) {
    const pct = r.totalOffsets > 0 ? 100 * r.offsets / r.totalOffsets : 0;
    $("restore-where").textContent = `${r.store} partition ${r.partition}`;
    $("restore-bar").style.width = pct.toFixed(1) + "%";
    $("restore-text").textContent = `${fmt(r.records)} records (${fmt(pct, 1)}%), ${rate(r.recordsPerSecond)} records/s, ETA ${r.etaSeconds < 0 ? "unknown" : fmt(r.etaSeconds) + " s"}`;
  }
  const u = s.uncommitted;
  $("uncommitted-text").textContent = u.maxBytes < 0 ? `${bytes(u.bytes)} (no budget)` : `${bytes(u.bytes)} of ${bytes(u.maxBytes)} (statestore.uncommitted.max.bytes)`;
  $("uncommitted-bar").style.width = (u.maxBytes > 0 ? Math.min(100, 100 * u.bytes / u.maxBytes) : 0).toFixed(1) + "%";
  $("stores").replaceChildren(...stores.map((st) => {
    const x = s.stores[st.name] || {};
    const n = entries[st.name];
    // The size counts LevelDB's tables only: until its first table is written (its memtable
    // holds 4 MiB), a store with entries has none.
    const size = num(bytes(x.sizeBytes || 0));
    if (!x.sizeBytes && n > 0) {
      size.textContent = "in memtable";
      size.title = "LevelDB keeps the latest writes in its memtable (and journal) until it writes a table; sizes count tables";
    }
    return row([st.name, st.type, num(n === undefined ? "–" : typeof n === "number" ? fmt(n) : n), size, num(bytes(x.uncommittedBytes || 0))]);
  }));
}

function paintHealth(s) {
  $("app-state").textContent = s.state;
  $("app-state").className = "badge " + s.state;
  const n = samples.length;
  const a = samples[Math.max(0, n - 6)];
  const dt = (s.at - a.at) / 1000;
  const c = s.commits, ca = a.commits;
  const commits = dt > 0 ? (c.succeeded - ca.succeeded) / dt : 0;
  const dc = c.latencyCount - ca.latencyCount;
  $("commit-rate").textContent = `${rate(commits)}/s (${fmt(c.succeeded)} in all)`;
  $("commit-latency").textContent = dc > 0 ? `${fmt(1000 * (c.latencySeconds - ca.latencySeconds) / dc, 1)} ms on average, last seconds` : c.latencyCount > 0 ? `${fmt(1000 * c.latencySeconds / c.latencyCount, 1)} ms on average` : "–";
  $("commit-early").textContent = fmt(c.early);
  $("commit-failed").textContent = fmt(c.failed);
  $("log").replaceChildren(...s.log.slice().reverse().map((e) => {
    const li = el("li", `${e.time.replace("T", " ").slice(0, 19)} ${e.level} ${e.message}`, e.level);
    const attrs = Object.entries(e.attrs || {}).map(([k, v]) => `${k}=${v}`).join(" ");
    if (attrs) li.append(el("div", attrs));
    return li;
  }));
  if (!s.log.length) $("log").append(el("li", "none", "hint"));
  let consumed = 0;
  for (const v of Object.values(s.consumed)) consumed += v;
  $("summary").textContent = `${fmt(consumed)} records consumed`;
}

// which agent runs each task of the application; the lag of this agent's tasks
function paintTasks(s) {
  const a = s.assignment;
  $("tasks").hidden = !a;
  if (!a) return;
  const self = a.self ? `this agent (${a.self})` : "this agent";
  const here = a.tasks.filter((t) => t.thisAgent).length;
  const agents = new Set(a.tasks.filter((t) => t.agent && !t.thisAgent).map((t) => t.agent));
  $("tasks-summary").textContent = a.groupProtocol === "streams"
    ? `streams group: ${here} of ${a.tasks.length} tasks on ${self}, the others on ${agents.size} other agent${agents.size === 1 ? "" : "s"}`
    : here ? `classic group: ${self} runs every task; any other agent of the application is a standby`
    : s.state === "STANDBY" ? `classic group: this agent is a standby; ${agents.size ? "the agent at " + [...agents][0] : "the active agent (without application.server)"} runs every task`
    : "classic group: no agent runs the tasks yet";
  $("task-rows").replaceChildren(...a.tasks.map((t) => {
    const who = el("span");
    if (t.thisAgent) who.append(el("span", "this agent", "tag here"), t.agent || "");
    else who.textContent = t.agent || "none named";
    if (!t.thisAgent && !t.agent) {
      who.title = "the task is moving, or runs on an agent without application.server";
    }
    const lag = num(t.recordsLag === null ? "–" : t.recordsLag < 0 ? "not fetched yet" : fmt(t.recordsLag));
    if (t.recordsLag === null) lag.title = "only the agent running the task knows its lag";
    const tr = row([t.taskId, who, lag, t.standbys.join(", ") || "–"]);
    tr.dataset.task = t.taskId;
    return tr;
  }));
  $("tasks-note").textContent = here < a.tasks.length
    ? "Lag (records its consumer has yet to read, over the task's input partitions) is known for this agent's tasks only; the others show the agent running them."
    : "Lag: records the task's consumer has yet to read, over its input partitions.";
}

async function countEntries() {
  lastCount = Date.now();
  for (const st of stores) {
    try {
      entries[st.name] = (await get(`/v1/stores/${encodeURIComponent(st.name)}/count`)).count;
    } catch {
      entries[st.name] = "–"; // every store type is counted: a failure (not ready, a standby) shows as unknown
    }
  }
}
$("count-refresh").addEventListener("click", () => countEntries().then(() => samples.length && paintState(samples[samples.length - 1])));

// --- the store browser ---
// The reads each store type answers: [mode, label, what the key field holds].
const READS = {
  keyValue: [["get", "get", "key"], ["range", "range", "from"], ["prefix", "prefix", "prefix"]],
  versionedKeyValue: [["get", "latest", "key"], ["range", "range", "from"], ["history", "history", "key"]],
  window: [["windows", "windows of a key", "key"]],
  session: [["windows", "sessions of a key", "key"]],
};
READS.timestampedKeyValue = READS.keyValue;
READS.timestampedWindow = READS.window;
const COLUMNS = {
  entries: [["key"], ["value"], ["timestamp", "time"], ["partition", "narrow"]],
  windows: [["key"], ["window start", "time"], ["window end", "time"], ["value"]],
  history: [["value"], ["valid from", "time"], ["valid to", "time"]],
};

const storeInfo = () => stores.find((s) => s.name === $("query-store").value);

function showReads() {
  const st = storeInfo();
  const reads = READS[st?.type] || READS.keyValue;
  const keep = $("query-mode").value;
  $("query-mode").replaceChildren(...reads.map(([v, label]) => { const o = el("option", label); o.value = v; return o; }));
  if (reads.some(([v]) => v === keep)) $("query-mode").value = keep;
  showMode();
}

function showMode() {
  const reads = READS[storeInfo()?.type] || READS.keyValue;
  const mode = $("query-mode").value;
  $("query-key").placeholder = (reads.find(([v]) => v === mode) || reads[0])[2];
  $("query-to").hidden = mode !== "range";
  showColumns(mode === "windows" || mode === "history" ? mode : "entries");
}

function showColumns(kind) {
  $("query-head").replaceChildren(...COLUMNS[kind].map(([name, cls]) => el("th", name, cls)));
}

$("query-store").addEventListener("change", showReads);
$("query-mode").addEventListener("change", showMode);

// readStore runs the read the form asks for and returns {kind, rows, note}.
async function readStore(st, mode, key, iso) {
  const store = encodeURIComponent(st.name);
  const q = new URLSearchParams({ isolation: iso });
  if (mode === "get") {
    const it = await get(`/v1/stores/${store}/keys/${encodeURIComponent(key)}?${q}`);
    return { kind: "entries", rows: [[json(it.key), json(it.value), when(it.timestamp), String(it.partition)]] };
  }
  if (mode === "windows") {
    const body = await get(`/v1/stores/${store}/windows/${encodeURIComponent(key)}?${q}`);
    return { kind: "windows", rows: body.items.map((w) => [json(w.key), when(w.windowStart), when(w.windowEnd), json(w.value)]) };
  }
  if (mode === "history") {
    // IQv2's MultiVersionedKeyQuery: a key in a JSON body is its JSON value for json keys,
    // else the text form as in paths.
    const k = st.keySerde === "json" ? parseJSON(key) : key;
    const body = await post("/v2/query", { store: st.name, isolation: iso, query: { type: "MultiVersionedKeyQuery", key: k, descending: true } });
    const rows = [];
    for (const r of body.partitionResults) {
      if (!r.success) throw new Error(`partition ${r.partition}: ${r.failureReason}: ${r.failureMessage}`);
      for (const v of r.result) rows.push([json(v.value), when(v.timestamp), v.validTo === null ? "now" : when(v.validTo)]);
    }
    return { kind: "history", rows };
  }
  if (mode === "prefix") q.set("prefix", key);
  else {
    if (key) q.set("from", key);
    if ($("query-to").value) q.set("to", $("query-to").value);
  }
  q.set("limit", "100");
  const body = await get(`/v1/stores/${store}/keys?${q}`);
  const rows = body.items.map((it) => [json(it.key), json(it.value), when(it.timestamp), String(it.partition)]);
  return { kind: "entries", rows, note: body.next ? " (more: narrow the range)" : "" };
}

$("query-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const st = storeInfo();
  if (!st) return;
  const mode = $("query-mode").value;
  const key = $("query-key").value;
  const iso = document.querySelector("input[name=isolation]:checked").value;
  const out = $("query-result");
  out.replaceChildren();
  try {
    const { kind, rows, note = "" } = await readStore(st, mode, key, iso);
    out.append(...rows.map(row));
    const what = kind === "windows" ? (st.type === "session" ? "session" : "window") : kind === "history" ? "version" : "entry";
    const plural = what === "entry" ? "entries" : what + "s";
    $("query-note").textContent = `${rows.length} ${rows.length === 1 ? what : plural}, ${iso}${note}`;
  } catch (err) {
    $("query-note").textContent = err.code === "key_not_found" ? `no key ${key} (${iso})` : err.message;
  }
});

// --- the live tap: server-sent events read through fetch, which can send the token ---
let tapAbort = null;
const MAX_TAP_ROWS = 100;

async function startTap() {
  stopTap();
  const node = $("tap-node").value;
  const ctrl = new AbortController();
  tapAbort = ctrl;
  $("tap-start").disabled = true;
  $("tap-stop").disabled = false;
  $("tap-records").replaceChildren();
  $("tap-note").textContent = `tapping ${node}…`;
  let shown = 0, skipped = 0, lost = 0;
  try {
    const res = await fetch(`/v1/tap/${encodeURIComponent(node)}`, { headers: headers(), signal: ctrl.signal });
    if (!res.ok) {
      const body = await res.json().catch(() => ({}));
      throw new HTTPError(res.status, body);
    }
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let cut;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        const chunk = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        let event = "message", data = "";
        for (const line of chunk.split("\n")) {
          if (line.startsWith("event: ")) event = line.slice(7);
          else if (line.startsWith("data: ")) data += line.slice(6);
        }
        if (!data) continue;
        const ev = parseJSON(data);
        if (event === "lost") lost += ev.lost;
        // "skipped" counts records skipped while none was shown (the node went quiet).
        if (event === "record" || event === "skipped") skipped += ev.skipped;
        if (event === "record") {
          shown++;
          const hdrs = ev.headers.map((h) => `${h.key}=${h.value ?? h.base64}`).join(" ");
          const tr = row([when(ev.timestamp), json(ev.key), json(ev.value), hdrs, `${ev.topic}-${ev.partition}@${ev.offset}`]);
          tr.dataset.node = ev.node;
          const body = $("tap-records");
          body.prepend(tr);
          while (body.children.length > MAX_TAP_ROWS) body.lastChild.remove();
        }
        $("tap-note").textContent = `${node}: ${fmt(shown)} shown, ${fmt(skipped)} skipped by sampling${lost ? `, ${fmt(lost)} lost (the page fell behind)` : ""}`;
      }
    }
  } catch (err) {
    if (err.name !== "AbortError") $("tap-note").textContent = err.message;
  } finally {
    if (tapAbort === ctrl) {
      tapAbort = null;
      $("tap-start").disabled = false;
      $("tap-stop").disabled = true;
    }
  }
}

function stopTap() {
  if (tapAbort) tapAbort.abort();
}

$("tap-form").addEventListener("submit", (e) => { e.preventDefault(); startTap(); });
$("tap-stop").addEventListener("click", stopTap);

// --- loading and polling ---
function fillSelect(sel, values) {
  const keep = sel.value;
  sel.replaceChildren(...values.map((v) => { const o = el("option", v); o.value = v; return o; }));
  if (values.includes(keep)) sel.value = keep;
}

async function loadTopology() {
  const [t, text] = await Promise.all([get("/topology"), get("/topology/ks", "text")]);
  const changed = JSON.stringify(t) !== JSON.stringify(topology);
  topology = t;
  describeText = text;
  if (changed) {
    drawGraph();
    const names = [];
    for (const s of t.subtopologies) for (const n of s.nodes) names.push(n.name);
    for (const g of t.globalStores) names.push(g.source.name, g.processor.name);
    fillSelect($("tap-node"), names);
  }
}

async function loadStores() {
  let ready = true;
  try {
    stores = await get("/v1/stores");
  } catch (err) {
    if (err.code !== "not_ready") throw err;
    stores = [];
    ready = false;
  }
  fillSelect($("query-store"), stores.map((s) => s.name));
  showReads();
  // A topology without stores (a stateless one) has nothing to browse.
  const none = ready && !stores.length;
  $("query-form").hidden = none;
  $("query-table").hidden = none;
  $("count-refresh").hidden = none;
  $("store-table").hidden = none;
  if (none) $("query-note").textContent = "The topology has no state stores.";
  $("state-none").hidden = !none;
}

let polling = null;
let ticks = 0;

async function poll() {
  try {
    if (!topology || ticks % 10 === 0) await loadTopology();
    if (!stores.length || ticks % 10 === 0) await loadStores();
    if (stores.length && Date.now() - lastCount > COUNT_EVERY_MS) await countEntries();
    const s = await get("/v1/status");
    samples.push(s);
    if (samples.length > HISTORY + 1) samples.shift();
    paintGraph();
    paintDetails();
    paintTime(s);
    paintState(s);
    paintTasks(s);
    paintHealth(s);
    showError(null);
  } catch (err) {
    showError(err);
  }
  ticks++;
}

function start() {
  if (polling) clearInterval(polling);
  ticks = 0;
  poll();
  polling = setInterval(poll, POLL_MS);
}

start();
