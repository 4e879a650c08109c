#!/usr/bin/env bash
# The daemon's memory stays bounded, whoever the reader is. On a daemon of
# its own, mounted with --allow-other --share-journal: a second uid (65534, via setpriv)
# polls `events` with a zero timeout for 10 s (growth < 10 MiB), then holds
# 1000 descriptors of a large `status.json` (2000 previews pending), each
# read one byte (growth < 50 MiB); after the 2000 previews are decided the
# daemon is back within twice its fresh size (mount-tests/memory.py). The
# journal is shared (--share-journal) so that uid 65534 may read `events`.
# A debug build renders that status.json 1000 times: about 45 s here.
# time limit: 120 s
. "$(dirname "$0")/lib.sh"
command -v setpriv >/dev/null || fail "setpriv is missing (apt-get install util-linux)"
start_own_daemon --allow-other --share-journal
python3 "$(dirname "$0")/memory.py" "$OWN_DIR" --daemon-pid "$OWN_PID" \
    --previews 2000 --opens 1000 --flood 10 || fail "memory grew beyond its bounds (see above)"
stop_own_daemon
