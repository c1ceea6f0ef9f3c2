#!/usr/bin/env python3
"""A reference merchant backend for MONEI Tap to Pay, as seed 000 says one should be.

- Its own durable order store (sqlite3, --db): an order is created before the app takes payment
  and its state survives a restart.
- Webhooks (POST /webhooks/monei): MONEI-Signature verified with the official MONEI SDK's
  `verify_signature`, keyed with the merchant API key, and refused when its timestamp is older
  than --tolerance seconds (a replayed webhook); each (payment, status) is recorded once, so a
  duplicate changes nothing; a payment's latest state holds whatever order its webhooks arrive in
  (REFUNDED or CANCELED after SUCCEEDED, never back), and a paid order goes back to not paid only
  when its own payment is refunded or cancelled in full.
- What the app reports (POST /orders/{id}/app-result): `failed` (an error after which no payment
  occurred) is not paid; `approved`, `declined` and `outcomeUnknown` wait for the signed webhook
  (seed 000 step 2). The backend never asks for an unclear payment to be charged again.
- The recovery job (a thread): an order still pending --grace seconds after the app's report is
  looked up with MONEI's GraphQL `charges` query by orderId (step 3): SUCCEEDED is paid, FAILED is
  not paid, nothing found stays pending — absence is not proof. Then step 4, for an
  `outcomeUnknown`: ask support with the orderId (GET /support/v1/orders/{id}, the time of the
  app's report as `lastAttempt`): `noPaymentReceived` is not paid, `paymentHolds` is paid,
  `askAgainLater` stays pending and asks again on the next pass.
- CoreAPI sales (seeds 002/003; the app reports `face: coreapi` with the terminal's token): the
  recovery job lists the order's transactions (GET /coreapi/v1/transactions?orderId=, the
  terminal's token), takes only a sale whose amount and card suffix are the sale's (seed 003),
  and after a communication error reverses it when its code is A (POST /coreapi/v1/reversal):
  the order is then not paid. No matching transaction: the sale did not reach the gateway.
- The scenario contract of `tapemu scenarios run` (docs/SCENARIOS.md):
  PUT /tapemu/gateway, POST /orders, POST /orders/{id}/app-result, GET /orders/{id}.

--mistake NAME makes it a variant with one classic mistake (MISTAKES below), for proving that
`tapemu scenarios run` catches it. Run: python backend.py --listen 127.0.0.1:0 --db orders.sqlite
(prints "listening on http://HOST:PORT" once it serves).
"""
import argparse
import concurrent.futures
import json
import sqlite3
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from Monei import MoneiClient

MISTAKES = {
    "unknown-as-failed": "treats outcomeUnknown as failed: marks the order not paid and asks the app to charge again",
    "no-signature-check": "trusts a webhook without verifying MONEI-Signature (so neither its key nor its age)",
    "no-stale-check": "verifies the signature but not its timestamp: a replayed webhook is taken",
    "not-idempotent": "adds the amount of every SUCCEEDED webhook it receives: a duplicate counts twice",
    "no-recovery-job": "waits for the webhook only: never asks the charges query (skips step 3)",
    "no-webhook-is-failed": "takes no webhook within --grace for not paid (instead of the charges query)",
    "no-support-ask": "stops at step 3: an outcomeUnknown the charges query does not find stays pending for ever (skips step 4)",
    "reverse-without-check": "CoreAPI: reverses the order's first authorised sale without checking its amount and card suffix (seed 002's code, not 003's)",
    "no-amount-check": "CoreAPI: checks the card suffix before a reversal, not the amount",
    "no-suffix-check": "CoreAPI: checks the amount before a reversal, not the card suffix",
    "last-webhook-wins": "takes the status of the last webhook received as the order's state (out of order, an older state overwrites a newer one)",
}

# A payment's states in the order they can follow one another: a webhook whose state ranks below
# one already received for the same payment is older news (delivered out of order).
STATE_RANK = {"PENDING": 0, "AUTHORIZED": 1, "SUCCEEDED": 2, "FAILED": 2, "PARTIALLY_REFUNDED": 3,
              "REFUNDED": 4, "CANCELED": 4}


