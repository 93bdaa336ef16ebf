#!/bin/sh
# check.sh NAME: the check: of tool NAME (tool.sh). Did its call with this
# idempotency key take effect? It reads the check request on stdin (the
# key is also in $REIN_IDEMPOTENCY_KEY) and answers from the ledger, which
# it never writes: {"happened": true, "output": {"tool": NAME, "checked":
# KEY}} when the ledger holds "NAME KEY", else {"happened": false}.
set -eu
name=$1
led=${REIN_CONFORMANCE_LEDGER:?REIN_CONFORMANCE_LEDGER is not set}
key=${REIN_IDEMPOTENCY_KEY:?REIN_IDEMPOTENCY_KEY is not set}
cat >/dev/null
if [ -e "$led" ] && grep -qxF "$name $key" "$led"; then
  printf '{"happened":true,"output":{"tool":"%s","checked":"%s"}}\n' "$name" "$key"
else
  echo '{"happened":false}'
fi
