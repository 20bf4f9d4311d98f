// Docket explorer: pages over the read-only JSON API (/api/...), routed on
// the URL fragment. Everything the server says is shown as text (never as
// HTML); what can be checked is checked here, with verify.js.

import * as v from "./verify.js";

const PIN_KEY = "docket.pinnedKey";
const TOKEN_KEY = "docket.readToken";
const main = document.getElementById("main");

// ------------------------------------------------------------ DOM helpers

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, val] of Object.entries(attrs || {})) {
    if (val === null || val === undefined || val === false) continue;
    if (k === "class") el.className = val;
    else if (k === "onclick" || k === "onchange" || k === "ondrop" || k === "ondragover" || k === "onsubmit") {
      el.addEventListener(k.slice(2), val);
    } else el.setAttribute(k, val === true ? "" : String(val));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const link = (href, ...children) => h("a", { href }, ...children);
const short = (s, n = 12) => (s && s.length > n + 1 ? `${s.slice(0, n)}…` : s || "");
const time = (ms) =>
  ms === null || ms === undefined ? "" : new Date(Number(ms)).toISOString().replace("T", " ").replace("Z", " UTC");
const eventLink = (seq) => (seq === null || seq === undefined ? "" : link(`#/event/${seq}`, `#${seq}`));
const taskLink = (id) => (id ? link(`#/task/${encodeURIComponent(id)}`, id) : "");
const oidLink = (oid) => link(`#/evidence/${encodeURIComponent(oid)}`, oid);

function badge(text, kind) {
  return h("span", { class: `badge badge-${(kind || text || "").toString().toLowerCase()}` }, text);
}

function kv(rows) {
  return h(
    "table",
    { class: "kv" },
    h("tbody", {}, rows.filter(Boolean).map(([k, val]) => h("tr", {}, h("th", {}, k), h("td", {}, val)))),
  );
}

function table(headers, rows, attrs) {
  return h(
    "table",
    { class: "list", ...(attrs || {}) },
    h("thead", {}, h("tr", {}, headers.map((x) => h("th", {}, x)))),
    h("tbody", {}, rows),
  );
}

function section(title, ...children) {
  return h("section", {}, h("h2", {}, title), ...children);
}

function page(title, name) {
  document.title = `${title} · Docket`;
  document.body.dataset.page = name;
  main.replaceChildren();
  delete main.dataset.ready;
}

function ready() {
  main.dataset.ready = "1";
}

function showError(e) {
  main.append(h("p", { class: "error", id: "page-error" }, e.message || String(e)));
  ready();
}

// ------------------------------------------------------------ API

class AuthNeeded extends Error {}

async function api(path) {
  const headers = {};
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  const r = await fetch(path, { headers, cache: "no-store" });
  if (r.status === 401) throw new AuthNeeded("this server needs its read token");
  let body = null;
  try {
    body = await r.json();
  } catch (_) {
    body = null;
  }
  if (!r.ok) throw new Error((body && body.error) || `${path}: HTTP ${r.status}`);
  return body;
}

// ------------------------------------------------------------ the pinned key

function pinned() {
  try {
    return JSON.parse(localStorage.getItem(PIN_KEY) || "null");
  } catch (_) {
    return null;
  }
}

function setPinned(vkey, how) {
  localStorage.setItem(PIN_KEY, JSON.stringify({ vkey, how, at: new Date().toISOString() }));
}

let serverKey = null;

async function loadHead() {
  const head = await api("/api/head");
  serverKey = head.verifier_key;
  if (!pinned() && head.verifier_key) {
    setPinned(head.verifier_key, "first use");
    flash(`First visit: pinned this server's ledger key (trust on first use). Compare it with \`docket checkpoint --vkey\` from a source you trust.`);
  }
  renderKeyBox();
  return head;
}

function flash(text) {
  const f = document.getElementById("flash");
  f.textContent = text;
  f.hidden = false;
}

function renderKeyBox() {
  const box = document.getElementById("keybox");
  const p = pinned();
  const input = h("input", {
    id: "vkey-input",
    type: "text",
    spellcheck: "false",
    placeholder: "paste a verifier key: name+keyid+base64 (docket checkpoint --vkey)",
  });
  const msg = h("span", { class: "muted", id: "vkey-msg" });
  const pin = h(
    "button",
    {
      type: "button",
      id: "vkey-pin",
      onclick: async () => {
        try {
          const k = await v.parseVerifierKey(input.value);
          setPinned(k.text, "pasted");
          renderKeyBox();
          route();
        } catch (e) {
          msg.textContent = `not a verifier key: ${e.message}`;
        }
      },
    },
    "Pin this key",
  );
  const forget = h(
    "button",
    {
      type: "button",
      onclick: () => {
        localStorage.removeItem(PIN_KEY);
        location.reload();
      },
    },
    "Forget (pin on next visit)",
  );
  const differs = p && serverKey && p.vkey !== serverKey;
  box.replaceChildren(
    h(
      "details",
      { open: differs || null },
      h(
        "summary",
        {},
        "Pinned ledger key: ",
        h("code", { id: "pinned-key" }, p ? p.vkey : "none"),
        p ? h("span", { class: "muted" }, ` (${p.how}, ${p.at.slice(0, 10)})`) : "",
        differs ? h("strong", { class: "warn" }, " — the server presents another key!") : "",
      ),
      h(
        "div",
        { class: "keyform" },
        differs ? h("p", { class: "warn" }, `Server key: ${serverKey}. Pages verify against your pinned key only.`) : "",
        input,
        pin,
        forget,
        msg,
      ),
    ),
  );
  const token = document.getElementById("token-form");
  token.hidden = !sessionStorage.getItem(TOKEN_KEY) && !token.dataset.needed;
}

// ------------------------------------------------------------ pages

async function homePage() {
  page("Log", "home");
  const head = await loadHead();
  const status = h("div", { id: "head-status", class: "status pending", "data-state": "pending" }, "checking the checkpoint…");
  main.append(
    section(
      "Log head",
      status,
      kv([
        ["origin", h("code", {}, head.origin)],
        ["tree size", String(head.tree_size)],
        ["root", h("code", {}, head.root || "")],
        ["failure", head.failure ? h("span", { class: "error" }, head.failure) : "none: accepting writes"],
      ]),
      h("details", {}, h("summary", {}, "signed checkpoint (C2SP signed note, also at /checkpoint)"), h("pre", { id: "checkpoint-note" }, head.checkpoint || "")),
    ),
  );
  (async () => {
    try {
      const p = pinned();
      const vk = await v.parseVerifierKey(p ? p.vkey : "");
      const cp = await v.openNote(head.checkpoint, vk);
      if (cp.origin !== vk.name) throw new Error(`origin ${cp.origin} is not ${vk.name}`);
      setStatus(status, true, `verified: checkpoint of ${cp.size} events signed by the pinned key ${vk.name}`);
    } catch (e) {
      setStatus(status, false, `NOT verified: ${e.message}`);
    }
  })();
  const [tasks, events] = await Promise.all([api("/api/tasks"), api(`/api/events?limit=50`)]);
  main.append(
    section(
      "Tasks",
      tasks.tasks.length === 0
        ? h("p", { class: "muted" }, "no task yet")
        : table(
            ["task", "status", "reason", "submissions", "last change"],
            tasks.tasks.map((t) =>
              h(
                "tr",
                { class: "task-row", "data-task": t.task_id, "data-status": t.status },
                h("td", {}, taskLink(t.task_id)),
                h("td", {}, badge(String(t.status).toUpperCase(), t.status)),
                h("td", {}, (t.verdict && t.verdict.reason_code) || ""),
                h("td", {}, String(t.submissions)),
                h("td", {}, t.verdict ? eventLink(t.verdict.seq) : ""),
              ),
            ),
          ),
    ),
    section(
      `Recent events (${events.from}–${Math.max(events.to - 1, 0)} of ${events.tree_size})`,
      eventsTable(events.events),
      events.from > 0 ? h("p", {}, link(`#/events/${events.from}`, "older events →")) : "",
    ),
  );
  ready();
}

function eventsTable(list) {
  return table(
    ["seq", "recorded", "kind", "author", "task"],
    list.map((e) =>
      h(
        "tr",
        { class: "event-row", "data-seq": e.seq },
        h("td", {}, eventLink(e.seq)),
        h("td", {}, time(e.recorded_at_ms)),
        h("td", {}, h("code", {}, e.kind)),
        h("td", {}, h("code", { title: e.author }, short(e.author))),
        h("td", {}, taskLink(e.task_id)),
      ),
    ),
  );
}

async function eventsPage(before) {
  page(`Events before ${before}`, "events");
  await loadHead();
  const events = await api(`/api/events?before=${before}&limit=100`);
  main.append(
    section(
      `Events ${events.from}–${Math.max(events.to - 1, 0)} of ${events.tree_size}`,
      eventsTable(events.events),
      events.from > 0 ? h("p", {}, link(`#/events/${events.from}`, "older events →")) : "",
    ),
  );
  ready();
}

function setStatus(el, ok, text) {
  el.className = `status ${ok ? "ok" : "bad"}`;
  el.dataset.state = ok ? "verified" : "failed";
  el.textContent = text;
}

function payloadView(bytes, json) {
  if (json !== null && json !== undefined) return h("pre", { class: "payload", id: "payload" }, JSON.stringify(json, null, 2));
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    return h("pre", { class: "payload", id: "payload" }, text);
  } catch (_) {
    return h("div", {}, h("p", { class: "muted" }, `binary payload, ${bytes.length} bytes (base64):`), h("pre", { class: "payload", id: "payload" }, v.b64encode(bytes)));
  }
}

