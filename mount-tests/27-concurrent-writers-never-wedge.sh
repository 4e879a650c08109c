#!/usr/bin/env bash
# Concurrent writers never wedge the mount. On a daemon of its own: 8 shells
# each run `echo ... > resolve` 150 times against 1200 previews of an async
# producer (one epoll loop over its stage descriptors, answering each apply at
# once), while a `stat` loop of missing names and a `cat status` loop run
# alongside. Every write succeeds, every preview is applied exactly once, the
# journal agrees, and a watchdog fails the scenario (instead of hanging) if
# no apply happens for 5 s. `scripts/stress.sh` runs the full size.
. "$(dirname "$0")/lib.sh"
start_own_daemon
python3 "$(dirname "$0")/stress.py" "$OWN_DIR" --writers 8 --writes 150 --stall 5 \
    --daemon-pid "$OWN_PID" --ls-limit 2 || fail "the stress run failed (see its output above)"
stop_own_daemon
