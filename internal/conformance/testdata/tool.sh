#!/bin/sh
# tool.sh NAME [block]: every tool of the conformance suite. It appends
# "NAME KEY" to the ledger ($REIN_CONFORMANCE_LEDGER) first, so that each
# execution is counted outside rein, then answers by its args:
#   {"fail": N, "exit": C}  the first N calls with this key (its attempts:
#                           the key without its last segment) exit C
#                           (75 transient, anything else business; default 3)
#   {"sleep": S}            it sleeps S seconds before it answers
# With block, it waits while the file $REIN_CONFORMANCE_LEDGER.block exists
# (the process running it is to be killed). It answers
# {"tool": NAME, "n": <calls with this key>, "args": ARGS}.
set -eu
name=$1
led=${REIN_CONFORMANCE_LEDGER:?REIN_CONFORMANCE_LEDGER is not set}
args=$(cat)
key=${REIN_IDEMPOTENCY_KEY:-none}
echo "$name $key" >>"$led"
n=$(awk -v p="$name ${key%/*}/" 'index($0, p) == 1 { c++ } END { print c + 0 }' "$led")
fail=$(printf '%s' "$args" | sed -n 's/.*"fail":\([0-9][0-9]*\).*/\1/p')
code=$(printf '%s' "$args" | sed -n 's/.*"exit":\([0-9][0-9]*\).*/\1/p')
if [ -n "$fail" ] && [ "$n" -le "$fail" ]; then
  echo "$name: failure $n of $fail" >&2
  exit "${code:-3}"
fi
nap=$(printf '%s' "$args" | sed -n 's/.*"sleep":\([0-9][0-9]*\).*/\1/p')
if [ -n "$nap" ]; then
  sleep "$nap"
fi
if [ "${2:-}" = block ]; then
  while [ -e "$led.block" ]; do sleep 0.05; done
fi
printf '{"tool":"%s","n":%s,"args":%s}\n' "$name" "$n" "$args"
