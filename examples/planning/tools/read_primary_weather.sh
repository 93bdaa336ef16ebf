#!/bin/sh
# The primary weather service. In this example it is down: it answers like
# an upstream outage (exit 75 is rein's "transient" exit code).
set -eu
export LC_ALL=C
cat >/dev/null
echo "primary weather service unavailable: upstream 503" >&2
exit 75
