#!/usr/bin/env python3
"""Concurrent writers against an async producer, with a watchdog.

Stages WRITERS x WRITES previews through DIR/stage from one producer that
answers every apply at once (epoll over all its stage descriptors), then
runs WRITERS shells that each do `echo ... > DIR/resolve` WRITES times,
while a `stat` loop of missing names and a `cat status` loop run alongside.

Checks: every write succeeded, every preview was applied exactly once,
nothing is left pending, and the journal (DIR/log, or --journal FILE) holds
one successful `resolve` per write with distinct ids. A watchdog fails the
run, instead of hanging, when no apply happens for --stall seconds: it
prints where every process waits, then aborts the FUSE connection so that
nothing stays stuck.

Prints the figures (one `stress:` line each) and exits 0 on success.
"""

import argparse
import json
import multiprocessing
import os
import queue
import resource
import select
import subprocess
import sys
import time

from verdict import verdict


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", help="the xdev mount")
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--writes", type=int, default=2000, help="per writer")
    parser.add_argument(
        "--sigchld-writers", type=int, default=2,
        help="of the writers, how many start a background job before each write, so that "
        "SIGCHLD (which bash handles) keeps arriving while their writes wait",
    )
    parser.add_argument("--stall", type=float, default=5.0, help="seconds without progress that fail the run")
    parser.add_argument("--journal", help="the daemon's --journal file (else DIR/log is checked)")
    parser.add_argument("--daemon-pid", type=int, help="report this process's memory")
    parser.add_argument("--ls-limit", type=float, help="fail if `ls -l pending` takes longer (seconds)")
    return parser.parse_args()


def say(name, value):
    print(f"stress: {name}: {value}", flush=True)


def rss_kib(pid):
    if not pid:
        return None
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


class Producer:
    """One stage descriptor per preview; answers each apply at once. Runs in
    a process of its own (a process may hold only so many descriptors)."""

    def __init__(self, mount, first, count, staged, applied):
        self.mount = mount
        self.first = first
        self.count = count
        self.poller = select.epoll()
        self.files = {}  # fd -> [id, unread bytes]
        self.staged = staged  # shared counters
        self.applied = applied
        self.applies = {}  # id -> how many applies it was asked for
        self.errors = []

    def stage_all(self):
        stage = os.path.join(self.mount, "stage")
        for index in range(self.first, self.first + self.count):
            fd = os.open(stage, os.O_RDWR | os.O_CLOEXEC)
            request = {"label": f"stress preview {index}", "sourceTool": "stress"}
            os.write(fd, json.dumps(request).encode() + b"\n")
            self.files[fd] = [None, b""]
            self.poller.register(fd, select.EPOLLIN)

    def run(self, report):
        try:
            self.stage_all()
            while self.files:
                for fd, _ in self.poller.poll(1.0):
                    self.serve(fd)
        except Exception as error:  # reported by the main process
            self.errors.append(repr(error))
        twice = sum(1 for count in self.applies.values() if count != 1)
        report.put((len(self.applies), twice, self.errors))

    def serve(self, fd):
        chunk = os.read(fd, 65536)
        if not chunk:
            self.poller.unregister(fd)
            os.close(fd)
            del self.files[fd]
            return
        entry = self.files[fd]
        entry[1] += chunk
        while b"\n" in entry[1]:
            line, entry[1] = entry[1].split(b"\n", 1)
            self.handle(fd, entry, json.loads(line))

    def handle(self, fd, entry, message):
        event = message["event"]
        if event == "staged":
            entry[0] = message["id"]
            with self.staged.get_lock():
                self.staged.value += 1
        elif event == "apply":
            os.write(fd, b'{"ok": true, "text": "applied"}\n')
            self.applies[entry[0]] = self.applies.get(entry[0], 0) + 1
            with self.applied.get_lock():
                self.applied.value += 1
        else:
            self.errors.append(f"unexpected message for {entry[0]}: {message}")


def produce(mount, first, count, staged, applied, report):
    Producer(mount, first, count, staged, applied).run(report)


