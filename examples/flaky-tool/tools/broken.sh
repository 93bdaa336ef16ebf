#!/bin/sh
# Any exit code other than 0 and 75 is a business error: not retried.
echo "service unavailable for this symbol" >&2
exit 3
