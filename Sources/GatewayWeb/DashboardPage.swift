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
    #order-filter                     the order ID filter (input; exact order ID, as MONEI's Payments filter)
    #payments                         the payments table; #payments tbody tr is one sale, newest first, with
                                      data-payment-id, data-order-id and data-status; cells .time .order .status .amount .card
    #payments-empty                   shown when no payment matches
    #last-updated                     the time of the last successful poll (data-polls counts them)
    #poll-error                       shown when a poll failed (the page keeps polling)
    #payment-detail                   a payment's page (hidden until a row is clicked, or #/payments/<id>), data-payment-id
    #detail-order-id #detail-status #detail-amount #detail-card #detail-refunded
    #refunds tbody tr                 one refund each (data-refund-id)
    #reversal                         the reversal, or "none"
    #webhooks tbody tr                one webhook each (data-webhook-id, data-state)
    #webhook-attempts tbody tr        one delivery attempt each, all webhooks of the payment (data-webhook-id,
                                      data-attempt, data-status); cells .attempt .started .http .error .next-retry
    #back                             back to the list
  The page polls GET /dashboard/api/payments (and /dashboard/api/payments/<id> when a payment is open)
  every {{POLL_MS}} ms: new payments and delivery attempts appear without a reload. No full PAN is ever shown.
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
  header { display: flex; align-items: center; gap: 16px; padding: 12px 24px; background: #fff; border-bottom: 1px solid var(--line); }
  header h1 { font-size: 18px; margin: 0; }
  header .meta { margin-left: auto; color: var(--muted); font-size: 12px; }
  main { padding: 20px 24px; max-width: 1200px; }
  section.card, div.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 16px; margin-bottom: 16px; }
  .filters { display: flex; gap: 8px; align-items: center; margin-bottom: 12px; }
  input[type=search] { font: inherit; padding: 6px 10px; border: 1px solid var(--line); border-radius: 6px; width: 280px; }
  table { width: 100%; border-collapse: collapse; }
  th, td { text-align: left; padding: 8px 10px; border-bottom: 1px solid var(--line); white-space: nowrap; }
  th { color: var(--muted); font-weight: 600; font-size: 12px; text-transform: uppercase; letter-spacing: .03em; }
  #payments tbody tr { cursor: pointer; }
  #payments tbody tr:hover { background: #f0f3f8; }
  td.amount, th.amount { text-align: right; font-variant-numeric: tabular-nums; }
  .badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; background: #eef0f4; }
  .SUCCEEDED, .delivered { color: var(--ok); background: #e6f4ec; }
  .FAILED, .failed { color: var(--bad); background: #fbeaea; }
  .CANCELED, .REFUNDED, .PARTIALLY_REFUNDED, .retrying, .pending { color: var(--warn); background: #fdf3df; }
  .hidden { display: none; }
  .muted { color: var(--muted); }
  #poll-error { color: var(--bad); }
  dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; }
  dt { color: var(--muted); }
  h2 { font-size: 15px; margin: 0 0 10px; }
  a { color: #2456c7; }
  .spaced { margin-top: 14px; }
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
      <label for="order-filter">Order ID</label>
      <input id="order-filter" type="search" placeholder="filter by order ID, e.g. order-1042" autocomplete="off" spellcheck="false">
    </div>
    <table id="payments">
      <thead><tr><th>Time</th><th>Order ID</th><th>Status</th><th class="amount">Amount</th><th>Card</th></tr></thead>
      <tbody></tbody>
    </table>
    <p id="payments-empty" class="muted hidden">No payment matches. Absence is not proof: the payment may not be visible yet.</p>
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
    </div>
    <div class="card">
      <h2>Refunds</h2>
      <table id="refunds"><thead><tr><th>Time</th><th class="amount">Amount</th><th>Unique ref</th></tr></thead><tbody></tbody></table>
      <h2 class="spaced">Reversal</h2>
      <p id="reversal" class="muted">none</p>
    </div>
    <div class="card">
      <h2>Webhooks</h2>
      <table id="webhooks"><thead><tr><th>#</th><th>Event</th><th>URL</th><th>State</th><th>Attempts</th><th>Next retry</th><th>Last error</th></tr></thead><tbody></tbody></table>
      <h2 class="spaced">Delivery attempts</h2>
      <table id="webhook-attempts"><thead><tr><th>Webhook</th><th>Attempt</th><th>Started</th><th>HTTP status</th><th>Error</th><th>Next retry</th></tr></thead><tbody></tbody></table>
    </div>
  </section>
</main>
<script nonce="{{NONCE}}">
"use strict";
(function () {
  const POLL_MS = {{POLL_MS}};
  const $ = (id) => document.getElementById(id);
  let polls = 0, timer = null, inFlight = false;

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

  function renderList(data) {
    const tbody = $("payments").tBodies[0];
    const rows = data.items.map((p) => {
      const tr = el("tr", { "data-payment-id": p.id, "data-order-id": p.orderId, "data-status": p.status });
      tr.append(el("td", { class: "time" }, when(p.createdAt)), el("td", { class: "order" }, p.orderId));
      const st = el("td", { class: "status" });
      st.append(el("span", { class: "badge " + p.status }, p.status));
      tr.append(st, el("td", { class: "amount" }, money(p.amount, p.currency)), el("td", { class: "card" }, card(p)));
      tr.addEventListener("click", () => { location.hash = "#/payments/" + encodeURIComponent(p.id); });
      return tr;
    });
    tbody.replaceChildren(...rows);
    $("payments-empty").classList.toggle("hidden", rows.length > 0);
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
        // As typed: an order ID may begin or end with a space (the server also tries it trimmed).
        const q = $("order-filter").value;
        const url = "/dashboard/api/payments" + (q.trim() ? "?orderId=" + encodeURIComponent(q) : "");
        const r = await getJSON(url);
        if (q === $("order-filter").value) renderList(r.body);
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

  function restart() {
    if (timer) clearInterval(timer);
    poll();
    timer = setInterval(poll, POLL_MS);
  }
  const params = new URLSearchParams(location.search);
  if (params.get("orderId")) $("order-filter").value = params.get("orderId");
  $("order-filter").addEventListener("input", () => poll());
  window.addEventListener("hashchange", () => poll());
  restart();
})();
</script>
</body>
</html>
"""#
}
