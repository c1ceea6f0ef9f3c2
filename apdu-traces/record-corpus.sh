#!/bin/sh
# Records the corpus through the real PC/SC path: each virtual card is served into a vpcd reader
# slot by `tapemu emulate` and read by `tapemu read --reader … --record …` through pcscd and the
# PC/SC channel. Traces recorded from a reader are redacted by default.
#
#   TAPEMU=path/to/tapemu OUT=apdu-traces apdu-traces/record-corpus.sh [NAME…]
#
# With names, records only those traces (the others stay as they are).
# Needs pcscd with vsmartcard-vpcd; uses slot 1 (Virtual PCD 00 01, port 35964).
# `--remove-after n` tears the card away when command n+1 arrives.
set -eu
TAPEMU=${TAPEMU:-tapemu}
OUT=${OUT:-$(dirname "$0")}
SLOT=1
READER="Virtual PCD 00 01"

ONLY=" $* "

record() {   # record NAME PROFILE REMOVE_AFTER|- [read options…]
  name=$1; profile=$2; remove=$3; shift 3
  if [ "$ONLY" != "  " ] && [ "${ONLY#* $name }" = "$ONLY" ]; then return 0; fi
  if [ "$remove" = "-" ]; then
    "$TAPEMU" emulate --card "$profile" --slot $SLOT >/dev/null 2>&1 &
  else
    "$TAPEMU" emulate --card "$profile" --slot $SLOT --remove-after "$remove" >/dev/null 2>&1 &
  fi
  pid=$!
  sleep 1
  "$TAPEMU" read --reader "$READER" --wait 10s --record "$OUT/$name.apdu" "$@" >/dev/null 2>&1 || true
  kill $pid 2>/dev/null || true
  wait $pid 2>/dev/null || true
  sleep 1   # pcscd polls the slot every ~400 ms: let it see the slot empty
  echo "$name: $(grep '^@outcome' "$OUT/$name.apdu" | cut -d' ' -f2-)"
}

record visa-qvsdc          visa-qvsdc       -
record mastercard-mchip    mastercard-mchip -
record amex                amex             -
record two-apps            two-apps         -
record no-ppse             no-ppse          -
record chained-61xx-6cxx   chained          -
record offline-decline     offline-decline  -
record slow-card           slow             -
record visa-online-pin     visa-online-pin  - --amount 6000
record visa-cdcvm          visa-cdcvm       - --amount 6000
record torn-profile        torn             -
record timeout-mute-gpo    mute             - --apdu-timeout 1s
record tear-at-ppse        mastercard-mchip 0
record tear-at-select-aid  mastercard-mchip 1
record tear-at-gpo         mastercard-mchip 2
record tear-at-read-record mastercard-mchip 4
record tear-at-generate-ac mastercard-mchip 6
record mastercard-cvm-list-under-limit mastercard-cvm-list - --amount 4999
record mastercard-cvm-list-over-limit  mastercard-cvm-list - --amount 5001
record girocard-no-cvm      girocard         - --amount 1000
record girocard-online-pin  girocard         - --amount 6000
record maestro              maestro          - --amount 6000
record jcb                  jcb              - --amount 6000
record unionpay             unionpay         - --amount 6000
record no-ppse-partial      no-ppse-partial  -
