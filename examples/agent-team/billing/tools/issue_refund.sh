#!/bin/sh
# Reads {order, charge, amount} on stdin. Instead of moving money it writes
# the refund to an outbox folder ($REIN_OUTBOX, default: a folder under the
# system temp dir), one file per idempotency key (run/agent/1/turn2/call1),
# the key a real payment API would be given.
set -eu
in=$(cat)
outbox="${REIN_OUTBOX:-${TMPDIR:-/tmp}/rein-outbox}"
mkdir -p "$outbox"
name=$(printf '%s' "${REIN_IDEMPOTENCY_KEY:-manual}" | tr -c 'A-Za-z0-9._-' '_')
printf '%s\n' "$in" > "$outbox/$name.json"
amount=$(printf '%s' "$in" | sed -n 's/.*"amount"[[:space:]]*:[[:space:]]*\([0-9.eE+-]*\).*/\1/p')
printf '{"refunded": %s, "outbox": "%s"}\n' "$amount" "$outbox/$name.json"
