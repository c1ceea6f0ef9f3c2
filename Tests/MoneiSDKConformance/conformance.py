#!/usr/bin/env python3
"""MONEI's official Python SDK (PyPI `monei`, module `Monei`), unpatched, against a real
`tapemu gateway serve`: every call a card-present merchant makes, every webhook the gateway
delivers, and the seed's GraphQL `charges` query.

    conformance.py --tapemu PATH [--junit FILE]

Starts `tapemu gateway serve` on a free loopback port and a webhook receiver, pays with
`tapemu pay --gateway URL`, then drives the SDK: payments.get / refund / cancel / capture /
create, an unknown id, a wrong key; `verify_signature` on each delivered webhook, and its
refusal of a body changed in one byte and of a signature wrong in its last hex digit. It
also fails when the SDK's models define a field or a value tapemu neither serves nor lists
below as not applicable to a card-present payment (so a new SDK field shows up here).

Exit 0 when every check passes; 1 otherwise. Prints one line per check and a closing line
with the counts. `scripts/dev test` installs the pinned SDK (requirements.txt) in
.build/monei-venv and the Swift test MoneiSDKConformanceTests runs this script.
"""

import argparse
import http.server
import importlib.metadata
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request

import Monei
from Monei import ApiException, Configuration, MoneiClient
from Monei.model.cancel_payment_request import CancelPaymentRequest
from Monei.model.capture_payment_request import CapturePaymentRequest
from Monei.model.create_payment_request import CreatePaymentRequest
from Monei.model.create_pos_auth_token_request import CreatePosAuthTokenRequest
from Monei.model.payment import Payment
from Monei.model.payment_cancellation_reason import PaymentCancellationReason
from Monei.model.payment_last_refund_reason import PaymentLastRefundReason
from Monei.model.payment_payment_method_card import PaymentPaymentMethodCard
from Monei.model.payment_payment_method_card_input import PaymentPaymentMethodCardInput
from Monei.model.payment_payment_method_input import PaymentPaymentMethodInput
from Monei.model.payment_refund_reason import PaymentRefundReason
from Monei.model.payment_status import PaymentStatus
from Monei.model.payment_transaction_type import PaymentTransactionType
from Monei.model.refund_payment_request import RefundPaymentRequest

# --- What tapemu serves, and what it decided not to (each with its reason) -----------------

# Fields of MONEI's Payment that tapemu serves on a card-present payment (JSON names).
SERVED_ALWAYS = {"id", "amount", "currency", "accountId", "livemode", "status", "orderId", "statusCode",
                 "statusMessage", "refundedAmount", "paymentMethod", "createdAt", "updatedAt"}
# Served when the payment has them.
SERVED_WHEN = {
    "authorizationCode": "an approved payment",
    "lastRefundAmount": "a refunded payment",
    "lastRefundReason": "a payment refunded with a reason",
    "cancellationReason": "a payment cancelled with a reason",
}
# Not served: nothing of a card-present Tap to Pay payment fills them.
NOT_APPLICABLE = {
    "description": "a terminal payment has no description (create takes it and ignores it)",
    "customerId": "no customers in tapemu", "customer": "no customers in tapemu",
    "shop": "no hosted payment page", "billingDetails": "no billing address on a card-present payment",
    "shippingDetails": "no shipping on a card-present payment",
    "sessionDetails": "no browser session", "traceDetails": "no browser session",
    "paymentToken": "no tokenization (generatePaymentToken)",
    "sequence": "no recurring payments", "sequenceId": "no recurring payments",
    "storeId": "no stores", "pointOfSaleId": "no points of sale",
    "metadata": "no metadata", "nextAction": "a card-present payment has no next action (no 3-D Secure)",
}
CARD_SERVED = {"brand", "last4", "expiration"}
CARD_NOT_APPLICABLE = {
    "country": "the issuer's country is not emulated", "type": "debit or credit is not emulated",
    "threeDSecure": "no 3-D Secure on a card-present payment",
    "threeDSecureVersion": "no 3-D Secure on a card-present payment",
    "threeDSecureFlow": "no 3-D Secure on a card-present payment",
    "fingerprint": "the ledger's card fingerprint is keyed and never leaves it",
    "tokenizationMethod": "no wallets", "cardholderName": "never stored", "cardholderEmail": "never stored",
}
STATUS_SERVED = {"SUCCEEDED", "FAILED", "CANCELED", "REFUNDED", "PARTIALLY_REFUNDED", "AUTHORIZED"}
STATUS_NOT_APPLICABLE = {
    "PENDING": "tapemu decides a payment when it is created (no confirm step)",
    "EXPIRED": "an authorisation does not expire in tapemu",
    "PENDING_PROCESSING": "no asynchronous processing", "PAID_OUT": "no payouts",
}
TRANSACTION_TYPES_SERVED = {"SALE", "AUTH"}
TRANSACTION_TYPES_NOT_APPLICABLE = {"PAYOUT": "no payouts", "VERIF": "no card verification"}

