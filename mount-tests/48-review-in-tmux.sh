#!/usr/bin/env bash
# `xdev review` as a person runs it: in a terminal (tmux, 80x24) against a
# mount where `xdev hook` staged three Claude Code PreToolUse calls of two
# agent sessions (a Write over an existing file, an Edit, and a Bash whose
# command is 3 KiB of lines). Keys go in with `tmux send-keys`, the screen
# comes back with `capture-pane -p`, and every step waits on what the
# screen (or the journal) shows. Checks: the Bash command is shown whole
# with its cwd (scrolling through it shows every line), the Edit's and the
# Write's diffs are the real changes (hunk headers, - and + lines), the
# chosen item is applied and the other rejected with the reason typed (the
# journal says so, and each hook prints its agent's answer), a preview
# staged while the review is open appears, two marked items are rejected
# together, `q` leaves the terminal as it was (the alternate screen off,
# the shell prompt back, exit 0); then, with NO_COLOR, no style reaches the
# screen, a preview decided from a shell leaves the list (the trail names
# the shell), SIGTERM and SIGINT restore the terminal too (exit 143 and
# 130; after SIGINT `stty -a` shows icanon and echo on), `--bell` rings
# the terminal's bell when a preview arrives (tmux's bell flag of its
# window), and a terminal that hangs up ends the review.
# time limit: 120 s
. "$(dirname "$0")/lib.sh"
need_xdev
scratch
command -v tmux >/dev/null 2>&1 || fail "tmux is missing (scripts/setup.sh installs it)"

# --- three calls of two sessions, staged through the hook --------------------
printf 'first line\nsecond line\n' >"$SCRATCH/notes.txt"
"$PYTHON" - "$SCRATCH" <<'PY'
import json, sys
scratch = sys.argv[1]
def event(name, session, tool, tool_input, n):
    with open(f"{scratch}/{name}.json", "w") as f:
        json.dump({"session_id": session, "transcript_path": f"/tmp/{session}.jsonl",
                   "cwd": scratch, "permission_mode": "default",
                   "hook_event_name": "PreToolUse", "tool_name": tool,
                   "tool_input": tool_input, "tool_use_id": f"toolu_{n:02d}"}, f)
event("write", "sess-one", "Write",
      {"file_path": f"{scratch}/notes.txt", "content": "first line\nreplaced second line\n"}, 1)
event("edit", "sess-one", "Edit",
      {"file_path": f"{scratch}/notes.txt", "old_string": "first line", "new_string": "the first line"}, 2)
command = "\n".join(f"echo step-{i:03d} ok" for i in range(200))
assert len(command) >= 3 * 1024, len(command)
event("bash", "sess-two", "Bash", {"command": command, "description": "a long script"}, 3)
event("late", "sess-two", "Bash", {"command": "echo late"}, 4)
event("late2", "sess-two", "Bash", {"command": "echo late 2"}, 5)
event("bell", "sess-two", "Bash", {"command": "echo ring"}, 6)
PY
[ -s "$SCRATCH/bash.json" ] || fail "cannot write the hook events"

# hook NAME: `xdev hook` of event NAME under an agent stand-in (see
# 35-agent-hook-allow-and-deny.sh); waits for its preview and sets $ID.
hook() {
    local before
    before=$(ls "$D/pending")
    agent_hook_bg "$1" "$SCRATCH/$1.json"
    HOOK_PID=$BG_PID
    wait_until 10000 "the $1 hook's preview staged" new_item "$before"
}
new_item() {
    ID=$(comm -13 <(printf '%s\n' $1 | sort) <(ls "$D/pending" | sort) | head -n 1)
    [ -n "$ID" ]
}
hook write
WRITE_ID=$ID WRITE_HOOK=$HOOK_PID
hook edit
EDIT_ID=$ID EDIT_HOOK=$HOOK_PID
hook bash
BASH_ID=$ID BASH_HOOK=$HOOK_PID
note "staged $WRITE_ID, $EDIT_ID, $BASH_ID"

# --- the review in tmux --------------------------------------------------------
SOCKET="$SCRATCH/tmux.sock"
t() { tmux -S "$SOCKET" "$@"; }
# On a failure: no tmux left, and no preview left pending for the next
# scenario (a hook under its stand-in outlives the stand-in's SIGKILL).
review_cleanup() {
    local status=$? id
    t kill-server 2>/dev/null
    for id in $(ls "$D/pending" 2>/dev/null); do
        echo "48-review-in-tmux stopped" >"$D/pending/$id/reject" 2>/dev/null
    done
    return "$status"
}
trap 'review_cleanup; lib_cleanup' EXIT
screen() { t capture-pane -p -t review; }
screen_has() { screen | grep -qF -- "$1"; }
alternate_off() { [ "$(t display-message -p -t review '#{alternate_on}')" = 0 ]; }
keys() { t send-keys -t review "$@"; }
# A shell with a prompt of its own, so its return is plain to see.
t -f /dev/null new-session -d -s review -x 80 -y 24 \
    "env -i PATH=$PATH HOME=$SCRATCH TERM=tmux-256color PS1='review-test\$ ' bash --norc --noprofile" ||
    fail "cannot start tmux"
