#!/usr/bin/env bash
# (d) propose outside plan mode fails with EPERM and the exact text
# `no-plan` of expected-texts, which names this mount's propose file.
. "$(dirname "$0")/lib.sh"

assert_refused propose EPERM "Operation not permitted" "$NO_PLAN"
note "EPERM, last: $NO_PLAN"