KEYED_CARD = "4548812049400004"  # MONEI's public Visa test card (Luhn-valid), keyed in by create


class Checks:
    def __init__(self):
        self.results = []  # (name, ok, detail)

    def check(self, name, ok, detail=""):
        self.results.append((name, bool(ok), detail))
        print(("ok    " if ok else "FAIL  ") + name + ("" if ok or not detail else ": " + detail), flush=True)
        return ok

    def run(self, name, fn):
        """fn() returns a detail string on failure, None on success; an exception fails."""
        try:
            detail = fn()
        except Exception as e:  # noqa: BLE001 - a check's exception is its failure
            detail = f"{type(e).__name__}: {e}".replace("\n", " ")[:600]
        return self.check(name, detail is None, detail or "")


# --- The webhook receiver ------------------------------------------------------------------

class Receiver:
    """Records each POST's raw body and MONEI-Signature header; answers 200."""

    def __init__(self):
        self.items = []
        self.cond = threading.Condition()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                with outer.cond:
                    outer.items.append((self.headers.get("MONEI-Signature"), body))
                    outer.cond.notify_all()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, predicate, timeout=60):
        """The first (signature, body, doc) whose parsed body satisfies predicate; waits on the
        receiver's condition (each delivery wakes it), never a fixed sleep."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for sig, body in self.items:
                    try:
                        doc = json.loads(body)
                    except ValueError:
                        continue
                    if predicate(doc):
                        return sig, body, doc
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)


# --- tapemu --------------------------------------------------------------------------------

class Gateway:
    def __init__(self, tapemu, data_dir):
        self.proc = subprocess.Popen([tapemu, "gateway", "serve", "--listen", "127.0.0.1:0", "--data-dir", data_dir],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(l) for l in self.proc.stdout], daemon=True).start()
        self.stderr = []
        threading.Thread(target=lambda: [self.stderr.append(l) for l in self.proc.stderr], daemon=True).start()
        self.url = self.api_key = None
        deadline = time.monotonic() + 60
        while self.url is None or self.api_key is None:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise RuntimeError("tapemu gateway serve printed no URL and API key: " + "".join(self.stderr)[-2000:])
            if line.startswith("tapemu gateway listening on "):
                self.url = line.split()[-1].strip()
            elif line.startswith("merchant API key: "):
                self.api_key = line.split(": ", 1)[1].strip()

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def pay(tapemu, gateway, data_dir, order_id, amount, callback):
    out = subprocess.run([tapemu, "pay", "--gateway", gateway.url, "--api-key", gateway.api_key,
                          "--amount", str(amount), "--order-id", order_id,
                          "--callback-url", callback, "--data-dir", data_dir, "--json"],
                         capture_output=True, text=True, timeout=120)
    doc = json.loads(out.stdout)
    if "paymentId" not in doc:
        raise RuntimeError(f"tapemu pay {order_id} gave no paymentId (exit {out.returncode}): {out.stdout} {out.stderr}")
    return doc


def http_json(method, url, body=None, key=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if key:
        req.add_header("Authorization", key)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


# --- Checks of shapes ----------------------------------------------------------------------

def as_payment(client, raw):
    """The SDK's own deserialisation of a Payment (types, enums, required fields)."""
    class Response:
        data = raw
    return client._api_client.deserialize(Response(), (Payment,), True)