TMUX_PID=$(t display-message -p '#{pid}')
BG_PIDS+=("$TMUX_PID")
wait_until 10000 "the shell prompt in tmux" screen_has 'review-test$'
keys "'$XDEV_BIN' review '$D'; echo \"review exited \$?\"" Enter
wait_until 10000 "the review's title" screen_has "3 pending in 2 group(s)"
alternate_off && fail "the review is not on the alternate screen"

# The Bash command whole: select it (the last item), then page through it
# and check that every one of its lines was on screen.
keys End
wait_until 10000 "the Bash preview selected" screen_has "description: a long script"
wait_until 10000 "the Bash preview's cwd" screen_has "cwd: $SCRATCH"
: >"$SCRATCH/pages"
for _ in $(seq 40); do
    screen >>"$SCRATCH/pages"
    screen | grep -qE 'lines [0-9]+-([0-9]+) of \1 ' && break
    last=$(screen | head -n 2)
    keys PageDown
    wait_until 10000 "the next page" sh -c '[ "$(tmux -S "$0" capture-pane -p -t review | head -n 2)" != "$1" ]' "$SOCKET" "$last"
done
missing=$("$PYTHON" -c '
import sys
seen = open(sys.argv[1]).read()
print(" ".join(f"step-{i:03d}" for i in range(200) if f"echo step-{i:03d} ok" not in seen))' "$SCRATCH/pages")
assert_eq "$missing" "" "the lines of the Bash command never shown"

# Reject the Bash call with a typed reason: the model reads it.
keys r
wait_until 10000 "the reject prompt" screen_has "Reject: reason"
keys "split this script into steps"
keys Enter
wait_exit "$BASH_HOOK" 10000 "the Bash hook after the rejection"
assert_content "$SCRATCH/bash.out" '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"split this script into steps"}}'
assert_eq "$(log_records "r['event'] == 'pending/$BASH_ID/reject' and r['reason'] == 'split this script into steps' and r['outcome'] == 'ok'" | wc -l)" 1 \
    "the journal's record of the rejection"
wait_until 10000 "the Bash preview gone from the list" sh -c '! tmux -S "$0" capture-pane -p -t review | grep -qF "description: a long script"' "$SOCKET"
wait_until 10000 "the status line" screen_has "rejected $BASH_ID: Denied"

# The Edit (first in its session, the newest): its diff against the file as
# it was staged.
keys Home
wait_until 10000 "the first item selected" screen_has "Edit: notes.txt"
wait_until 10000 "the Edit's diff" screen_has "+the first line"
# (each line waited for: a frame may be on its way to the pane)
for line in "--- a/notes.txt" "+++ b/notes.txt" "@@ -1,2 +1,2 @@" "-first line" " second line"; do
    wait_until 10000 "the Edit's diff line '$line'" screen_has "$line"
done
# The Write: its diff is the real change, then approve it with the default
# reason.
keys j
wait_until 10000 "the Write's diff" screen_has "+replaced second line"
for line in "@@ -1,2 +1,2 @@" " first line" "-second line"; do
    wait_until 10000 "the Write's diff line '$line'" screen_has "$line"
done
keys a
wait_until 10000 "the approve prompt" screen_has "Approve: reason"
keys Enter
wait_exit "$WRITE_HOOK" 10000 "the Write hook after the approval"
assert_content "$SCRATCH/write.out" '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"approved in xdev review"}}'
assert_eq "$(log_records "r['event'] == 'pending/$WRITE_ID/resolve' and r['reason'] == 'approved in xdev review' and r['outcome'] == 'ok'" | wc -l)" 1 \
    "the journal's record of the approval"
still_running "$EDIT_HOOK" "the Edit hook (undecided)"
wait_until 10000 "the trail naming this review" screen_has "by this review"

# A preview staged while the review is open appears.
hook late
LATE_ID=$ID LATE_HOOK=$HOOK_PID
wait_until 10000 "the late preview on screen" screen_has "Bash: echo late"
wait_until 10000 "the count" screen_has "2 pending in 2 group(s)"

# Mark both and reject them together, after a prompt that names how many.
keys Home
keys Space
keys Space
keys r
wait_until 10000 "the marked prompt" screen_has "Reject 2 marked previews"
keys "not now"
keys Enter
wait_exit "$EDIT_HOOK" 10000 "the Edit hook after the marked rejection"
wait_exit "$LATE_HOOK" 10000 "the late hook after the marked rejection"
assert_contains "$(cat "$SCRATCH/edit.out")" '"permissionDecisionReason":"not now"' "the Edit hook's answer"
assert_contains "$(cat "$SCRATCH/late.out")" '"permissionDecisionReason":"not now"' "the late hook's answer"
assert_eq "$(log_records "r['event'] in ('pending/$EDIT_ID/reject', 'pending/$LATE_ID/reject') and r['reason'] == 'not now'" | wc -l)" 2 \
    "the journal's records of the marked rejection"
wait_until 10000 "an empty list" screen_has "0 pending in 0 group(s)"
screen >"$SCRATCH/last-screen"

# q: the terminal as it was.
keys q
wait_until 10000 "the review's exit" screen_has "review exited 0"
wait_until 10000 "the alternate screen off" alternate_off
assert_eq "$(screen | grep -v '^$' | tail -n 1)" 'review-test$' "the shell prompt, last on screen"
pending_is 0 || fail "a preview is left pending"

# With NO_COLOR the screen has no colour and no style at all (capture-pane
# -e would show them as escape sequences); SIGTERM restores the terminal
# too, and the exit code says why it ended.
keys "NO_COLOR=1 '$XDEV_BIN' review '$D'; echo \"review exited \$?\"" Enter
wait_until 10000 "the review again" screen_has "0 pending in 0 group(s)"
if t capture-pane -p -e -t review | grep -q $'\e\['; then
    fail "a style on screen with NO_COLOR: $(t capture-pane -p -e -t review | head -n 3 | cat -v)"
fi
# A preview decided elsewhere (this shell) leaves the list at once, and the
# trail says who decided it.
hook late2
wait_until 10000 "the second late preview on screen" screen_has "Bash: echo late 2"
(echo "decided from a shell" >"$D/pending/$ID/reject") || fail "the shell's reject failed"
wait_exit "$HOOK_PID" 10000 "the second late hook after the shell's rejection"
wait_until 10000 "the list empty again" screen_has "0 pending in 0 group(s)"
wait_until 10000 "the trail naming the shell" screen_has "Bash: echo late 2 by a shell (bash)"
review_pid() { REVIEW_PID=$(pgrep -P "$(t display-message -p -t review '#{pane_pid}')" -x xdev); [ -n "$REVIEW_PID" ]; }
wait_until 10000 "the review's process" review_pid
kill -TERM "$REVIEW_PID"
wait_until 10000 "the review's exit on SIGTERM" screen_has "review exited 143"
wait_until 10000 "the alternate screen off after SIGTERM" alternate_off
# SIGINT (a kill -INT from outside, not the Ctrl-C key the review reads in
# raw mode) restores the terminal too: the alternate screen off, the line
# discipline back (icanon, echo), exit 130.
keys "'$XDEV_BIN' review '$D'; echo \"review exited \$?\"" Enter
wait_until 10000 "the review for SIGINT" screen_has "0 pending in 0 group(s)"
wait_until 10000 "the review's process" review_pid
kill -INT "$REVIEW_PID"
wait_until 10000 "the review's exit on SIGINT" screen_has "review exited 130"
wait_until 10000 "the alternate screen off after SIGINT" alternate_off
# (The marker is typed in two pieces, so that the command line on the
# screen never shows it whole before stty has answered.)
keys "stty -a | tr ' ;' '\n\n' | grep -xE -- '-?(icanon|echo)' | tr '\n' ' '; echo STTY-''END" Enter
wait_until 10000 "stty's answer" screen_has "STTY-END"
screen_has "icanon echo STTY-END" || fail "the terminal not sane after SIGINT: $(screen | grep STTY-END)"
# --bell: a preview that arrives rings the terminal's bell (tmux sets the
# bell flag of the window, which is not the current one).
t new-window -d -n bell "exec '$XDEV_BIN' review --bell '$D'"
bell_screen_has() { t capture-pane -p -t :bell | grep -qF -- "$1"; }
bell_flag() { t display-message -p -t :bell '#{window_bell_flag}'; }
wait_until 10000 "the review with --bell" bell_screen_has "0 pending in 0 group(s)"
assert_eq "$(bell_flag)" 0 "the bell flag before any preview"
hook bell
wait_until 10000 "the rung preview on screen" bell_screen_has "Bash: echo ring"
wait_until 10000 "the bell of the --bell window" sh -c '[ "$(tmux -S "$0" display-message -p -t :bell "#{window_bell_flag}")" = 1 ]' "$SOCKET"
(echo "bell heard" >"$D/pending/$ID/reject") || fail "the shell's reject failed"
wait_exit "$HOOK_PID" 10000 "the bell hook after the shell's rejection"
t kill-window -t :bell
# A terminal that hangs up (its tmux window closed: SIGHUP) ends the review.
t new-window -d -n hangup "exec '$XDEV_BIN' review '$D'"
HANGUP_PID=$(t display-message -p -t :hangup '#{pane_pid}')
BG_PIDS+=("$HANGUP_PID")
wait_until 10000 "the review in the second window" sh -c 'tmux -S "$0" capture-pane -p -t :hangup | grep -qF "0 pending in 0 group(s)"' "$SOCKET"
t kill-window -t :hangup
gone() { [ ! -e "/proc/$1" ] || [ "$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)" = Z ]; }
wait_until 10000 "the review's exit after its terminal hung up" gone "$HANGUP_PID"
t kill-server
note "reviewed three hook calls of two sessions in tmux; the last screen:"
cat "$SCRATCH/last-screen"