class Store:
    """The durable order store. Writes: one connection, one lock, every change one durable
    transaction. Reads: a connection per thread, outside the lock (WAL: a reader sees the last
    commit and never waits for the writer), so a poll of an order's state never queues behind
    the writes."""

    def __init__(self, path):
        self.path = path
        self.local = threading.local()
        self.lock = threading.Lock()
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript("""
            CREATE TABLE IF NOT EXISTS orders (
                order_id TEXT PRIMARY KEY, amount INTEGER NOT NULL, currency TEXT NOT NULL,
                state TEXT NOT NULL DEFAULT 'pending', paid_amount INTEGER, payment_id TEXT,
                app_outcome TEXT, app_error TEXT, app_result_at REAL, reason TEXT,
                face TEXT NOT NULL DEFAULT 'monei', terminal_token TEXT, unique_ref TEXT, card_last_four TEXT);
            CREATE TABLE IF NOT EXISTS webhook_events (
                payment_id TEXT NOT NULL, status TEXT NOT NULL, order_id TEXT NOT NULL, received_at REAL NOT NULL,
                PRIMARY KEY (payment_id, status));
            CREATE TABLE IF NOT EXISTS settings (name TEXT PRIMARY KEY, value TEXT NOT NULL);
        """)

    def tx(self, fn):
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                result = fn(self.db)
                self.db.execute("COMMIT")
                return result
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def read(self, sql, args=()):
        """One read of the last committed state, on this thread's own connection."""
        db = getattr(self.local, "db", None)
        if db is None:
            db = self.local.db = sqlite3.connect(self.path, isolation_level=None)
        return db.execute(sql, args).fetchall()

    def setting(self, name):
        row = next(iter(self.read("SELECT value FROM settings WHERE name = ?", (name,))), None)
        return row[0] if row else None

    def set_setting(self, name, value):
        self.tx(lambda db: db.execute("INSERT OR REPLACE INTO settings VALUES (?, ?)", (name, value)))


def conclude(db, order_id, state, amount=None, payment_id=None, reason=""):
    """Moves a pending order to its conclusion. Paid is final: nothing takes it back to not paid
    (a late FAILED webhook of another attempt, a duplicate, out of order)."""
    row = db.execute("SELECT state FROM orders WHERE order_id = ?", (order_id,)).fetchone()
    if row is None or row[0] == "paid":
        return
    if state == "not_paid" and row[0] == "not_paid":
        return
    db.execute("UPDATE orders SET state = ?, paid_amount = COALESCE(?, paid_amount), payment_id = COALESCE(?, payment_id),"
               " reason = ? WHERE order_id = ?", (state, amount, payment_id, reason, order_id))


def undo(db, order_id, payment_id, reason):
    """A payment refunded or cancelled in full: the order is not paid, unless another payment of
    the order is the one that paid it."""
    db.execute("UPDATE orders SET state = 'not_paid', reason = ? WHERE order_id = ? AND (payment_id IS NULL OR payment_id = ?)",
               (reason, order_id, payment_id))


