#!/bin/sh
# An exec tool: args arrive as JSON on stdin, the result leaves as JSON on
# stdout. Instead of sending mail it writes the message to an outbox folder
# ($REIN_OUTBOX, default: a folder under the system temp dir), one file per
# idempotency key (run/step/attempt), so the same call replayed with the same
# key overwrites its file instead of sending twice.
set -eu
outbox="${REIN_OUTBOX:-${TMPDIR:-/tmp}/rein-outbox}"
mkdir -p "$outbox"
name=$(printf '%s' "${REIN_IDEMPOTENCY_KEY:-manual}" | tr -c 'A-Za-z0-9._-' '_')
cat > "$outbox/$name.json"
printf '{"sent": true, "outbox": "%s"}\n' "$outbox/$name.json"