async function eventPage(seq) {
  page(`Event ${seq}`, "event");
  await loadHead();
  const e = await api(`/api/event/${seq}`);
  const status = h("div", { id: "proof-status", class: "status pending", "data-state": "pending" }, "verifying in this browser…");
  const steps = h("ol", { id: "proof-steps", class: "steps" });
  // Fields come from the canonical bytes as decoded here, not from the
  // server's JSON (which would be free to differ).
  let ev = null;
  try {
    ev = v.decodeEvent(v.b64decode(e.event_b64));
  } catch (err) {
    ev = null;
  }
  const roles = e.author_key ? e.author_key.roles.join(", ") : "not a registered key";
  let taskId = null;
  try {
    taskId = ev ? JSON.parse(new TextDecoder().decode(ev.payload)).task_id : null;
  } catch (_) {
    taskId = null;
  }
  main.append(
    section(`Event #${seq}`, status, steps),
    section(
      "Fields (decoded from the event's canonical bytes)",
      ev
        ? kv([
            ["seq", String(ev.seq)],
            ["kind", h("code", { id: "event-kind" }, ev.kind)],
            ["recorded", `${time(ev.recordedAtMs)} (${ev.recordedAtMs} ms)`],
            ["author", h("span", {}, h("code", { id: "event-author" }, v.hex(ev.author)))],
            ["author role", h("span", { id: "event-role" }, e.is_ledger_key ? `ledger key (${roles})` : roles, e.author_key && e.author_key.label ? ` — ${e.author_key.label}` : "", e.author_key && e.author_key.revoked_seq !== null ? h("span", { class: "warn" }, ` (revoked at #${e.author_key.revoked_seq})`) : "")],
            ["prev hash", h("span", {}, h("code", {}, v.hex(ev.prevHash)), seq > 0 ? [" ", eventLink(seq - 1)] : " (genesis)")],
            ["leaf hash", h("code", { id: "leaf-hash" }, "…")],
            ["signature", h("code", { class: "wrap", id: "event-signature" }, v.hex(ev.signature))],
            ["size", `${e.event_size} bytes (payload ${ev.payload.length})`],
            taskId ? ["task", taskLink(taskId)] : null,
            e.oid ? ["evidence", oidLink(e.oid)] : null,
            ["neighbours", h("span", {}, seq > 0 ? eventLink(seq - 1) : "", " ", seq + 1 < e.tree_size ? eventLink(seq + 1) : "")],
          ])
        : h("p", { class: "error" }, "the event bytes do not decode"),
    ),
    section("Payload", ev ? payloadView(ev.payload, e.payload_json) : ""),
  );
  try {
    const proof = await api(`/api/proof/${seq}`);
    const p = pinned();
    const r = await v.verifyEventInclusion({ seq, eventB64: e.event_b64, proof, vkeyText: p ? p.vkey : "" });
    for (const s of r.steps) steps.append(h("li", { class: s.ok ? "ok" : "bad" }, `${s.name}: ${s.ok ? "✓" : "✗"} ${s.detail}`));
    if (ev) document.getElementById("leaf-hash").textContent = v.hex(await v.leafHash(v.b64decode(e.event_b64)));
    if (r.ok) {
      setStatus(status, true, `verified: event #${seq} is in the log of ${r.checkpoint.size} events signed by the pinned key (author signature valid)`);
    } else {
      setStatus(status, false, `NOT verified: ${r.why}`);
    }
  } catch (err) {
    setStatus(status, false, `NOT verified: ${err.message}`);
  }
  ready();
}