class Backend:
    def __init__(self, store, mistake, grace, tolerance, gateway, api_key):
        self.store = store
        self.mistake = mistake
        self.grace = grace
        self.tolerance = tolerance
        if gateway:
            store.set_setting("gateway", gateway)
        if api_key:
            store.set_setting("api_key", api_key)
        self.stop = threading.Event()
        self.workers = concurrent.futures.ThreadPoolExecutor(max_workers=16, thread_name_prefix="recovery")
        self.inflight = set()
        self.inflight_lock = threading.Lock()

    # --- Webhooks --------------------------------------------------------------------------
    def webhook(self, raw, signature):
        api_key = self.store.setting("api_key")
        if self.mistake == "no-signature-check":
            # MISTAKE: anyone can post a payment here.
            try:
                doc = json.loads(raw)
            except ValueError:
                return 400, {"error": "not JSON"}
        else:
            if not api_key or not signature:
                return 401, {"error": "unsigned"}
            try:
                # The official SDK: HMAC-SHA256 of "<t>.<body>" with the API key.
                doc = MoneiClient(api_key=api_key).verify_signature(raw.decode("utf-8"), signature)
                t = int(dict(p.split("=", 1) for p in signature.split(","))["t"])
            except Exception:
                return 401, {"error": "bad signature"}
            # MISTAKE (no-stale-check): skipping this takes a replayed webhook.
            if self.mistake != "no-stale-check" and abs(time.time() - t) > self.tolerance:
                return 401, {"error": "stale signature"}
        if not isinstance(doc, dict):
            return 400, {"error": "not a payment"}
        order_id, status, payment_id = doc.get("orderId"), doc.get("status"), doc.get("id")
        if not order_id or not status or not payment_id:
            return 400, {"error": "not a payment"}

        def apply(db):
            if self.mistake == "last-webhook-wins":
                # MISTAKE: the last webhook received is taken for the payment's state.
                if db.execute("INSERT OR IGNORE INTO webhook_events VALUES (?, ?, ?, ?)",
                              (payment_id, status, order_id, time.time())).rowcount == 0:
                    return
                paid = status == "SUCCEEDED"
                if paid or status in ("FAILED", "REFUNDED", "CANCELED"):
                    db.execute("UPDATE orders SET state = ?, paid_amount = ?, payment_id = ?, reason = ? WHERE order_id = ?",
                               ("paid" if paid else "not_paid", doc.get("amount") if paid else None, payment_id,
                                f"webhook {status} (the last one received)", order_id))
                return
            newest = max((STATE_RANK.get(r[0], 0) for r in db.execute(
                "SELECT status FROM webhook_events WHERE payment_id = ?", (payment_id,))), default=-1)
            if self.mistake == "not-idempotent" and status == "SUCCEEDED":
                if STATE_RANK["SUCCEEDED"] < newest:
                    return  # older news (this variant's one mistake is elsewhere)
                db.execute("INSERT OR IGNORE INTO webhook_events VALUES (?, ?, ?, ?)", (payment_id, status, order_id, time.time()))
                # MISTAKE: every delivery counts; webhooks come at least once.
                db.execute("UPDATE orders SET state = 'paid', paid_amount = COALESCE(paid_amount, 0) + ?, payment_id = ?"
                           " WHERE order_id = ?", (doc.get("amount") or 0, payment_id, order_id))
                return
            seen = db.execute("INSERT OR IGNORE INTO webhook_events VALUES (?, ?, ?, ?)",
                              (payment_id, status, order_id, time.time())).rowcount == 0
            if seen:
                return  # a duplicate: recorded once
            if STATE_RANK.get(status, 0) < newest:
                return  # older news: this payment has moved on (webhooks come in any order)
            if status == "SUCCEEDED":
                conclude(db, order_id, "paid", doc.get("amount"), payment_id, "webhook SUCCEEDED")
            elif status == "FAILED":
                conclude(db, order_id, "not_paid", None, payment_id, "webhook FAILED")
            elif status in ("REFUNDED", "CANCELED"):
                undo(db, order_id, payment_id, f"webhook {status}: the payment was {status.lower()} in full")
        self.store.tx(apply)
        return 200, {"received": True}

    # --- The app's report --------------------------------------------------------------------
    def app_result(self, order_id, body):
        outcome = body.get("outcome")
        face = body.get("face") or "monei"
        if face not in ("monei", "coreapi"):
            return 400, {"error": "face must be monei or coreapi"}
        allowed = ("approved", "declined", "failed", "commError") if face == "coreapi" else \
            ("approved", "declined", "failed", "outcomeUnknown")
        if outcome not in allowed:
            return 400, {"error": "outcome must be one of " + ", ".join(allowed)}
        if face == "coreapi" and outcome != "failed" and not isinstance(body.get("terminalToken"), str):
            return 400, {"error": "a CoreAPI sale needs the terminal's token (terminalToken)"}
        charge_again = False

        def apply(db):
            nonlocal charge_again
            if db.execute("SELECT 1 FROM orders WHERE order_id = ?", (order_id,)).fetchone() is None:
                return False
            db.execute("UPDATE orders SET app_outcome = ?, app_error = ?, app_result_at = ?, face = ?, terminal_token = ?,"
                       " unique_ref = ?, card_last_four = ? WHERE order_id = ?",
                       (outcome, body.get("error"), time.time(), face, body.get("terminalToken"), body.get("uniqueRef"),
                        body.get("cardLastFour"), order_id))
            if outcome == "failed":
                conclude(db, order_id, "not_paid", reason=f"the SDK: {body.get('error')} (no payment occurred)")
            elif outcome == "outcomeUnknown" and self.mistake == "unknown-as-failed":
                # MISTAKE: the card can be charged; this calls it failed and charges again.
                conclude(db, order_id, "not_paid", reason="outcomeUnknown taken as failed")
                charge_again = True
            return True
        if not self.store.tx(apply):
            return 404, {"error": "no such order"}
        return 200, {"chargeAgain": charge_again}

    # --- The recovery job (seed 000 step 3) ------------------------------------------------------
    def recovery_loop(self, interval):
        while not self.stop.wait(interval):
            try:
                self.recover_once()
            except Exception as e:  # keep running; the next pass tries again
                print(f"recovery: {e}", flush=True)

    def recover_once(self):
        gateway, api_key = self.store.setting("gateway"), self.store.setting("api_key")
        if not gateway or not api_key:
            return
        due = self.store.read(
            "SELECT order_id, face, app_outcome, app_result_at FROM orders"
            " WHERE state = 'pending' AND app_result_at IS NOT NULL AND app_result_at <= ?",
            (time.time() - self.grace,))
        # Each order's lookups on a worker of its own: one slow answer from the gateway never
        # holds up the other orders' steps 3 and 4 (a serial pass over many pending orders took
        # longer than the settle wait on a loaded machine). An order is looked up by one worker
        # at a time.
        for row in due:
            with self.inflight_lock:
                if row[0] in self.inflight:
                    continue
                self.inflight.add(row[0])
            self.workers.submit(self.recover_order, gateway, api_key, *row)

    def recover_order(self, gateway, api_key, order_id, face, app_outcome, app_result_at):
        try:
            self.recover_one(gateway, api_key, order_id, face, app_outcome, app_result_at)
        except Exception as e:  # the next pass tries again
            print(f"recovery of {order_id}: {e}", flush=True)
        finally:
            with self.inflight_lock:
                self.inflight.discard(order_id)

    def recover_one(self, gateway, api_key, order_id, face, app_outcome, app_result_at):
        if self.mistake == "no-webhook-is-failed" and face != "coreapi":
            # MISTAKE: no webhook yet is not "not paid" (step 3 finds the charge).
            self.store.tx(lambda db: conclude(db, order_id, "not_paid", reason="no webhook in time"))
            return
        if face == "coreapi":
            self.recover_core_sale(gateway, order_id)
            return
        items = charges(gateway, api_key, order_id)
        succeeded = [i for i in items if i.get("status") in ("SUCCEEDED", "PARTIALLY_REFUNDED")]
        failed = [i for i in items if i.get("status") in ("FAILED", "REFUNDED", "CANCELED")]
        if succeeded:
            self.store.tx(lambda db: conclude(db, order_id, "paid", succeeded[0].get("amount"), succeeded[0].get("id"),
                                              "charges query: SUCCEEDED"))
        elif failed:
            self.store.tx(lambda db: conclude(db, order_id, "not_paid", None, failed[0].get("id"), "charges query: " + failed[0].get("status")))
        elif app_outcome == "outcomeUnknown" and self.mistake != "no-support-ask":
            # Step 4: no payment shows, which does not prove that the card was not charged:
            # ask support with the orderId. Never charged again here.
            answer = support(gateway, api_key, order_id, app_result_at)
            if answer.get("answer") == "noPaymentReceived":
                self.store.tx(lambda db: conclude(db, order_id, "not_paid", reason="support: no payment was received"))
            elif answer.get("answer") == "paymentHolds":
                self.store.tx(lambda db: conclude(db, order_id, "paid", answer.get("amount"), answer.get("paymentId"),
                                                  "support: a payment holds the order"))
            # askAgainLater: stays pending; the next pass asks again.


    def recover_core_sale(self, gateway, order_id):
        """Seeds 002/003's recovery of a CoreAPI sale: list the order's transactions with the
        terminal's token; the sale is the one whose amount and card suffix are the sale's (003);
        after a communication error an authorised (A) sale is reversed; none: it never reached
        the gateway."""
        amount, outcome, token, unique_ref, last_four = self.store.read(
            "SELECT amount, app_outcome, terminal_token, unique_ref, card_last_four FROM orders WHERE order_id = ?",
            (order_id,))[0]
        sales = [t for t in core_request(gateway, token, "GET", "/coreapi/v1/transactions?" +
                                         urllib.parse.urlencode({"orderId": order_id}))["transactionSummary"]
                 if t.get("kind", "sale") == "sale"]

        def same_sale(t):
            if unique_ref:
                return t.get("uniqueRef") == unique_ref
            amount_ok = t.get("amount") == amount
            suffix_ok = last_four is not None and (t.get("cardNumber") or "").endswith(last_four)
            if self.mistake == "reverse-without-check":
                return True  # MISTAKE: the first sale of the order, whatever its amount and card
            if self.mistake == "no-amount-check":
                return suffix_ok  # MISTAKE: the amount is not compared
            if self.mistake == "no-suffix-check":
                return amount_ok  # MISTAKE: the card is not compared
            return amount_ok and suffix_ok
        match = next((t for t in sales if same_sale(t)), None)
        if match is None:
            self.store.tx(lambda db: conclude(db, order_id, "not_paid", reason="no transaction: the sale did not reach the gateway"))
        elif match.get("code") != "A":
            self.store.tx(lambda db: conclude(db, order_id, "not_paid", None, match.get("uniqueRef"),
                                              f"transaction code {match.get('code')}: nothing to reverse"))
        elif outcome == "approved":
            self.store.tx(lambda db: conclude(db, order_id, "paid", match.get("amount"), match.get("uniqueRef"),
                                              "transaction list: code A"))
        elif outcome == "commError":
            # Seed 002 step 4: authorised after a communication error — reverse it (isRefund NO).
            try:
                core_request(gateway, token, "POST", "/coreapi/v1/reversal",
                             {"uniqueRef": match["uniqueRef"], "deviceType": "AppleTTP"})
            except urllib.error.HTTPError as e:
                if e.code != 409:  # 409: reversed already — the same end
                    raise
            self.store.tx(lambda db: conclude(db, order_id, "not_paid", None, match.get("uniqueRef"),
                                              "reversed after a communication error"))
        else:
            self.store.tx(lambda db: conclude(db, order_id, "not_paid", None, match.get("uniqueRef"),
                                              f"the app said {outcome}"))


