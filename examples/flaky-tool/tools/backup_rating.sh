#!/bin/sh
cat >/dev/null
echo '{"rating": "hold", "source": "backup"}'
