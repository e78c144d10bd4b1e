#!/usr/bin/env bash
# A stand-in for ssh in tests: `fake_rsh.sh HOST COMMAND` runs COMMAND here.
shift
exec bash -c "$*"
