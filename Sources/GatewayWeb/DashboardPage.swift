/// The dashboard page: one self-contained HTML document (inline CSS and JS, no external asset).
enum DashboardPage {
    /// The page, with `nonce` on its inline style and script (the Content-Security-Policy allows
    /// only those) and the poll period in milliseconds.
    static func html(nonce: String, pollMilliseconds: Int) -> String {
        template.replacingOccurrences(of: "{{NONCE}}", with: nonce)
            .replacingOccurrences(of: "{{POLL_MS}}", with: String(pollMilliseconds))
    }

    private static let template = #"""
<!DOCTYPE html>
<!--
  tapemu gateway dashboard. Stable hooks for tests (headless Chromium) and scripts:
    #order-filter                     order ID filter (input): a prefix, case-insensitive (also tried trimmed)
    #status-filter #from-filter #to-filter   status (select) and days (input type=date, UTC, both included)
    #match-note                       what the order filter matched; data-exact = how many match it exactly
    #totals                           totals of everything the filters show (all pages); data-count, one
                                      .total per currency with data-currency, data-amount, data-refunded, data-net
    #prev-page #next-page #page-info  paging (page size: ?pageSize=N in the page's URL, default 50)
    #export-csv                       a link to the CSV of everything the filters show
    #payments                         the payments table; #payments tbody tr is one sale, newest first, with
                                      data-payment-id, data-order-id and data-status; cells .time .order .status .amount .card
    #payments-empty                   shown when no payment matches
    #last-updated                     the time of the last successful poll (data-polls counts them)
    #poll-error                       shown when a poll failed (the page keeps polling)
    #payment-detail                   a payment's page (hidden until a row is clicked, or #/payments/<id>), data-payment-id
    #detail-order-id #detail-status #detail-amount #detail-card #detail-refunded
    #refund-amount #refund-button     refund this amount (empty: all that is left) through the gateway's rules
    #reverse-button                   reverse the payment (once)
    #action-message                   the answer of the last action; data-state = ok | error
    #refunds tbody tr                 one refund each (data-refund-id)
    #reversal                         the reversal, or "none"
    #webhooks tbody tr                one webhook each (data-webhook-id, data-state)
    #webhook-attempts tbody tr        one delivery attempt each, all webhooks of the payment (data-webhook-id,
                                      data-attempt, data-status); cells .attempt .started .http .error .next-retry
    #back                             back to the list
  The page polls GET /dashboard/api/payments (and /dashboard/api/payments/<id> when a payment is open)
  every {{POLL_MS}} ms: new payments and delivery attempts appear without a reload. No full PAN is ever shown.
  Narrower than 720 px, each payment is a small card (the table reflows); the detail tables scroll sideways.