function rolesText(roles) {
  return roles && roles.length ? roles.join(", ") : "unregistered";
}

async function taskPage(id) {
  page(`Task ${id}`, "task");
  await loadHead();
  const d = await api(`/api/task/${encodeURIComponent(id)}`);
  const t = d.task;
  const vd = d.verdict;
  const c = t.contract_document || {};
  const current = vd.verdict;
  main.append(
    section(
      h("span", {}, "Task ", h("code", {}, t.task_id), " ", badge(String(vd.status).toUpperCase(), vd.status)),
      kv([
        ["goal", c.goal || ""],
        ["status", h("span", { id: "task-status" }, String(vd.status).toUpperCase())],
        ["registered", h("span", {}, eventLink(t.contract.seq), " by ", h("code", { title: t.contract.registered_by }, short(t.contract.registered_by)), ` at ${time(t.contract.registered_at_ms)}`)],
        ["retention class", h("span", { id: "task-retention" }, t.contract.retention_class)],
        ["required checks", (t.contract.required_checks || []).join(", ")],
        ["required evidence", (t.contract.required_evidence || []).join(", ")],
        ["submissions", String(vd.submissions)],
        current
          ? [
              "current verdict",
              h(
                "span",
                { id: "current-verdict" },
                badge(current.verdict),
                current.reason_code ? ` ${current.reason_code}` : "",
                current.fail_class ? ` (${current.fail_class})` : "",
                " — ",
                eventLink(current.seq),
                " signed by ",
                h("code", { title: current.by }, short(current.by)),
              ),
            ]
          : ["current verdict", "none (PENDING)"],
        ["state digest", h("code", {}, vd.state_digest)],
      ]),
    ),
    section(
      "Verdict timeline",
      table(
        ["seq", "recorded", "event", "signed by", "state after", "verdict", "reason", "evidence OIDs", "superseded"],
        groupChecks(d.timeline).map((x) =>
          x.group ? checksRow(x) : h(
            "tr",
            {
              class: `timeline-row${x.superseded_by !== null ? " superseded" : ""}`,
              "data-seq": x.seq,
              "data-kind": x.kind,
              "data-verdict": x.verdict || "",
              "data-reason": x.reason_code || "",
              "data-superseded-by": x.superseded_by === null ? "" : x.superseded_by,
            },
            h("td", {}, eventLink(x.seq)),
            h("td", { class: "time" }, time(x.at_ms)),
            h("td", {}, h("code", {}, x.kind)),
            h("td", {}, h("code", { title: x.author }, short(x.author, 10)), h("div", { class: "muted" }, rolesText(x.author_roles), x.author_label ? ` — ${x.author_label}` : "")),
            h("td", {}, badge(String(x.status).toUpperCase(), x.status)),
            h("td", {}, x.verdict ? badge(x.verdict) : x.detail || checksText(x.checks)),
            h("td", {}, [x.reason_code, x.fail_class ? `(${x.fail_class})` : null].filter(Boolean).join(" ")),
            h("td", { class: "oids" }, (x.evidence_oids || []).map((o) => h("div", {}, oidLink(o)))),
            h("td", {}, x.superseded_by !== null ? h("span", {}, "by ", eventLink(x.superseded_by), h("div", { class: "muted" }, x.superseded_why)) : ""),
          ),
        ),
        { id: "timeline" },
      ),
    ),
    section(
      "Approvals",
      vd.approvals.length === 0
        ? h("p", { class: "muted", id: "approvals-none" }, "no approval requested")
        : table(
            ["request", "actor", "scope", "mode", "requested", "expires", "state", "decided", "reason"],
            vd.approvals.map((a) =>
              h(
                "tr",
                { class: "approval-row", "data-state": a.effective_state },
                h("td", {}, eventLink(a.request_seq)),
                h("td", {}, a.actor),
                h("td", {}, a.scope),
                h("td", {}, a.mutation_mode),
                h("td", {}, a.requested_at),
                h("td", {}, a.expires_at_ms ? time(a.expires_at_ms) : ""),
                h("td", {}, badge(a.effective_state)),
                h("td", {}, a.decided_seq !== null ? h("span", {}, eventLink(a.decided_seq), " ", a.decided_actor || "") : ""),
                h("td", {}, a.reason || a.note || ""),
              ),
            ),
          ),
    ),
    section(
      "Evidence and retention",
      table(
        ["OID", "type", "name", "size", "SHA-256", "state", "pinned", "class", "removal"],
        d.evidence.map((e) =>
          h(
            "tr",
            { class: "evidence-row", "data-oid": e.oid, "data-state": e.state },
            h("td", {}, oidLink(e.oid)),
            h("td", {}, e.evidence_type),
            h("td", {}, e.artifact_name || e.name || ""),
            h("td", {}, String(e.size)),
            h("td", {}, h("code", { title: e.sha256 }, short(e.sha256))),
            h("td", {}, badge(e.state)),
            h("td", {}, e.pinned ? "yes" : "no"),
            h("td", {}, e.retention_class),
            h("td", {}, e.removal ? h("span", {}, eventLink(e.removal.seq), ` ${e.removal.reason}`) : ""),
          ),
        ),
      ),
    ),
  );
  ready();
}

