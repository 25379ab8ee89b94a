#!/bin/sh
# make run: start keepd in the foreground on the development config.
B=${1:-build}
exec "$B/bin/keepd" -d -f etc/keepd.dev.yaml
