#!/bin/sh
# Reads {"city": "..."} on stdin and prints its weather.
LC_ALL=C; export LC_ALL
set -eu
city=$(sed -n 's/.*"city"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p')
echo "read_weather $city" >> calls.log
printf '{"city": "%s", "temperature_c": 18, "conditions": "cloudy"}\n' "$city"