// Folds each run of consecutive check.recorded entries by one signer into
// one row (the verifier records every check of a submission at once).
function groupChecks(timeline) {
  const out = [];
  for (const x of timeline) {
    const last = out[out.length - 1];
    if (x.kind === "check.recorded" && last && last.group && last.author === x.author && last.submission_seq === x.submission_seq) {
      last.items.push(x);
    } else if (x.kind === "check.recorded") {
      out.push({ group: true, author: x.author, author_roles: x.author_roles, author_label: x.author_label, submission_seq: x.submission_seq, items: [x] });
    } else {
      out.push(x);
    }
  }
  return out;
}

function checksRow(g) {
  const first = g.items[0];
  const last = g.items[g.items.length - 1];
  const checks = Object.assign({}, ...g.items.map((x) => x.checks || {}));
  const failed = Object.entries(checks).filter(([, ok]) => ok === false).map(([k]) => k);
  const passed = Object.values(checks).filter((ok) => ok === true).length;
  return h(
    "tr",
    { class: `timeline-row checks${first.superseded_by !== null ? " superseded" : ""}`, "data-seq": first.seq, "data-kind": "check.recorded", "data-verdict": "", "data-superseded-by": "" },
    h("td", {}, eventLink(first.seq), g.items.length > 1 ? ["–", eventLink(last.seq)] : ""),
    h("td", { class: "time" }, time(first.at_ms)),
    h("td", {}, h("code", {}, "check.recorded"), g.items.length > 1 ? ` ×${g.items.length}` : ""),
    h("td", {}, h("code", { title: g.author }, short(g.author, 10)), h("div", { class: "muted" }, rolesText(g.author_roles), g.author_label ? ` — ${g.author_label}` : "")),
    h("td", {}, badge(String(last.status).toUpperCase(), last.status)),
    h("td", { title: checksText(checks) }, `${passed} passed`, failed.length ? h("span", { class: "error" }, `, failed: ${failed.join(", ")}`) : ""),
    h("td", {}, ""),
    h("td", {}, ""),
    h("td", {}, g.submission_seq !== null && g.submission_seq !== undefined ? h("span", { class: "muted" }, "for submission ", eventLink(g.submission_seq)) : ""),
  );
}

