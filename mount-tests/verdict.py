"""The end of mount-tests/memory.py and mount-tests/stress.py: each problem
found on stderr, then the one verdict line on stdout."""

import sys


def verdict(check, problems):
    """Prints `check: FAIL: problem` for each problem and `check: ok` (or
    `check: FAIL`); returns the exit status, 1 when there were problems."""
    for problem in problems:
        print(f"{check}: FAIL: {problem}", file=sys.stderr)
    print(f"{check}: {'FAIL' if problems else 'ok'}", flush=True)
    return 1 if problems else 0