def core_request(gateway, token, method, path, body=None):
    """The gateway's CoreAPI REST with the terminal's token (RestConnector's `with: terminal`)."""
    req = urllib.request.Request(gateway.rstrip("/") + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json", "Authorization": "Bearer " + token})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read() or b"{}")


def support(gateway, api_key, order_id, last_attempt):
    """Seed 000 step 4, "contact MONEI support with the orderId", as tapemu emulates it."""
    query = urllib.parse.urlencode({"lastAttempt": int(last_attempt * 1000)})
    req = urllib.request.Request(gateway.rstrip("/") + "/support/v1/orders/" + urllib.parse.quote(order_id, safe="") + "?" + query,
                                 headers={"Authorization": api_key})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def charges(gateway, api_key, order_id):
    """MONEI's GraphQL `charges` query with filter.orderId (seed 000 step 3)."""
    query = "query { charges(filter: {orderId: {eq: %s}}) { items { id status amount } } }" % json.dumps(order_id)
    req = urllib.request.Request(gateway.rstrip("/") + "/graphql", method="POST",
                                 data=json.dumps({"query": query}).encode(),
                                 headers={"Content-Type": "application/json", "Authorization": api_key})
    with urllib.request.urlopen(req, timeout=10) as r:
        doc = json.loads(r.read())
    if doc.get("errors"):
        raise RuntimeError(f"charges query: {doc['errors']}")
    return doc["data"]["charges"]["items"]


def make_handler(backend):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def answer(self, status, doc):
            data = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def body(self):
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def json_body(self):
            try:
                doc = json.loads(self.body() or b"{}")
                return doc if isinstance(doc, dict) else None
            except ValueError:
                return None

        def order_path(self):
            parts = self.path.split("?")[0].strip("/").split("/")
            if len(parts) >= 2 and parts[0] == "orders":
                return urllib.parse.unquote(parts[1]), parts[2:]
            return None, None

        def do_GET(self):
            order_id, rest = self.order_path()
            if order_id is None or rest:
                return self.answer(404, {"error": "not found"})
            row = next(iter(backend.store.read(
                "SELECT state, amount, paid_amount, reason FROM orders WHERE order_id = ?", (order_id,))), None)
            if row is None:
                return self.answer(404, {"error": "no such order"})
            state, amount, paid, reason = row
            self.answer(200, {"state": state, "amount": paid if paid is not None else amount, "reason": reason})

        def do_PUT(self):
            if self.path != "/tapemu/gateway":
                return self.answer(404, {"error": "not found"})
            doc = self.json_body()
            if not doc or not isinstance(doc.get("url"), str) or not isinstance(doc.get("apiKey"), str):
                return self.answer(400, {"error": "need {url, apiKey}"})
            backend.store.set_setting("gateway", doc["url"])
            backend.store.set_setting("api_key", doc["apiKey"])
            self.answer(200, {"ok": True})

        def do_POST(self):
            if self.path == "/webhooks/monei":
                status, doc = backend.webhook(self.body(), self.headers.get("MONEI-Signature"))
                return self.answer(status, doc)
            if self.path == "/orders":
                doc = self.json_body()
                if not doc or not isinstance(doc.get("orderId"), str) or not isinstance(doc.get("amount"), int):
                    return self.answer(400, {"error": "need {orderId, amount, currency}"})
                backend.store.tx(lambda db: db.execute(
                    "INSERT OR IGNORE INTO orders (order_id, amount, currency) VALUES (?, ?, ?)",
                    (doc["orderId"], doc["amount"], doc.get("currency") or "EUR")))
                return self.answer(201, {"orderId": doc["orderId"]})
            order_id, rest = self.order_path()
            if order_id is not None and rest == ["app-result"]:
                doc = self.json_body()
                if doc is None:
                    return self.answer(400, {"error": "not JSON"})
                status, answer = backend.app_result(order_id, doc)
                return self.answer(status, answer)
            self.answer(404, {"error": "not found"})
    return Handler


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--listen", default="127.0.0.1:8070")
    p.add_argument("--db", default="orders.sqlite")
    p.add_argument("--gateway", help="MONEI's (tapemu gateway serve's) base URL; else announced by PUT /tapemu/gateway")
    p.add_argument("--api-key", help="the merchant API key; else announced by PUT /tapemu/gateway")
    p.add_argument("--grace", type=float, default=1.0, help="seconds to wait for the webhook before the charges query")
    p.add_argument("--interval", type=float, default=0.25, help="seconds between passes of the recovery job")
    p.add_argument("--tolerance", type=float, default=300.0, help="the oldest webhook timestamp accepted, in seconds")
    p.add_argument("--mistake", choices=sorted(MISTAKES), help="run a variant with one classic mistake")
    args = p.parse_args()
    host, port = args.listen.rsplit(":", 1)
    backend = Backend(Store(args.db), args.mistake, args.grace, args.tolerance, args.gateway, args.api_key)
    # A listen backlog for many terminals at once: socketserver's default of 5 drops connection
    # attempts beyond it, and a dropped SYN is retried after 1 s, 3 s, 7 s… (a 10 s timeout of the
    # caller on a loaded machine).
    ThreadingHTTPServer.request_queue_size = 1024
    server = ThreadingHTTPServer((host, int(port)), make_handler(backend))
    if args.mistake != "no-recovery-job":  # MISTAKE (no-recovery-job): no step 3
        threading.Thread(target=backend.recovery_loop, args=(args.interval,), daemon=True).start()
    print(f"listening on http://{host}:{server.server_address[1]}" + (f" (mistake: {args.mistake})" if args.mistake else ""),
          flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        backend.stop.set()


if __name__ == "__main__":
    main()
