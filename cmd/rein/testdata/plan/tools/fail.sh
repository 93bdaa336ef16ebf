#!/bin/sh
# Always fails, like a weather source that is down.
LC_ALL=C; export LC_ALL
cat > /dev/null
echo "read_primary_weather" >> calls.log
echo "primary weather source: upstream 503" >&2
exit 3
