#!/usr/bin/env python3
"""Times the commands of a recorded tapemu trace sent through a third-party PC/SC stack.

Used by pyscard-compare.sh. Stacks:
  pyscard  pyscard's high-level CardConnection.transmit (what pyscard users write)
  emv      python-emv's TransmissionProtocol.exchange (61xx/6Cxx handling and its TLV decoding
           of every answer) over a pyscard connection

Prints one JSON document: per exchange kind the median time, the median time of a whole read
(all the trace's commands in order) and of one exchange, in microseconds.
"""
import argparse
import json
import statistics
import sys
import time

KINDS = {0xA4: "SELECT", 0xA8: "GPO", 0xB2: "READ RECORD", 0xAE: "GENERATE AC", 0xC0: "GET RESPONSE"}


def commands_of(trace_path):
    """The command APDUs of a tapemu-apdu-trace/1 file, in order."""
    out = []
    with open(trace_path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[1] == ">":
                out.append(list(bytes.fromhex("".join(parts[2:]))))
    return out


def connect(reader_name):
    from smartcard.System import readers
    from smartcard.CardConnection import CardConnection

    matches = [r for r in readers() if str(r) == reader_name]
    if not matches:
        sys.exit(f"pyscard_read: no reader named {reader_name!r} (readers: {[str(r) for r in readers()]})")
    connection = matches[0].createConnection()
    connection.connect(CardConnection.T1_protocol)
    return connection


def make_sender(stack, connection):
    if stack == "pyscard":
        def send(apdu):
            data, sw1, sw2 = connection.transmit(apdu)
            return len(data)
        return send
    # python-emv: its transport assumes contact T=0 and connects itself; reuse its exchange()
    # (GET RESPONSE / resend handling, TLV decoding of the answer) on our T=1 connection.
    from emv.transmission import TransmissionProtocol
    from emv.protocol.response import ErrorResponse, WarningResponse

    tp = TransmissionProtocol.__new__(TransmissionProtocol)
    import logging
    tp.log = logging.getLogger("emv.transmission")
    tp.connection = connection

    class Raw:
        def __init__(self, apdu):
            self.apdu = apdu

        def marshal(self):
            return list(self.apdu)

    def send(apdu):
        try:
            response = tp.exchange(Raw(apdu))
            return len(getattr(response, "data", {}) or {})
        except (ErrorResponse, WarningResponse):
            return 0
    return send


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reader", required=True)
    p.add_argument("--trace", required=True)
    p.add_argument("--reads", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--stack", choices=["pyscard", "emv"], default="pyscard")
    a = p.parse_args()

    commands = commands_of(a.trace)
    if not commands:
        sys.exit(f"pyscard_read: no commands in {a.trace}")
    connection = connect(a.reader)
    send = make_sender(a.stack, connection)
    per_kind = {}
    per_exchange = []
    per_read = []
    checksum = 0
    for i in range(a.warmup + a.reads):
        read_start = time.perf_counter_ns()
        times = []
        for apdu in commands:
            start = time.perf_counter_ns()
            checksum += send(apdu)
            times.append((apdu[1], time.perf_counter_ns() - start))
        read_time = time.perf_counter_ns() - read_start
        if i >= a.warmup:
            per_read.append(read_time)
            for ins, t in times:
                per_kind.setdefault(KINDS.get(ins, "other"), []).append(t)
                per_exchange.append(t)
    connection.disconnect()
    print(json.dumps({
        "stack": a.stack,
        "reads": a.reads,
        "exchangesPerRead": len(commands),
        "readP50Micros": statistics.median_low(per_read) / 1000,
        "exchangeP50Micros": statistics.median_low(per_exchange) / 1000,
        "kinds": {k: statistics.median_low(v) / 1000 for k, v in per_kind.items()},
        "checksum": checksum,
    }))


if __name__ == "__main__":
    main()
