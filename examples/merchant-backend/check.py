#!/usr/bin/env python3
"""Proves the scenario kit both ways: the reference backend passes every scenario of
`tapemu scenarios run`, and each mistaken variant fails exactly the scenarios its mistake should
fail (EXPECTED_FAILURES). Reads the JUnit file of each run with PyPI's junitparser.

python check.py --tapemu PATH [--gateway-serve] — exits 0 when every check holds, prints one line
per check and a closing line "scenario kit: N passed, 0 failed".
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

from junitparser import JUnitXml, Failure, Skipped

HERE = os.path.dirname(os.path.abspath(__file__))

# The scenarios each variant's one mistake must fail, and no other.
EXPECTED_FAILURES = {
    # outcomeUnknown taken as failed, charged again: wrong exactly where the unclear payment was charged.
    "unknown-as-failed": {"unknown-lost-answer-approved", "unknown-slow-answer", "unknown-lost-reader-session",
                          "unknown-lost-answer-approved+webhook-never-delivered", "unknown-lost-answer-approved+webhook-late"},
    # No webhook within the grace taken for not paid: wrong exactly where the charge's webhook is
    # late or never comes.
    "no-webhook-is-failed": {"approved+webhook-never-delivered", "unknown-lost-answer-approved+webhook-never-delivered",
                             "approved+webhook-late", "unknown-lost-answer-approved+webhook-late"},
    # A webhook taken unverified: the forged and the replayed SUCCEEDED make unpaid orders paid.
    "no-signature-check": {"unknown-no-answer+webhook-forged", "declined-insufficient-funds+webhook-forged",
                           "unknown-no-answer+webhook-stale", "declined-insufficient-funds+webhook-stale"},
    # The signature checked, its age not: only the replayed one gets through.
    "no-stale-check": {"unknown-no-answer+webhook-stale", "declined-insufficient-funds+webhook-stale"},
    # A duplicate counted: the amount is wrong where a webhook came twice.
    "not-idempotent": {"approved+webhook-duplicated"},
    # No step 3: a charge whose webhook never came stays pending; and a CoreAPI sale (no webhook)
    # is never looked up, so every one the app did not report failed stays pending.
    "no-recovery-job": {"approved+webhook-never-delivered", "unknown-lost-answer-approved+webhook-never-delivered",
                        "coreapi-approved", "coreapi-comm-error-no-answer", "coreapi-comm-error-lost-answer-approved",
                        "coreapi-comm-error-lost-answer-declined", "coreapi-comm-error-torn-card",
                        "coreapi-comm-error-other-card", "coreapi-comm-error-other-amount",
                        # ... and no step 4 either: pending after support's settle window.
                        "unknown-no-answer", "unknown-server-error", "unknown-card-read-error", "unknown-pin-entry-error",
                        "unknown-cancelled-task", "unknown-no-answer+webhook-forged", "unknown-no-answer+webhook-stale"},
    # Step 3 without step 4: an outcomeUnknown with nothing in the ledger stays pending after
    # support's settle window has passed (support would say that no payment was received).
    "no-support-ask": {"unknown-no-answer", "unknown-server-error", "unknown-card-read-error", "unknown-pin-entry-error",
                        "unknown-cancelled-task", "unknown-no-answer+webhook-forged", "unknown-no-answer+webhook-stale"},
    # Seed 002's code without 003's check: the order's earlier sale (another card, another amount) is reversed.
    "reverse-without-check": {"coreapi-comm-error-other-card", "coreapi-comm-error-other-amount"},
    # Each of 003's two checks on its own: without one, the other does not catch its case.
    "no-amount-check": {"coreapi-comm-error-other-amount"},
    "no-suffix-check": {"coreapi-comm-error-other-card"},
    # The last webhook received taken for the payment's state: wrong exactly where a payment's
    # webhooks arrive out of order (the sale's SUCCEEDED after its refund's REFUNDED).
    "last-webhook-wins": {"approved-then-refunded+webhook-out-of-order"},
}


# Where a variant's mistake may show beyond its scenarios on a loaded machine, and how the failure
# must read to count as that mistake: webhooks come at least once, and the gateway delivers one
# again when the backend answered it after the delivery's timeout — a genuine duplicate, which
# not-idempotent counts twice like the relay's.
ALSO_CAUGHT = {
    "not-idempotent": re.compile(r"the backend says paid (\d+), the charge is (\d+)"),
}


def also_caught(mistake, message):
    pattern = ALSO_CAUGHT.get(mistake)
    m = pattern.search(message or "") if pattern else None
    return bool(m) and int(m.group(1)) > int(m.group(2)) and int(m.group(1)) % int(m.group(2)) == 0


def start_backend(workdir, mistake=None, gateway=None, api_key=None):
    # no-webhook-is-failed takes no webhook within the grace for not paid: its grace stays under
    # the late webhook's 3 s, and long enough that a loaded machine's on-time webhooks make it.
    grace = "2" if mistake == "no-webhook-is-failed" else "0.5"
    args = [sys.executable, os.path.join(HERE, "backend.py"), "--listen", "127.0.0.1:0",
            "--db", os.path.join(workdir, f"orders-{mistake or 'reference'}{'-served' if gateway else ''}.sqlite"), "--grace", grace]
    if gateway:
        args += ["--gateway", gateway, "--api-key", api_key]
    if mistake:
        args += ["--mistake", mistake]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = proc.stdout.readline()
    if not line.startswith("listening on "):
        proc.kill()
        raise RuntimeError(f"backend did not start: {line}")
    return proc, line.split()[2]


def run_scenarios(tapemu, workdir, url, label, extra):
    junit = os.path.join(workdir, f"{label}.xml")
    out = subprocess.run([tapemu, "scenarios", "run", "--callback-url", url + "/webhooks/monei",
                          "--backend-check", url, "--junit", junit, "--settle", "6s", "--json"] + extra,
                         capture_output=True, text=True, timeout=600)
    return out, junit


def read_junit(path):
    """{name: "passed" | "failed" | "skipped"} from the JUnit file, as a CI consumer reads it."""
    results, messages = {}, {}
    for suite in JUnitXml.fromfile(path):
        for case in suite:
            kinds = {type(r) for r in case.result}
            results[case.name] = "failed" if Failure in kinds else "skipped" if Skipped in kinds else "passed"
            messages[case.name] = next((r.message for r in case.result if isinstance(r, Failure)), None)
    return results, messages


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tapemu", required=True)
    p.add_argument("--extra", default="", help="more arguments for scenarios run, space-separated")
    args = p.parse_args()
    extra = args.extra.split()
    listed = json.loads(subprocess.run([args.tapemu, "scenarios", "list", "--json"], capture_output=True, text=True,
                                       check=True).stdout)
    names = {s["name"] for s in listed}
    passed = failed = 0

    def check(label, problem):
        nonlocal passed, failed
        if problem:
            failed += 1
            print(f"FAIL {label}: {problem}", flush=True)
        else:
            passed += 1
            print(f"ok   {label}", flush=True)

    with tempfile.TemporaryDirectory() as workdir:
        for mistake in [None] + sorted(EXPECTED_FAILURES):
            label = mistake or "reference"
            proc, url = start_backend(workdir, mistake)
            try:
                out, junit = run_scenarios(args.tapemu, workdir, url, label, extra)
            finally:
                proc.kill()
                proc.wait()
            if not os.path.exists(junit):
                check(label, f"no JUnit file (exit {out.returncode}): {out.stderr[-2000:]}")
                continue
            results, messages = read_junit(junit)
            failing = {n for n, r in results.items() if r == "failed"}
            expected = EXPECTED_FAILURES.get(mistake, set())
            also = {n for n in failing - expected if also_caught(mistake, messages.get(n))}
            if also:
                print(f"     {label}: also caught where the gateway delivered a webhook again: {sorted(also)}", flush=True)
            failing -= also
            problems = []
            if set(results) != names:
                problems.append(f"the JUnit file has {sorted(set(results) ^ names)} unlike the catalogue")
            if failing != expected:
                problems.append(f"failed {sorted(failing)}, expected {sorted(expected)}")
            if out.returncode != (1 if expected else 0):
                problems.append(f"exit {out.returncode}")
            if problems:
                problems.append(out.stdout[-4000:] + out.stderr[-2000:])
            check(f"{label}: fails exactly {sorted(expected) or 'nothing'}", "; ".join(problems))
        # Over `tapemu gateway serve --test-controls`: the backend configured with its URL and API
        # key, the run with --gateway; every scenario is played (the test controls make the expired
        # token, the account whose terms are not accepted and the blocked SDK version).
        serve = subprocess.Popen([args.tapemu, "gateway", "serve", "--listen", "127.0.0.1:0", "--data-dir",
                                  os.path.join(workdir, "served-gateway"), "--support-settle-window", "3s",
                                  "--test-controls"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            gateway = api_key = None
            for line in serve.stdout:
                if line.startswith("tapemu gateway listening on "):
                    gateway = line.split()[4]
                if line.startswith("merchant API key: "):
                    api_key = line.split()[3]
                if gateway and api_key:
                    break
            proc, url = start_backend(workdir, None, gateway, api_key)
            try:
                out, junit = run_scenarios(args.tapemu, workdir, url, "served", extra + [
                    "--gateway", gateway, "--api-key", api_key, "--support-window", "3s"])
            finally:
                proc.kill()
                proc.wait()
        finally:
            serve.terminate()
            serve.wait()
        with_controls = {s["name"] for s in listed if s["needsTestControls"]}
        problems = []
        if not os.path.exists(junit):
            problems.append(f"no JUnit file (exit {out.returncode}): {out.stderr[-2000:]}")
        else:
            results, _ = read_junit(junit)
            failing = sorted(n for n, r in results.items() if r == "failed")
            skipped = {n for n, r in results.items() if r == "skipped"}
            if failing or skipped or set(results) != names or out.returncode != 0:
                problems.append(f"failed {failing}, skipped {sorted(skipped)}, exit {out.returncode}: {out.stdout[-3000:]}")
        check(f"served (gateway serve --test-controls): reference passes every scenario, {sorted(with_controls)} too",
              "; ".join(problems))
        # A small load run: 3 terminals at once, each playing four scenarios twice; every payment graded.
        load = ["approved", "unknown-lost-answer-approved", "approved+webhook-duplicated", "unknown-no-answer"]
        proc, url = start_backend(workdir, None)
        try:
            out, junit = run_scenarios(args.tapemu, workdir, url, "load", extra + ["--terminals", "3", "--repeat", "2"] + load)
        finally:
            proc.kill()
            proc.wait()
        problems = []
        if not os.path.exists(junit):
            problems.append(f"no JUnit file (exit {out.returncode}): {out.stderr[-2000:]}")
        else:
            cases = [(case.name, case.result) for suite in JUnitXml.fromfile(junit) for case in suite]
            if len(cases) != 3 * 2 * len(load) or any(r for _, r in cases) or out.returncode != 0:
                problems.append(f"{len(cases)} cases, failing {[n for n, r in cases if r]}, exit {out.returncode}: {out.stdout[-3000:]}")
        check("load: --terminals 3 --repeat 2, every payment graded and passed", "; ".join(problems))
    print(f"scenario kit: {passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