def error_body(exc, status, name):
    """None when `exc` is the SDK's ApiException with MONEI's error body and status."""
    if not isinstance(exc, ApiException):
        return f"not an ApiException: {exc!r}"
    if exc.status != status:
        return f"HTTP {exc.status}, expected {status}: {exc.body}"
    doc = json.loads(exc.body)
    missing = [k for k in ("status", "statusCode", "message", "requestId", "requestTime") if k not in doc]
    if missing:
        return f"the error body lacks {missing}: {doc}"
    if doc["status"] != name or doc["statusCode"] != status:
        return f"status {doc['status']!r}/{doc['statusCode']!r}, expected {name!r}/{status}"
    return None


def expect_error(fn, status, name, message_part=None):
    try:
        fn()
    except ApiException as e:
        problem = error_body(e, status, name)
        if problem:
            return problem
        if message_part and message_part not in json.loads(e.body)["message"]:
            return f"the message does not say {message_part!r}: {e.body}"
        return None
    return f"no error: expected {status} {name}"


def fields(model):
    return {Payment.attribute_map.get(k, k) for k in model.to_dict().keys()}


def expect(p, **want):
    got = p.to_dict()
    wrong = {k: (got.get(k), v) for k, v in want.items() if str(got.get(k)) != str(v)}
    return None if not wrong else f"(got, expected): {wrong}"


# --- The run -------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tapemu", required=True)
    ap.add_argument("--junit")
    args = ap.parse_args()
    c = Checks()
    work = tempfile.mkdtemp(prefix="tapemu-monei-sdk-")
    server_dir, terminal_dir = os.path.join(work, "server"), os.path.join(work, "terminal")
    receiver = Receiver()
    gw = None
    try:
        gw = Gateway(args.tapemu, server_dir)
        client = MoneiClient(api_key=gw.api_key, config=Configuration(host=gw.url + "/v1"))
        run_checks(c, args, gw, client, receiver, terminal_dir)
    except Exception:  # noqa: BLE001
        c.check("the run itself", False, traceback.format_exc().replace("\n", " | ")[-1500:])
    finally:
        if gw:
            gw.stop()
        shutil.rmtree(work, ignore_errors=True)
    passed = sum(1 for r in c.results if r[1])
    failed = len(c.results) - passed
    if args.junit:
        write_junit(args.junit, c.results)
    print(f"MONEI SDK conformance (monei {importlib.metadata.version('monei')}, the official Python SDK, unpatched): "
          f"{passed} passed, {failed} failed", flush=True)
    return 0 if failed == 0 else 1


def write_junit(path, results):
    from junitparser import Failure, JUnitXml, TestCase, TestSuite
    suite = TestSuite("MONEI SDK conformance")
    for name, ok, detail in results:
        case = TestCase(name, classname="monei_sdk")
        if not ok:
            case.result = [Failure(detail)]
        suite.add_testcase(case)
    xml = JUnitXml()
    xml.add_testsuite(suite)
    xml.write(path)


