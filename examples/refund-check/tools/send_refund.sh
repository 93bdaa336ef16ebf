#!/bin/sh
# Reads {order, amount} on stdin and "sends" the refund: appends
# "<idempotency key> <order> <amount>" to the ledger ($REIN_LEDGER, default
# under the system temp dir). It does not deduplicate: the ledger shows
# every refund made. With $REFUND_HOLD set (a test's file), it writes that
# file once the refund is in the ledger and hangs, so that rein can be
# killed between the effect and its record.
set -eu
in=$(cat)
ledger="${REIN_LEDGER:-${TMPDIR:-/tmp}/rein-refund-ledger}"
key="${REIN_IDEMPOTENCY_KEY:-manual}"
order=$(printf '%s' "$in" | sed -n 's/.*"order"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p')
amount=$(printf '%s' "$in" | sed -n 's/.*"amount"[[:space:]]*:[[:space:]]*\([0-9.eE+-]*\).*/\1/p')
printf '%s %s %s\n' "$key" "$order" "$amount" >> "$ledger"
if [ -n "${REFUND_HOLD:-}" ]; then
  echo sent > "$REFUND_HOLD"
  exec sleep 600
fi
printf '{"refund_id": "%s", "amount": %s}\n' "$key" "$amount"