function checksText(checks) {
  if (!checks || typeof checks !== "object") return "";
  return Object.entries(checks)
    .map(([k, val]) => `${k} ${val === true ? "✓" : val === false ? "✗" : String(val)}`)
    .join(", ");
}

async function evidencePage(oid) {
  page(`Evidence ${oid}`, "evidence");
  await loadHead();
  const e = await api(`/api/evidence/${encodeURIComponent(oid)}`);
  const r = e.removal;
  main.append(
    section(
      h("span", {}, "Evidence ", h("code", {}, e.oid), " ", badge(e.state)),
      kv([
        ["OID", h("code", { id: "evidence-oid" }, e.oid)],
        ["SHA-256 (registered content)", h("code", { id: "evidence-digest" }, e.sha256)],
        ["size", h("span", { id: "evidence-size" }, `${e.size} bytes`)],
        ["type", `${e.evidence_type} (${e.media_type})`],
        ["name", e.artifact_name || e.name || ""],
        ["task", taskLink(e.task_id)],
        ["registered", h("span", {}, eventLink(e.registered_seq), ` at ${time(e.registered_at_ms)} by `, h("code", { title: e.registered_by }, short(e.registered_by)))],
        ["state", h("span", { id: "evidence-state" }, e.state === "live" ? "live: content held" : e.state === "expired" ? "expired: content purged by retention (the digest stays in the log)" : "redacted: the original content was replaced")],
        ["pinned", e.pinned ? "yes (exempt from expiry)" : "no"],
        ["retention class", e.retention_class],
        r ? ["removed by", h("span", {}, eventLink(r.seq), ` at ${time(r.at_ms)}: ${r.reason}`)] : null,
        r && r.redacted_sha256 ? ["redacted content", h("span", {}, h("code", {}, r.redacted_sha256), ` (${r.redacted_size} bytes)`)] : null,
      ]),
    ),
  );
  ready();
}