def run_checks(c, args, gw, client, receiver, terminal_dir):
    hook = receiver.url

    # The SDK's models against what tapemu decided (a new field or value fails here).
    def model_coverage():
        unknown = set(Payment.attribute_map.values()) - SERVED_ALWAYS - set(SERVED_WHEN) - set(NOT_APPLICABLE)
        card = set(PaymentPaymentMethodCard.attribute_map.values()) - CARD_SERVED - set(CARD_NOT_APPLICABLE)
        status = set(PaymentStatus.allowed_values[("value",)].values()) - STATUS_SERVED - set(STATUS_NOT_APPLICABLE)
        types = set(PaymentTransactionType.allowed_values[("value",)].values()) - TRANSACTION_TYPES_SERVED \
            - set(TRANSACTION_TYPES_NOT_APPLICABLE)
        problems = [f"{what} {sorted(s)}" for what, s in [("Payment fields", unknown), ("card fields", card),
                                                           ("statuses", status), ("transaction types", types)] if s]
        return None if not problems else "the SDK defines what tapemu neither serves nor rules out: " + "; ".join(problems)
    c.run("SDK models: every Payment field, card field, status and transaction type is served or ruled out", model_coverage)

    # Payments made by a terminal over TCP.
    approved = pay(args.tapemu, gw, terminal_dir, "sdk-approved", 1000, hook)
    declined = pay(args.tapemu, gw, terminal_dir, "sdk-declined", 1051, hook)
    sale = pay(args.tapemu, gw, terminal_dir, "sdk-sale", 700, hook)
    reversed_sale = pay(args.tapemu, gw, terminal_dir, "sdk-reversed", 600, hook)
    seen = {"status": set()}

    def get_approved():
        p = client.payments.get(approved["paymentId"])
        seen["status"].add(str(p.status))
        missing = SERVED_ALWAYS - fields(p)
        if "authorizationCode" not in fields(p):
            missing.add("authorizationCode")
        return (f"missing {sorted(missing)}" if missing else None) or \
            expect(p, status="SUCCEEDED", status_code="E000", status_message="Transaction approved", amount=1000,
                   currency="EUR", order_id="sdk-approved", livemode=False)
    c.run("payments.get: approved terminal sale is SUCCEEDED, statusCode E000, every always-served field", get_approved)

    def get_declined():
        p = client.payments.get(declined["paymentId"])
        seen["status"].add(str(p.status))
        return expect(p, status="FAILED", status_code="E221",
                      status_message="Transaction declined due to insufficient funds")
    c.run("payments.get: declined (issuer 51) is FAILED, statusCode E221", get_declined)

    def card_fields():
        p = client.payments.get(approved["paymentId"])
        card = p.payment_method.card
        got = {PaymentPaymentMethodCard.attribute_map[k] for k in card.to_dict()}
        return None if CARD_SERVED <= got and p.payment_method.method == "card" else f"card fields {sorted(got)}"
    c.run("payments.get: paymentMethod.card has brand, last4, expiration", card_fields)

    def refund_partial():
        p = client.payments.refund(approved["paymentId"], refund_payment_request=RefundPaymentRequest(
            amount=300, refund_reason=PaymentRefundReason("requested_by_customer")))
        seen["status"].add(str(p.status))
        back = client.payments.get(approved["paymentId"])
        return expect(p, status="PARTIALLY_REFUNDED", refunded_amount=300, last_refund_amount=300,
                      last_refund_reason="requested_by_customer") or \
            expect(back, status="PARTIALLY_REFUNDED", last_refund_amount=300, last_refund_reason="requested_by_customer")
    c.run("payments.refund: partial (300 of 1000, requested_by_customer), kept on read-back", refund_partial)

    def refund_rest():
        p = client.payments.refund(approved["paymentId"], refund_payment_request=RefundPaymentRequest(
            refund_reason=PaymentRefundReason("duplicated")))
        seen["status"].add(str(p.status))
        return expect(p, status="REFUNDED", refunded_amount=1000, last_refund_amount=700, last_refund_reason="duplicated")
    c.run("payments.refund: the rest (700, duplicated) makes it REFUNDED", refund_rest)

    c.run("payments.refund: one more is MONEI's 422 UnprocessableEntityError",
          lambda: expect_error(lambda: client.payments.refund(approved["paymentId"], refund_payment_request=
                                                              RefundPaymentRequest(amount=1)),
                               422, "UnprocessableEntityError", "fully refunded"))

    def every_refund_reason():
        reasons = list(PaymentRefundReason.allowed_values[("value",)].values())
        for r in reasons:
            p = client.payments.refund(sale["paymentId"], refund_payment_request=RefundPaymentRequest(
                amount=1, refund_reason=PaymentRefundReason(r)))
            back = client.payments.get(sale["paymentId"])
            if str(back.last_refund_reason) != r:
                return f"refundReason {r}: read back {back.last_refund_reason}"
        return None
    c.run("payments.refund: every PaymentRefundReason is taken and kept", every_refund_reason)

    c.run("payments.cancel: a SUCCEEDED sale is MONEI's 422 (only AUTHORIZED is cancelled)",
          lambda: expect_error(lambda: client.payments.cancel(sale["paymentId"], cancel_payment_request=
                                                              CancelPaymentRequest(cancellation_reason=
                                                                                   PaymentCancellationReason("duplicated"))),
                               422, "UnprocessableEntityError", "pre-authorized"))
    c.run("payments.capture: a SUCCEEDED sale is MONEI's 422",
          lambda: expect_error(lambda: client.payments.capture(sale["paymentId"]), 422, "UnprocessableEntityError",
                               "already been captured"))

    def create(order_id, amount, kind):
        return client.payments.create(CreatePaymentRequest(
            amount=amount, currency="EUR", order_id=order_id, callback_url=hook,
            transaction_type=PaymentTransactionType(kind),
            payment_method=PaymentPaymentMethodInput(card=PaymentPaymentMethodCardInput(
                number=KEYED_CARD, exp_month="12", exp_year="34", cvc="123"))))

    created = {}

    def create_sale():
        p = create("sdk-create-sale", 1500, "SALE")
        created["sale"] = p
        seen["status"].add(str(p.status))
        return expect(p, status="SUCCEEDED", status_code="E000", amount=1500)
    c.run("payments.create: SALE with paymentMethod.card is SUCCEEDED", create_sale)

    def auth_capture():
        p = create("sdk-auth-capture", 2500, "AUTH")
        seen["status"].add(str(p.status))
        problem = expect(p, status="AUTHORIZED", status_code="E000")
        if problem:
            return problem
        captured = client.payments.capture(p.id, capture_payment_request=CapturePaymentRequest(amount=2500))
        created["captured"] = captured
        return expect(captured, status="SUCCEEDED") or expect(client.payments.get(p.id), status="SUCCEEDED")
    c.run("payments.create AUTH is AUTHORIZED; payments.capture makes it SUCCEEDED", auth_capture)

    c.run("payments.capture: a second capture is MONEI's 422",
          lambda: expect_error(lambda: client.payments.capture(created["captured"].id), 422,
                               "UnprocessableEntityError", "already been captured"))

    def auth_partial_capture():
        p = create("sdk-auth-partial", 2000, "AUTH")
        return expect_error(lambda: client.payments.capture(p.id, capture_payment_request=CapturePaymentRequest(amount=500)),
                            422, "UnprocessableEntityError", "Partial captures")
    c.run("payments.capture: a partial capture is MONEI's 422 (E104, not enabled)", auth_partial_capture)

    def auth_cancel_every_reason():
        reasons = list(PaymentCancellationReason.allowed_values[("value",)].values())
        for i, r in enumerate(reasons):
            p = create(f"sdk-auth-cancel-{i}", 3000 + i, "AUTH")
            done = client.payments.cancel(p.id, cancel_payment_request=CancelPaymentRequest(
                cancellation_reason=PaymentCancellationReason(r)))
            seen["status"].add(str(done.status))
            back = client.payments.get(p.id)
            problem = expect(done, status="CANCELED", cancellation_reason=r) or expect(back, status="CANCELED",
                                                                                        cancellation_reason=r)
            if problem:
                return f"cancellationReason {r}: {problem}"
            created["canceled"] = p
        return None
    c.run("payments.cancel: AUTHORIZED → CANCELED with every PaymentCancellationReason (order_canceled too), kept",
          auth_cancel_every_reason)

    c.run("payments.cancel: a cancelled payment again is MONEI's 422",
          lambda: expect_error(lambda: client.payments.cancel(created["canceled"].id), 422, "UnprocessableEntityError",
                               "already been canceled"))
    c.run("payments.capture: a cancelled payment is MONEI's 422",
          lambda: expect_error(lambda: client.payments.capture(created["canceled"].id), 422, "UnprocessableEntityError",
                               "already been canceled"))

    c.run("payments.get: an unknown id is MONEI's 404 NotFoundError",
          lambda: expect_error(lambda: client.payments.get("0" * 32), 404, "NotFoundError"))
    wrong = MoneiClient(api_key=gw.api_key[:-1] + ("0" if gw.api_key[-1] != "0" else "1"),
                        config=Configuration(host=gw.url + "/v1"))
    c.run("any call with a wrong key is MONEI's 401 UnauthorizedError",
          lambda: expect_error(lambda: wrong.payments.get(sale["paymentId"]), 401, "UnauthorizedError"))

    # pos_auth_token.create (POST /v1/pos/auth-token): the API key → the token the app passes to
    # prepare(token:); the token of `tapemu pay`'s point of sale (tapemu-cli) acts on its sales.
    terminal = {}

    def pos_auth_token():
        answer = client.pos_auth_token.create(
            create_pos_auth_token_request=CreatePosAuthTokenRequest(point_of_sale_id="tapemu-cli", store_id="store-1"))
        if not str(answer.token).startswith("tpm_test_"):
            return f"pos_auth_token.create answered {answer}"
        status, doc = http_json("POST", gw.url + "/terminal/v1/tokens/validate", {"token": answer.token})
        if status != 200 or doc.get("result") != "valid" or doc.get("pointOfSaleId") != "tapemu-cli":
            return f"the token does not validate as tapemu-cli's: HTTP {status} {doc}"
        terminal["token"] = answer.token
        return None
    c.run("pos_auth_token.create: the API key gives a terminal's token for prepare(token:) (pointOfSaleId, storeId)",
          pos_auth_token)
    c.run("pos_auth_token.create with a wrong key is MONEI's 401 UnauthorizedError",
          lambda: expect_error(lambda: wrong.pos_auth_token.create(), 401, "UnauthorizedError"))

    # A CoreAPI reversal (the terminal's void) of a sale: MONEI shows it CANCELED.
    def reversal():
        # The sale's CoreAPI reference, from GraphQL (tapemu's uniqueRef field).
        _, found = http_json("POST", gw.url + "/graphql", {
            "query": 'query { charges(filter: {orderId: {eq: "sdk-reversed"}}) { items { uniqueRef } } }'}, key=gw.api_key)
        unique_ref = found["data"]["charges"]["items"][0]["uniqueRef"]
        status, doc = http_json("POST", gw.url + "/coreapi/v1/reversal",
                                {"uniqueRef": unique_ref, "deviceType": "tapemu"}, key="Bearer " + terminal["token"])
        if status != 200:
            return f"reversal HTTP {status}: {doc}"
        p = client.payments.get(reversed_sale["paymentId"])
        seen["status"].add(str(p.status))
        return expect(p, status="CANCELED")
    c.run("CoreAPI reversal of a terminal sale: payments.get says CANCELED", reversal)

    c.run("the statuses seen cover what tapemu serves",
          lambda: None if STATUS_SERVED <= seen["status"] else f"not seen: {sorted(STATUS_SERVED - seen['status'])}")

    # Webhooks: every kind delivered, verified by the SDK, parsed as its Payment.
    wanted = [
        ("approved", lambda d: d.get("orderId") == "sdk-approved" and d.get("event") == "approved"),
        ("declined", lambda d: d.get("orderId") == "sdk-declined" and d.get("event") == "declined"),
        ("partially refunded", lambda d: d.get("orderId") == "sdk-approved" and d.get("event") == "partiallyRefunded"),
        ("refunded", lambda d: d.get("orderId") == "sdk-approved" and d.get("event") == "refunded"),
        ("reversed", lambda d: d.get("orderId") == "sdk-reversed" and d.get("event") == "reversed"),
        ("authorized", lambda d: d.get("orderId") == "sdk-auth-capture" and d.get("event") == "authorized"),
        ("captured", lambda d: d.get("orderId") == "sdk-auth-capture" and d.get("event") == "captured"),
        ("canceled", lambda d: d.get("orderId") == "sdk-auth-cancel-0" and d.get("event") == "canceled"),
    ]
    expected_status = {"approved": "SUCCEEDED", "declined": "FAILED", "partially refunded": "PARTIALLY_REFUNDED",
                       "refunded": "REFUNDED", "reversed": "CANCELED", "authorized": "AUTHORIZED",
                       "captured": "SUCCEEDED", "canceled": "CANCELED"}
    for name, predicate in wanted:
        def one(name=name, predicate=predicate):
            got = receiver.wait_for(predicate)
            if got is None:
                return "not delivered within 60 s"
            sig, body, raw = got
            text = body.decode()
            missing = SERVED_ALWAYS - set(raw)
            if missing:
                return f"the webhook body lacks {sorted(missing)}"
            doc = client.verify_signature(text, sig)
            p = as_payment(client, body)
            problem = expect(p, status=expected_status[name])
            if problem:
                return problem
            if name == "declined" and str(p.status_code) != "E221":
                return f"statusCode {p.status_code}"
            if name == "refunded" and (str(p.last_refund_reason) != "duplicated" or p.last_refund_amount != 700):
                return f"lastRefundReason {p.last_refund_reason}, lastRefundAmount {p.last_refund_amount}"
            if name == "canceled" and str(p.cancellation_reason) not in PaymentCancellationReason.allowed_values[("value",)].values():
                return f"cancellationReason {p.cancellation_reason}"
            def refused(body, signature, what):
                """None when verify_signature refuses `body` under `signature` with 401, else what went wrong."""
                try:
                    client.verify_signature(body, signature)
                    return f"{what} verified"
                except ApiException as e:
                    return None if e.status == 401 else f"{what}: {e.status}"
            # One byte changed in the body: refused.
            i = text.index('"amount":') + len('"amount":')
            changed = text[:i] + ("9" if text[i] != "9" else "8") + text[i + 1:]
            if problem := refused(changed, sig, "a body changed in one byte"):
                return problem
            # The signature wrong in its last hex digit: refused.
            bad = sig[:-1] + ("0" if sig[-1] != "0" else "1")
            if problem := refused(text, bad, "a signature wrong in its last hex digit"):
                return problem
            return None if doc.get("id") == p.id else "verify_signature returned another body"
        c.run(f"webhook {name}: verify_signature accepts it, rejects one changed byte and a wrong last hex digit; "
              f"a {expected_status[name]} Payment", one)

    # The seed's GraphQL query (seed 000, "Unclear outcome", step 3).
    def graphql():
        query = 'query { charges(filter: {orderId: {eq: "sdk-approved"}}) { items { id status amount } } }'
        status, doc = http_json("POST", gw.url + "/graphql", {"query": query}, key=gw.api_key)
        items = doc.get("data", {}).get("charges", {}).get("items", [])
        if status != 200 or len(items) != 1:
            return f"HTTP {status}: {doc}"
        it = items[0]
        if it != {"id": approved["paymentId"], "status": "REFUNDED", "amount": 1000}:
            return f"items[0] = {it}"
        status, doc = http_json("POST", gw.url + "/graphql", {
            "query": 'query { charges(filter: {orderId: {eq: "sdk-declined"}}) { items { statusCode statusMessage } } }'},
            key=gw.api_key)
        it = doc.get("data", {}).get("charges", {}).get("items", [{}])[0]
        return None if it.get("statusCode") == "E221" else f"declined charge: {it}"
    c.run("GraphQL: the seed's charges(filter: {orderId: {eq: …}}) query; statusCode as E-codes", graphql)


if __name__ == "__main__":
    sys.exit(main())
