#!/bin/sh
# The check of send_refund: did the refund with this idempotency key
# happen? It reads {"args", "idempotency_key", "output_schema"} on stdin
# (the key is also in $REIN_IDEMPOTENCY_KEY) and answers on stdout
#   {"happened": true, "output": <what send_refund would have returned>}
#   {"happened": false}
# Any other exit means it cannot say, and a person decides.
set -eu
cat > /dev/null
ledger="${REIN_LEDGER:-${TMPDIR:-/tmp}/rein-refund-ledger}"
key="$REIN_IDEMPOTENCY_KEY"
if [ ! -e "$ledger" ]; then
  echo '{"happened": false}'
  exit 0
fi
line=$(awk -v k="$key" '$1 == k { print; exit }' "$ledger")
if [ -z "$line" ]; then
  echo '{"happened": false}'
  exit 0
fi
amount=$(printf '%s' "$line" | awk '{ print $3 }')
printf '{"happened": true, "output": {"refund_id": "%s", "amount": %s}}\n' "$key" "$amount"