// ------------------------------------------------------------ bundle viewer

async function bundlePage() {
  page("Bundle viewer", "bundle");
  try {
    await loadHead();
  } catch (_) {
    // The viewer works offline too (no server data is needed).
  }
  const status = h("div", { id: "bundle-status", class: "status pending", "data-state": "idle" }, "no bundle yet");
  const results = h("div", { id: "bundle-results" });
  const input = h("input", { type: "file", id: "bundle-file", accept: ".tar,application/x-tar" });
  const drop = h(
    "div",
    {
      class: "dropzone",
      id: "dropzone",
      ondragover: (ev) => {
        ev.preventDefault();
        drop.classList.add("over");
      },
      ondrop: (ev) => {
        ev.preventDefault();
        drop.classList.remove("over");
        const f = ev.dataTransfer.files[0];
        if (f) auditFile(f, status, results);
      },
    },
    h("p", {}, "Drop an export bundle (", h("code", {}, "docket export OUT.tar --tar"), ") here, or choose it: "),
    input,
    h("p", { class: "muted" }, "Nothing is uploaded: the file is read and audited in this page, with WebCrypto."),
  );
  input.addEventListener("change", () => {
    if (input.files[0]) auditFile(input.files[0], status, results);
  });
  main.append(
    section("Audit an export bundle in the browser", drop, status, results),
    section(
      "What this audit checks",
      h("ul", {}, v.AUDIT_CHECKS.map((c) => h("li", {}, c))),
      h("h3", {}, "What it does not check (run docket audit for these)"),
      h("ul", {}, v.AUDIT_NOT_CHECKED.map((c) => h("li", {}, c))),
    ),
  );
  ready();
}