class Producers:
    """Enough producer processes to hold one descriptor per preview."""

    def __init__(self, mount, total):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        share = max(1, hard - 1024)
        self.staged = multiprocessing.Value("l", 0)
        self.applied = multiprocessing.Value("l", 0)
        self.report = multiprocessing.Queue()
        self.processes = []
        for first in range(0, total, share):
            count = min(share, total - first)
            arguments = (mount, first, count, self.staged, self.applied, self.report)
            self.processes.append(multiprocessing.Process(target=produce, args=arguments, daemon=True))
        for process in self.processes:
            process.start()

    def alive(self):
        return any(process.is_alive() for process in self.processes)

    def summary(self, timeout):
        """(previews applied, previews applied other than once, errors)."""
        previews, twice, errors = 0, 0, []
        for _ in self.processes:
            try:
                one = self.report.get(timeout=timeout)
            except queue.Empty:
                errors.append("a producer did not finish")
                continue
            previews, twice, errors = previews + one[0], twice + one[1], errors + one[2]
        return previews, twice, errors


def time_listing(args, total):
    """Times `ls` and `ls -l` of pending/ with every preview staged."""
    problems = []
    pending = os.path.join(args.dir, "pending")
    for command in (["ls", "-U", pending], ["ls", "-l", pending]):
        started = time.monotonic()
        listed = subprocess.run(command, capture_output=True, text=True, check=False)
        took = time.monotonic() - started
        entries = len([line for line in listed.stdout.splitlines() if line.startswith(("pending-action:", "d"))])
        say(" ".join(command[:-1]) + " pending", f"{entries} entries in {took:.3f} s")
        if listed.returncode != 0 or entries != total:
            problems.append(f"{' '.join(command)} listed {entries} of {total}: {listed.stderr.strip()[:200]}")
        if command[1] == "-l" and args.ls_limit and took > args.ls_limit:
            problems.append(f"ls -l pending took {took:.3f} s for {total} entries (limit {args.ls_limit} s)")
    return problems


def spawn(script, **kwargs):
    return subprocess.Popen(["bash", "-c", script], **kwargs)


def writer_script(mount, writes, sigchld=False):
    """A bash loop of `echo > resolve`; with `sigchld`, each write starts a
    background job that ends while the write may still wait: a handled
    signal must never fail a write (the decision went ahead)."""
    job = "sleep 0.00$((RANDOM % 3)) & " if sigchld else ""
    return (
        f'ok=0; failed=0; for i in $(seq {writes}); do {job}'
        f'if echo "stress write $i" > "{mount}/resolve"; then ok=$((ok+1)); else failed=$((failed+1)); fi; '
        f'done; wait; echo "$ok $failed"'
    )


def fuse_connection(mount):
    return os.minor(os.stat(mount).st_dev) if os.path.ismount(mount) else None


def where_everyone_waits(pids):
    for pid in pids:
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/comm") as comm, open(f"/proc/{pid}/task/{tid}/wchan") as wchan:
                    print(f"stress: waits: {pid}/{tid} {comm.read().strip()} in {wchan.read().strip()}", file=sys.stderr)
        except OSError:
            pass


def abort_connection(connection):
    """Ends every request of the mount at once, so nothing stays stuck."""
    if connection is None:
        return
    if not os.path.exists("/sys/fs/fuse/connections/" + str(connection)):
        subprocess.run(["mount", "-t", "fusectl", "none", "/sys/fs/fuse/connections"], check=False)
    try:
        with open(f"/sys/fs/fuse/connections/{connection}/abort", "w") as abort:
            abort.write("1")
        print(f"stress: aborted FUSE connection {connection}", file=sys.stderr)
    except OSError as error:
        print(f"stress: could not abort FUSE connection {connection}: {error}", file=sys.stderr)


def watch(producer, processes, stall, daemon_pid, connection):
    """Waits for the writers; fails the run when applies stop coming."""
    last, since = -1, time.monotonic()
    while any(process.poll() is None for process in processes):
        # Often enough that the run's time is not rounded to the poll.
        time.sleep(0.01)
        applied = producer.applied.value
        if applied != last:
            last, since = applied, time.monotonic()
        elif time.monotonic() - since > stall:
            print(f"stress: FAIL: no progress for {stall} s at {applied} applies", file=sys.stderr)
            pids = [process.pid for process in processes] + ([daemon_pid] if daemon_pid else [])
            where_everyone_waits(pids)
            abort_connection(connection)
            for process in processes:
                process.kill()
            return False
    return True