-->
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tapemu · Payments</title>
<style nonce="{{NONCE}}">
  :root { --fg: #1d2330; --muted: #6b7385; --line: #e3e6ec; --bg: #f6f7f9; --ok: #1f7a4d; --bad: #b3261e; --warn: #9a6700; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
  header { display: flex; flex-wrap: wrap; align-items: center; gap: 4px 16px; padding: 12px 24px; background: #fff; border-bottom: 1px solid var(--line); }
  header h1 { font-size: 18px; margin: 0; }
  header .meta { margin-left: auto; color: var(--muted); font-size: 12px; }
  main { padding: 20px 24px; max-width: 1200px; }
  section.card, div.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 16px; margin-bottom: 16px; min-width: 0; }
  .filters { display: flex; flex-wrap: wrap; gap: 8px 12px; align-items: end; margin-bottom: 12px; }
  .filters label { display: flex; flex-direction: column; gap: 2px; font-size: 12px; color: var(--muted); min-width: 0; }
  input, select, button { font: inherit; padding: 6px 10px; border: 1px solid var(--line); border-radius: 6px; background: #fff; color: var(--fg); max-width: 100%; }
  button { cursor: pointer; }
  button:disabled { cursor: default; opacity: .5; }
  button.danger { color: var(--bad); border-color: #e8b4b0; }
  #order-filter { width: 240px; }
  .summary { display: flex; flex-wrap: wrap; gap: 4px 16px; align-items: baseline; margin-bottom: 10px; }
  #totals .total { font-variant-numeric: tabular-nums; margin-right: 12px; }
  .pager { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin-top: 12px; }
  .scroll { overflow-x: auto; max-width: 100%; }
  table { width: 100%; border-collapse: collapse; }
  th, td { text-align: left; padding: 8px 10px; border-bottom: 1px solid var(--line); white-space: nowrap; }
  th { color: var(--muted); font-weight: 600; font-size: 12px; text-transform: uppercase; letter-spacing: .03em; }
  #payments tbody tr { cursor: pointer; }
  #payments tbody tr:hover { background: #f0f3f8; }
  td.amount, th.amount { text-align: right; font-variant-numeric: tabular-nums; }
  .badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; background: #eef0f4; }
  .SUCCEEDED, .delivered { color: var(--ok); background: #e6f4ec; }
  .FAILED, .failed { color: var(--bad); background: #fbeaea; }
  .CANCELED, .REFUNDED, .PARTIALLY_REFUNDED, .AUTHORIZED, .retrying, .pending { color: var(--warn); background: #fdf3df; }
  .hidden { display: none; }
  .muted { color: var(--muted); }
  #poll-error { color: var(--bad); }
  #action-message[data-state=error] { color: var(--bad); }
  #action-message[data-state=ok] { color: var(--ok); }
  .actions { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin-top: 14px; }
  #refund-amount { width: 110px; }
  dl { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 4px 16px; margin: 0; }
  dt { color: var(--muted); }
  dd { margin: 0; overflow-wrap: anywhere; }
  h2 { font-size: 15px; margin: 0 0 10px; overflow-wrap: anywhere; }
  a { color: #2456c7; }
  .spaced { margin-top: 14px; }
  @media (max-width: 720px) {
    header, main { padding-left: 12px; padding-right: 12px; }
    section.card, div.card { padding: 12px; }
    #order-filter { width: 100%; }
    .filters label { flex: 1 1 140px; }
    /* The payments table reflows: one small card per payment, every field on it. */
    #payments thead { display: none; }
    #payments, #payments tbody, #payments tr, #payments td { display: block; width: 100%; }
    #payments tr { border: 1px solid var(--line); border-radius: 8px; padding: 6px 10px; margin-bottom: 8px; }
    #payments td { border: 0; padding: 2px 0; white-space: normal; overflow-wrap: anywhere; display: flex; gap: 12px; justify-content: space-between; text-align: right; }
    #payments td::before { content: attr(data-label); color: var(--muted); font-size: 12px; text-align: left; flex: none; }
  }
</style>
</head>
<body>
<header>
  <h1>Payments</h1>
  <span class="muted">tapemu emulated gateway</span>
  <span class="meta">updated <span id="last-updated" data-polls="0">—</span> <span id="poll-error" class="hidden"></span></span>
</header>
<main>
  <section id="list" class="card">
    <div class="filters">
      <label>Order ID <input id="order-filter" type="search" placeholder="order ID or its beginning" autocomplete="off" spellcheck="false"></label>
      <label>Status
        <select id="status-filter">
          <option value="">any</option><option>SUCCEEDED</option><option>FAILED</option><option>AUTHORIZED</option>
          <option>PARTIALLY_REFUNDED</option><option>REFUNDED</option><option>CANCELED</option>
        </select></label>
      <label>From <input id="from-filter" type="date"></label>
      <label>To <input id="to-filter" type="date"></label>
      <a id="export-csv" href="/dashboard/api/payments.csv" download="payments.csv">Export CSV</a>
    </div>
    <div class="summary">
      <span id="match-note" class="muted" data-exact="0"></span>
      <span id="totals" data-count="0"></span>
    </div>
    <table id="payments">
      <thead><tr><th>Time</th><th>Order ID</th><th>Status</th><th class="amount">Amount</th><th>Card</th></tr></thead>
      <tbody></tbody>
    </table>
    <p id="payments-empty" class="muted hidden">No payment matches these filters.</p>
    <div class="pager">
      <button id="prev-page" type="button" disabled>← Newer</button>
      <span id="page-info" class="muted"></span>
      <button id="next-page" type="button" disabled>Older →</button>
    </div>
  </section>

  <section id="payment-detail" class="hidden">
    <p><a id="back" href="#/">← All payments</a></p>
    <div class="card">
      <h2>Payment <span id="detail-id" class="muted"></span></h2>
      <dl>
        <dt>Order ID</dt><dd id="detail-order-id"></dd>
        <dt>Status</dt><dd><span id="detail-status" class="badge"></span> <span id="detail-message" class="muted"></span></dd>
        <dt>Amount</dt><dd id="detail-amount"></dd>
        <dt>Refunded</dt><dd id="detail-refunded"></dd>
        <dt>Card</dt><dd id="detail-card"></dd>
        <dt>Authorization</dt><dd id="detail-auth"></dd>
        <dt>Unique ref</dt><dd id="detail-ref"></dd>
        <dt>Created</dt><dd id="detail-created"></dd>
      </dl>
      <div class="actions">
        <input id="refund-amount" inputmode="decimal" placeholder="all" aria-label="Amount to refund" autocomplete="off">
        <button id="refund-button" type="button">Refund</button>
        <button id="reverse-button" type="button" class="danger">Reverse</button>
        <span id="action-message" data-state=""></span>
      </div>
    </div>
    <div class="card">
      <h2>Refunds</h2>
      <div class="scroll"><table id="refunds"><thead><tr><th>Time</th><th class="amount">Amount</th><th>Unique ref</th></tr></thead><tbody></tbody></table></div>
      <h2 class="spaced">Reversal</h2>
      <p id="reversal" class="muted">none</p>
    </div>
    <div class="card">
      <h2>Webhooks</h2>
      <div class="scroll"><table id="webhooks"><thead><tr><th>#</th><th>Event</th><th>URL</th><th>State</th><th>Attempts</th><th>Next retry</th><th>Last error</th></tr></thead><tbody></tbody></table></div>
      <h2 class="spaced">Delivery attempts</h2>
      <div class="scroll"><table id="webhook-attempts"><thead><tr><th>Webhook</th><th>Attempt</th><th>Started</th><th>HTTP status</th><th>Error</th><th>Next retry</th></tr></thead><tbody></tbody></table></div>
    </div>
  </section>
</main>
<script nonce="{{NONCE}}">
"use strict";
(function () {
  const POLL_MS = {{POLL_MS}};
  const $ = (id) => document.getElementById(id);
  const params = new URLSearchParams(location.search);
  const pageSize = Math.min(1000, Math.max(1, parseInt(params.get("pageSize") || "50", 10) || 50));
  let polls = 0, timer = null, inFlight = false, offset = 0, total = 0;

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else e.setAttribute(k, v);
    }
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function money(minor, currency) {
    const v = (minor / 100).toFixed(2);
    return v + " " + currency;
  }
  function when(iso) { return iso ? iso.replace("T", " ").replace("Z", " UTC") : "—"; }
  function card(p) { return p.cardBrand + " •••• " + p.last4; }
  function route() {
    const m = location.hash.match(/^#\/payments\/([^/]+)$/);
    return m ? decodeURIComponent(m[1]) : null;
  }
  async function getJSON(url) {
    const r = await fetch(url, { headers: { "Accept": "application/json" }, cache: "no-store" });
    if (!r.ok && r.status !== 404) throw new Error("HTTP " + r.status);
    return { status: r.status, body: await r.json() };
  }
  // The filters as the server reads them (the order ID as typed: it may begin or end with a space).
  function filterQuery() {
    const q = new URLSearchParams();
    const order = $("order-filter").value;
    if (order.trim()) q.set("orderId", order);
    if ($("status-filter").value) q.set("status", $("status-filter").value);
    if ($("from-filter").value) q.set("from", $("from-filter").value);
    if ($("to-filter").value) q.set("to", $("to-filter").value);
    return q;
  }

  function renderList(data, order) {
    const tbody = $("payments").tBodies[0];
    const rows = data.items.map((p) => {
      const tr = el("tr", { "data-payment-id": p.id, "data-order-id": p.orderId, "data-status": p.status });
      tr.append(el("td", { class: "time", "data-label": "Time" }, when(p.createdAt)),
                el("td", { class: "order", "data-label": "Order ID" }, p.orderId));
      const st = el("td", { class: "status", "data-label": "Status" });
      st.append(el("span", { class: "badge " + p.status }, p.status));
      tr.append(st, el("td", { class: "amount", "data-label": "Amount" }, money(p.amount, p.currency)),
                el("td", { class: "card", "data-label": "Card" }, card(p)));
      tr.addEventListener("click", () => { location.hash = "#/payments/" + encodeURIComponent(p.id); });
      return tr;
    });
    tbody.replaceChildren(...rows);
    total = data.total;
    $("payments-empty").classList.toggle("hidden", rows.length > 0);
    $("payments-empty").textContent = order.trim()
      ? "No payment's order ID begins with “" + order.trim() + "” (any case) with these filters."
      : "No payment matches these filters.";
    const note = $("match-note");
    note.setAttribute("data-exact", String(data.exact));
    if (!order.trim()) note.textContent = "";
    else if (data.exact > 0) note.textContent = "exact match: “" + order.trim() + "”" + (data.total > data.exact ? " (and " + (data.total - data.exact) + " more beginning with it)" : "");
    else note.textContent = data.total > 0 ? "no exact match: " + data.total + " order ID" + (data.total === 1 ? "" : "s") + " begin with “" + order.trim() + "” (any case)" : "";
    const totals = $("totals");
    totals.setAttribute("data-count", String(data.total));
    totals.replaceChildren(el("span", { class: "muted" }, data.total + " payment" + (data.total === 1 ? "" : "s") + (data.totals.length ? ":" : "")),
      ...data.totals.map((t) => el("span", { class: "total", "data-currency": t.currency, "data-amount": String(t.amount),
                                              "data-refunded": String(t.refunded), "data-net": String(t.net) },
        " " + money(t.amount, t.currency) + (t.refunded ? " (refunded " + money(t.refunded, t.currency) + ")" : "") + ", net " + money(t.net, t.currency))));
    const first = data.total ? data.offset + 1 : 0, last = data.offset + data.items.length;
    $("page-info").textContent = first + "–" + last + " of " + data.total;
    $("prev-page").disabled = data.offset === 0;
    $("next-page").disabled = last >= data.total;
    $("export-csv").setAttribute("href", "/dashboard/api/payments.csv" + (filterQuery().toString() ? "?" + filterQuery().toString() : ""));
  }

  function renderDetail(d) {
    const p = d.payment;
    $("payment-detail").setAttribute("data-payment-id", p.id);
    $("detail-id").textContent = p.id;
    $("detail-order-id").textContent = p.orderId;
    $("detail-status").textContent = p.status;
    $("detail-status").className = "badge " + p.status;
    $("detail-message").textContent = p.statusCode + " " + p.statusMessage;
    $("detail-amount").textContent = money(p.amount, p.currency);
    $("detail-refunded").textContent = money(p.refundedAmount, p.currency);
    $("detail-card").textContent = card(p);
    $("detail-auth").textContent = p.authorizationCode || "—";
    $("detail-ref").textContent = p.uniqueRef;
    $("detail-created").textContent = when(p.createdAt);
    $("refunds").tBodies[0].replaceChildren(...d.refunds.map((r) => {
      const tr = el("tr", { "data-refund-id": r.id });
      tr.append(el("td", {}, when(r.createdAt)), el("td", { class: "amount" }, money(r.amount, r.currency)), el("td", {}, r.uniqueRef));
      return tr;
    }));
    $("reversal").textContent = d.reversal ? ("reversed " + money(d.reversal.amount, d.reversal.currency) + " at " + when(d.reversal.createdAt) + " (" + d.reversal.uniqueRef + ")") : "none";
    $("webhooks").tBodies[0].replaceChildren(...d.webhooks.map((w) => {
      const tr = el("tr", { "data-webhook-id": String(w.id), "data-state": w.state });
      const st = el("td", {});
      st.append(el("span", { class: "badge " + w.state }, w.state));
      tr.append(el("td", {}, w.id), el("td", {}, w.event), el("td", {}, w.url), st, el("td", {}, w.attempts),
                el("td", { class: "next-retry" }, when(w.nextAttemptAt)), el("td", {}, w.lastError || ""));
      return tr;
    }));
    const attempts = [];
    for (const w of d.webhooks) {
      for (const a of w.tries) {
        const tr = el("tr", { "data-webhook-id": String(w.id), "data-attempt": String(a.attempt),
                              "data-status": a.status === null ? "none" : String(a.status) });
        tr.append(el("td", {}, w.id + " " + w.event), el("td", { class: "attempt" }, a.attempt + (a.fault ? " (" + a.fault + ")" : "")),
                  el("td", { class: "started" }, when(a.startedAt)), el("td", { class: "http" }, a.status === null ? "no answer" : a.status),
                  el("td", { class: "error" }, a.error || ""), el("td", { class: "next-retry" }, when(a.nextAttemptAt)));
        attempts.push(tr);
      }
    }
    $("webhook-attempts").tBodies[0].replaceChildren(...attempts);
  }

  async function poll() {
    if (inFlight) return;
    inFlight = true;
    try {
      const id = route();
      $("list").classList.toggle("hidden", id !== null);
      $("payment-detail").classList.toggle("hidden", id === null);
      if (id === null) {
        const order = $("order-filter").value;
        const q = filterQuery();
        q.set("limit", String(pageSize));
        q.set("offset", String(offset));
        const key = q.toString();
        const r = await getJSON("/dashboard/api/payments?" + key);
        if (r.status !== 200) throw new Error(r.body && r.body.message ? r.body.message : "HTTP " + r.status);
        const now = filterQuery();
        now.set("limit", String(pageSize));
        now.set("offset", String(offset));
        if (now.toString() === key) renderList(r.body, order);
      } else {
        const r = await getJSON("/dashboard/api/payments/" + encodeURIComponent(id));
        if (r.status === 404) { $("detail-id").textContent = id + " (not found)"; }
        else if (id === route()) renderDetail(r.body);
      }
      polls += 1;
      $("last-updated").textContent = new Date().toISOString().replace("T", " ").slice(0, 19) + " UTC";
      $("last-updated").setAttribute("data-polls", String(polls));
      $("poll-error").classList.add("hidden");
    } catch (e) {
      $("poll-error").textContent = "(poll failed: " + e.message + ")";
      $("poll-error").classList.remove("hidden");
    } finally {
      inFlight = false;
    }
  }

  // A refund or a reversal: a JSON POST to the page's own origin (the session cookie and the
  // browser's Origin are the credential); the gateway's rules decide, its message is shown.
  async function act(kind) {
    const id = route();
    if (id === null) return;
    const message = $("action-message");
    let body = {};
    if (kind === "refund") {
      const text = String($("refund-amount").value).trim();
      if (text) {
        if (!/^[0-9]+(\.[0-9]{1,2})?$/.test(text)) {
          message.textContent = "the amount must be like 12.50";
          message.setAttribute("data-state", "error");
          return;
        }
        const [units, cents] = text.split(".");
        body.amount = parseInt(units, 10) * 100 + parseInt(((cents || "") + "00").slice(0, 2), 10);
      }
    }
    $("refund-button").disabled = $("reverse-button").disabled = true;
    message.textContent = kind === "refund" ? "refunding…" : "reversing…";
    message.setAttribute("data-state", "");
    try {
      const r = await fetch("/dashboard/api/payments/" + encodeURIComponent(id) + "/" + kind, {
        method: "POST", cache: "no-store",
        headers: { "Content-Type": "application/json", "Accept": "application/json" },
        body: JSON.stringify(body),
      });
      const answer = await r.json();
      if (r.ok) {
        renderDetail(answer);
        message.textContent = kind === "refund" ? "refunded" : "reversed";
        message.setAttribute("data-state", "ok");
        $("refund-amount").value = "";
      } else {
        message.textContent = answer.message || ("HTTP " + r.status);
        message.setAttribute("data-state", "error");
      }
    } catch (e) {
      message.textContent = "the gateway did not answer: " + e.message + " (look the payment up before trying again)";
      message.setAttribute("data-state", "error");
    } finally {
      $("refund-button").disabled = $("reverse-button").disabled = false;
    }
  }

  function restart() {
    if (timer) clearInterval(timer);
    poll();
    timer = setInterval(poll, POLL_MS);
  }
  if (params.get("orderId")) $("order-filter").value = params.get("orderId");
  const refilter = () => { offset = 0; poll(); };
  $("order-filter").addEventListener("input", refilter);
  for (const f of ["status-filter", "from-filter", "to-filter"]) $(f).addEventListener("change", refilter);
  $("prev-page").addEventListener("click", () => { offset = Math.max(0, offset - pageSize); poll(); });
  $("next-page").addEventListener("click", () => { if (offset + pageSize < total) { offset += pageSize; poll(); } });
  $("refund-button").addEventListener("click", () => act("refund"));
  $("reverse-button").addEventListener("click", () => act("reverse"));
  window.addEventListener("hashchange", () => { $("action-message").textContent = ""; poll(); });
  restart();
})();
</script>
</body>
</html>
"""#
}