async function auditFile(file, status, results) {
  status.className = "status pending";
  status.dataset.state = "running";
  status.textContent = `auditing ${file.name}…`;
  results.replaceChildren();
  try {
    const buf = new Uint8Array(await file.arrayBuffer());
    const tar = v.parseTar(buf);
    const p = pinned();
    const r = await v.auditBundle(tar.files, tar.problems, p ? p.vkey : null);
    const errors = r.findings.filter((f) => f.severity === "error");
    status.className = `status ${r.accepted ? "ok" : "bad"}`;
    status.dataset.state = r.accepted ? "accepted" : "rejected";
    status.textContent = r.accepted
      ? `ACCEPTED: ${file.name} — ${r.info.events} events verified against the ${r.info.key || "?"} checkpoint of ${r.info.tree_size} events`
      : `REJECTED: ${file.name} — ${errors.length} finding(s): ${errors
          .slice(0, 3)
          .map((f) => f.kind)
          .join(", ")}`;
    results.append(
      kv([
        ["files", String(tar.files.size)],
        ["key", r.info.key || ""],
        ["checkpoint", r.info.tree_size !== undefined ? `${r.info.origin}, ${r.info.tree_size} events, root ${r.info.root}` : ""],
        ["events carried", `${r.info.events} in runs ${JSON.stringify(r.info.runs || [])}`],
        r.info.full_tree ? ["root", `recomputed from every carried event: ${r.info.full_tree}`] : null,
        r.info.consistency ? ["consistency", r.info.consistency] : null,
      ]),
      r.findings.length === 0
        ? h("p", { class: "ok" }, "no finding")
        : table(
            ["finding", "severity", "file", "seq", "detail"],
            r.findings.map((f) =>
              h(
                "tr",
                { class: `finding ${f.severity}`, "data-kind": f.kind },
                h("td", {}, f.kind),
                h("td", {}, f.severity),
                h("td", {}, f.file || ""),
                h("td", {}, f.seq === null || f.seq === undefined ? "" : String(f.seq)),
                h("td", {}, f.detail),
              ),
            ),
            { id: "findings" },
          ),
    );
  } catch (e) {
    status.className = "status bad";
    status.dataset.state = "rejected";
    status.textContent = `REJECTED: ${e.message}`;
  }
}

// ------------------------------------------------------------ routing

async function route() {
  const hash = decodeURIComponent(location.hash.replace(/^#\/?/, ""));
  const [name, ...rest] = hash.split("/");
  const arg = rest.join("/");
  try {
    if (name === "event" && /^\d+$/.test(arg)) await eventPage(Number(arg));
    else if (name === "events" && /^\d+$/.test(arg)) await eventsPage(Number(arg));
    else if (name === "task" && arg) await taskPage(arg);
    else if (name === "evidence" && arg) await evidencePage(arg);
    else if (name === "bundle") await bundlePage();
    else await homePage();
  } catch (e) {
    if (e instanceof AuthNeeded) {
      const f = document.getElementById("token-form");
      f.dataset.needed = "1";
      f.hidden = false;
    }
    showError(e);
  }
}

document.getElementById("token-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const t = document.getElementById("token-input").value.trim();
  if (t) sessionStorage.setItem(TOKEN_KEY, t);
  else sessionStorage.removeItem(TOKEN_KEY);
  route();
});

window.addEventListener("hashchange", route);
route();