def journal_path(args):
    return args.journal or os.path.join(args.dir, "log")


def journal_lines(args, start):
    """The journal's lines from byte `start` on (this run's records)."""
    with open(journal_path(args), "rb") as journal:
        journal.seek(start)
        return journal.read().splitlines()


def check(args, producer, writer_results, journal_start):
    total = args.writers * args.writes
    problems = []
    ok = sum(result[0] for result in writer_results)
    failed = sum(result[1] for result in writer_results)
    say("writes ok/failed", f"{ok}/{failed}")
    if ok != total or failed:
        problems.append(f"{failed} writes failed, {ok} of {total} succeeded")
    previews, twice, errors = producer.summary(timeout=30)
    applied = producer.applied.value
    say("applies", f"{applied} for {total} writes; previews applied other than once: {twice}")
    if applied != total or twice or previews != total:
        problems.append(f"{applied} applies over {previews} previews, {twice} applied other than once")
    with open(os.path.join(args.dir, "status.json")) as status:
        pending = json.load(status)["pending"]
    if pending:
        problems.append(f"{pending} previews still pending")
    resolved = set()
    for line in journal_lines(args, journal_start):
        record = json.loads(line)
        if record.get("event") == "resolve" and record.get("outcome") == "ok" and record.get("sourceTool") == "stress":
            resolved.add(record["id"])
    say("journal", f"{len(resolved)} distinct previews resolved ok")
    if len(resolved) != total:
        problems.append(f"the journal has {len(resolved)} successful resolves for {total} writes")
    if errors:
        problems.append("producer: " + "; ".join(errors[:3]))
    return problems


def main():
    args = parse_args()
    total = args.writers * args.writes
    connection = fuse_connection(args.dir)
    journal_start = os.path.getsize(journal_path(args))
    say("daemon RSS before staging (KiB)", rss_kib(args.daemon_pid))

    started = time.monotonic()
    producer = Producers(args.dir, total)
    while producer.staged.value < total:
        if time.monotonic() - started > 120 or not producer.alive():
            print(f"stress: FAIL: only {producer.staged.value} of {total} staged", file=sys.stderr)
            return 1
        time.sleep(0.05)
    say("staged", f"{total} previews in {time.monotonic() - started:.2f} s")
    say("daemon RSS with all staged (KiB)", rss_kib(args.daemon_pid))
    listing_problems = time_listing(args, total)

    devnull = subprocess.DEVNULL
    noise = [
        spawn(f'while :; do stat "{args.dir}/missing-$RANDOM" >/dev/null 2>&1; done', stdout=devnull, stderr=devnull),
        spawn(f'while :; do cat "{args.dir}/status" >/dev/null; done', stdout=devnull, stderr=devnull),
    ]
    started = time.monotonic()
    writers = [
        spawn(
            writer_script(args.dir, args.writes, sigchld=index < args.sigchld_writers),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for index in range(args.writers)
    ]
    finished = watch(producer, writers, args.stall, args.daemon_pid, connection)
    elapsed = time.monotonic() - started
    for process in noise:
        process.kill()
        process.wait()
    if not finished:
        return 1
    results = []
    for process in writers:
        out, err = process.communicate()
        fields = out.split()
        results.append((int(fields[0]), int(fields[1])) if len(fields) == 2 else (0, args.writes))
        for line in err.splitlines()[:3]:
            print(f"stress: writer said: {line}", file=sys.stderr)
    say("run", f"{args.writers} writers x {args.writes} writes in {elapsed:.2f} s")
    sigchld = results[: args.sigchld_writers]
    say("writers taking SIGCHLD ok/failed", f"{sum(r[0] for r in sigchld)}/{sum(r[1] for r in sigchld)}")
    say("throughput (writes/s)", f"{total / elapsed:.0f}")
    problems = listing_problems + check(args, producer, results, journal_start)
    time.sleep(2.5)  # the daemon gives memory back once a burst is over
    say("daemon RSS after deciding (KiB)", rss_kib(args.daemon_pid))
    return verdict("stress", problems)


if __name__ == "__main__":
    sys.exit(main())
