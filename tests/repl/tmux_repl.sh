#!/usr/bin/env bash
# The REPL as a person uses it: `ntdbg repl` on a shipped sample inside a real terminal
# (tmux), keys typed with send-keys, the screen read with capture-pane.
#
#   tests/repl/tmux_repl.sh NTDBG_BINARY DUMP
#
# Checks the banner, a command and its output, Up recalling the last command, Ctrl-R
# finding an earlier one, Tab completing `.ec` and `crashy!wri`, Ctrl-C at the prompt (and
# SIGINT outside it) not ending ntdbg, Ctrl-C cancelling a long command (the rest of its batch
# named on one line), `.logopen` writing a file, `q` quitting and the
# history surviving to the next run; on live targets behind gdbserver: Ctrl-C breaking in,
# `t`/`p` ten times from a breakpoint on a one-byte `push rbp` running the function exactly
# once, `q` saying it detaches and lets the target run, and `help` and `q` after the target
# ended. Every wait is for a condition, bounded generously for a
# loaded machine; each start has a tmux server of its own, on a socket in the script's own
# folder. Prints "N passed, N failed"; exit 0 only when all passed, 77 when tmux is missing
# (skipped).
set -u

bin=${1:?usage: tmux_repl.sh NTDBG_BINARY DUMP}
dump=${2:?usage: tmux_repl.sh NTDBG_BINARY DUMP}
if ! command -v tmux >/dev/null 2>&1; then
    echo "SKIPPED: tmux is not installed"
    exit 77
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ntdbg-repl-tmux.XXXXXX")
# The current start's tmux server: `start` makes a new one on a new socket each time, after the
# previous one is gone (reusing one socket raced with the old server's shutdown).
starts=0
socket="$work/tmux-0.sock"
tm() { tmux -S "$socket" "$@"; }
# Ends the current tmux server and waits until it no longer answers.
stop_server() {
    tm kill-server >/dev/null 2>&1
    local deadline=$((SECONDS + 30))
    while tm list-sessions >/dev/null 2>&1 && ((SECONDS < deadline)); do
        sleep 0.2
    done
}
live_pids=()
cleanup() {
    stop_server
    if ((${#live_pids[@]})); then
        kill -9 "${live_pids[@]}" >/dev/null 2>&1
    fi
    rm -rf "$work"
}
trap cleanup EXIT
# A signal ends the script through its EXIT trap too (tmux server stopped, folder removed).
trap "exit 143" TERM INT

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok: $1"; }
bad() {
    failed=$((failed + 1))
    echo "FAILED: $1"
    echo "--- screen ---"
    screen
    echo "--------------"
}

# The visible screen (plus scroll-back), trailing blank lines dropped.
screen() { tm capture-pane -p -J -S -200 -t repl 2>/dev/null | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'; }
# The line the cursor is on.
cursor_line() {
    local y
    y=$(tm display-message -p -t repl '#{cursor_y}' 2>/dev/null) || return
    tm capture-pane -p -t repl 2>/dev/null | sed -n "$((y + 1))p"
}
# Waits up to $2 seconds (default 60) until the screen shows the fixed text $1.
wait_for() {
    local deadline=$((SECONDS + ${2:-60}))
    while ((SECONDS < deadline)); do
        screen | grep -qF -- "$1" && return 0
        sleep 0.2
    done
    return 1
}
# Waits up to 30 s until the cursor line is exactly $1.
wait_line() {
    local deadline=$((SECONDS + 30))
    while ((SECONDS < deadline)); do
        [[ "$(cursor_line | sed 's/ *$//')" == "$1" ]] && return 0
        sleep 0.2
    done
    return 1
}
# Whether ntdbg still runs in the pane.
alive() { [[ "$(tm display-message -p -t repl '#{pane_dead}' 2>/dev/null)" == 0 ]]; }
# Waits up to 30 s for ntdbg to end.
wait_dead() {
    local deadline=$((SECONDS + 30))
    while ((SECONDS < deadline)); do
        alive || return 0
        sleep 0.2
    done
    return 1
}
# Waits up to 30 s until ntdbg runs a command rather than reads a line: the terminal is back in
# cooked mode (the line editor turns ISIG off while it reads keys), so Ctrl-C arrives as SIGINT.
wait_running() {
    local tty deadline=$((SECONDS + 30))
    tty=$(tm display-message -p -t repl '#{pane_tty}' 2>/dev/null) || return 1
    while ((SECONDS < deadline)); do
        stty -F "$tty" -a 2>/dev/null | grep -qE '(^| )isig( |$)' && return 0
        sleep 0.2
    done
    return 1
}
# Starts `ntdbg repl --offline ARGS` (default: the dump) in a fresh tmux server and pane.
start() {
    local target=${1:-"'$dump'"}
    stop_server
    starts=$((starts + 1))
    socket="$work/tmux-$starts.sock"
    tm -f /dev/null new-session -d -s repl -x 160 -y 50 \
        "env NTDBG_HISTORY='$work/history' NTDBG_OFFLINE=1 ${colour:-NO_COLOR=1} TERM=xterm '$bin' repl --offline $target" &&
        tm set-option -t repl remain-on-exit on >/dev/null
}
# Clears the line being edited.
clear_line() { tm send-keys -t repl C-e C-u; }

start || { echo "FAILED: tmux could not start"; echo "0 passed, 1 failed"; exit 1; }

wait_for "This dump file has an exception of interest stored in it." && wait_for "0:000>" \
    && ok "banner with the exception of interest and a prompt" || bad "banner"
screen | grep -qF "Last event:" && ok "banner shows the last event" || bad "banner last event"

tm send-keys -t repl ".ecxr" Enter
wait_for "crashy!write_null+0x7:" && ok ".ecxr shows the exception context" || bad ".ecxr output"

tm send-keys -t repl "kb" Enter
wait_for "crashy!mode_null" && ok "kb shows the stack" || bad "kb output"

tm send-keys -t repl Up
wait_line "0:000> kb" && ok "Up recalls the last command" || bad "Up arrow"
clear_line
wait_line "0:000>" || bad "clearing the line"

tm send-keys -t repl C-r
tm send-keys -t repl -l "ecx"
wait_for "ecx': .ecxr" && ok "Ctrl-R finds an earlier command" || bad "reverse search"
tm send-keys -t repl C-g
clear_line
wait_line "0:000>" || bad "leaving the search"

tm send-keys -t repl -l ".ec"
tm send-keys -t repl Tab
wait_line "0:000> .ecxr" && ok "Tab completes .ec to .ecxr" || bad "command completion"
clear_line

tm send-keys -t repl -l "x crashy!wri"
tm send-keys -t repl Tab
wait_line "0:000> x crashy!write_" && ok "Tab completes crashy!wri to the common prefix" || bad "symbol prefix"
tm send-keys -t repl Tab
wait_for "crashy!write_dump" && ok "a second Tab lists the candidates" || bad "candidate list"
tm send-keys -t repl -l "n"
tm send-keys -t repl Tab
wait_line "0:000> x crashy!write_null" && ok "Tab completes crashy!write_n to crashy!write_null" || bad "symbol completion"
tm send-keys -t repl Enter
wait_for "crashy!write_null (int)" && ok "the completed command runs" || bad "completed command"

tm send-keys -t repl -l "lm half typed"
tm send-keys -t repl C-c
if wait_line "0:000>" && alive; then ok "Ctrl-C at the prompt clears the line and ntdbg goes on"; else bad "Ctrl-C"; fi

# Ctrl-C while a command runs reaches ntdbg as SIGINT (the editor is not reading keys then):
# sent directly, it must not end ntdbg.
kill -INT "$(tm display-message -p -t repl '#{pane_pid}')" 2>/dev/null
sleep 0.5
tm send-keys -t repl "? 0x3039" Enter
if alive && wait_for "Evaluate expression: 12345"; then ok "SIGINT outside the prompt does not end ntdbg"; else bad "SIGINT"; fi

tm send-keys -t repl -l ".logopen $work/session.log"
tm send-keys -t repl Enter
wait_for "Opened log file" && ok ".logopen answers" || bad ".logopen"
tm send-keys -t repl "lm" Enter
wait_for "crashy" 
tm send-keys -t repl ".logclose" Enter
wait_for "Closing open log file" && ok ".logclose answers" || bad ".logclose"
if grep -qF "0:000> lm" "$work/session.log" 2>/dev/null && grep -qF "crashy" "$work/session.log"; then
    ok "the log file holds the command and its output"
else
    bad "log file contents: $(cat "$work/session.log" 2>&1 | head -5)"
fi

tm capture-pane -p -e -t repl | grep -qF $'\e[' && bad "escape codes despite NO_COLOR" || ok "no colour with NO_COLOR"
tm send-keys -t repl "q" Enter
wait_dead && ok "q quits" || bad "q"
grep -qxF ".ecxr" "$work/history" 2>/dev/null && ok "history saved to NTDBG_HISTORY" || bad "history file"

# Without NO_COLOR the prompt is bold; with it (the first run) there were no escape codes.
colour="NO_COLOR="
start
wait_for "0:000>" || bad "second start"
if tm capture-pane -p -e -t repl | grep -qF $'\e[1m0:000>'; then ok "the prompt is bold on a terminal"; else bad "bold prompt"; fi
colour=

tm send-keys -t repl Up
wait_line "0:000> .logclose" && ok "history persists to the next run" || bad "history after restart"
clear_line
tm send-keys -t repl C-d
wait_dead && ok "Ctrl-D quits" || bad "Ctrl-D"

# The prompt follows the current thread (`~Ns`), and Tab offers the `~N` thread numbers: the
# two-thread sample next to the dump.
threads_dump="$(dirname "$dump")/crashy-x64-thread.dmp"
if [[ -f "$threads_dump" ]]; then
    start "'$threads_dump'"
    wait_line "0:001>" && ok "the prompt starts on the exception's thread" || bad "thread prompt"
    tm send-keys -t repl "~" Tab
    tm send-keys -t repl Tab
    wait_for "~0  ~1" && ok "Tab lists the thread numbers" || bad "thread completion"
    clear_line
    tm send-keys -t repl "~0s" Enter
    wait_line "0:000>" && ok "~0s moves the prompt to 0:000>" || bad "prompt after ~0s"
    tm send-keys -t repl "q" Enter
    wait_dead || bad "q on the thread sample"
else
    bad "missing sample $threads_dump"
fi

# Ctrl-C while a long command runs on a dump cancels it, and ntdbg answers the next command:
# a batch of memory searches over the largest dump of the shared corpus (beside the
# repository, or $NTDBG_TESTDATA): about 1 s per search in a debug build, and 120 of them
# take seconds in a release build too.
corpus=${NTDBG_TESTDATA:-}
if [[ -z "$corpus" ]]; then
    dir=$(cd "$(dirname "$0")" && pwd)
    while [[ "$dir" != / && ! -d "$dir/shared/testdata" ]]; do dir=$(dirname "$dir"); done
    corpus="$dir/shared/testdata"
fi
big="$corpus/mozilla-minidump-stackwalk-pgo/pgo_data/minidumps/windows-aarch64.dmp"
if [[ -f "$big" ]]; then
    start "'$big'"
    wait_for "0:000>" || bad "start on the large dump"
    searches=$(for _ in $(seq 120); do printf 's -a 0 L?7fffffffffffffff "q~"; '; done)
    tm send-keys -t repl -l "$searches"
    tm send-keys -t repl Enter
    wait_running || bad "the searches did not start"
    tm send-keys -t repl C-c
    if wait_for "Search cancelled at" && alive; then ok "Ctrl-C cancels a long command on a dump"; else bad "cancel"; fi
    # The searches the cancel skipped are named on one line, not one line each.
    if wait_for "(not executed (the batch was cancelled): " && [[ $(screen | grep -c "not executed") == 1 ]]; then
        ok "the skipped commands of a cancelled batch take one line"
    else
        bad "one line for the skipped commands"
    fi
    tm send-keys -t repl "? 0x3039" Enter
    wait_for "Evaluate expression: 12345" && ok "the next command answers after a cancel" || bad "after cancel"
    tm send-keys -t repl "q" Enter
    wait_dead || bad "q after a cancel"
else
    echo "skipped: the Ctrl-C cancel check (no shared corpus at $corpus)"
fi

# Starts gdbserver on $1 ARGS... in the background; sets $port (empty when it did not listen).
start_gdbserver() {
    local log="$work/gdbserver-$((${#live_pids[@]})).log"
    gdbserver --once 127.0.0.1:0 "$@" >"$log" 2>&1 &
    live_pids+=($!)
    disown
    port=
    local deadline=$((SECONDS + 60))
    while [[ -z "$port" ]] && ((SECONDS < deadline)); do
        port=$(sed -n 's/^Listening on port \([0-9]*\).*/\1/p' "$log" 2>/dev/null)
        [[ -z "$port" ]] && sleep 0.2
    done
    local inferior
    inferior=$(sed -n 's/.*created; pid = \([0-9]*\).*/\1/p' "$log")
    [[ -n "$inferior" ]] && live_pids+=("$inferior")
}
# The values of every "Evaluate expression: N = HEX" on the screen, in order, as 0x-less hex.
values() { screen | sed -n 's/^Evaluate expression: [0-9-]* = \([0-9a-f`]*\)$/\1/p' | tr -d '`'; }
# Waits up to 60 s until the screen shows $1 such values; prints the $2-th (1-based).
value_number() {
    local deadline=$((SECONDS + 60))
    while (($(values | wc -l) < $1)) && ((SECONDS < deadline)); do sleep 0.2; done
    values | sed -n "$2p"
}

# A live target (a Linux process behind gdbserver): the banner says what was attached, and
# Ctrl-C while `g` waits for the target breaks in instead of ending ntdbg.
if command -v gdbserver >/dev/null 2>&1; then
    start_gdbserver /bin/sleep 300
    if [[ -n "$port" ]] && start "--attach gdb:127.0.0.1:$port"; then
        wait_for "Attached to gdb:127.0.0.1:$port (stopped:" && ok "live banner: what was attached and why it stopped" || bad "live banner"
        wait_line "0:000>" || bad "live prompt"
        tm send-keys -t repl "g" Enter
        wait_running || bad "g did not start"
        tm send-keys -t repl C-c
        wait_for "break-in: the target is halted" && alive && ok "Ctrl-C during g breaks into the live target" || bad "live break-in"
        tm send-keys -t repl "q" Enter
        wait_dead && ok "q detaches and quits" || bad "live q"
    else
        bad "gdbserver did not start: $(cat "$work"/gdbserver-*.log)"
    fi
else
    echo "skipped: the live Ctrl-C break-in check (gdbserver is not installed)"
fi

# Stepping from a breakpoint on a one-byte instruction (issue 34): the test program's
# ntdbg_target_func starts with `push rbp`; `t` and `p` ten times from a breakpoint there run
# it exactly once to its `ret`: rsp 8 below the entry after the first step, 8 above it (the
# return address popped) after the tenth, and rip at that return address. Then `q` says the
# target runs on; after the target ends, `help` still answers and `q` says it had ended.
source_c="$(cd "$(dirname "$0")/../.." && pwd)/testdata/live/live_target.c"
if command -v gdbserver >/dev/null 2>&1 && command -v cc >/dev/null 2>&1 && command -v nm >/dev/null 2>&1; then
    cc -g -O0 -no-pie -fno-pie -fno-omit-frame-pointer -pthread -o "$work/live_target" "$source_c"
    func=$(nm "$work/live_target" | sed -n 's/^0*\([0-9a-f]*\) T ntdbg_target_func$/\1/p')
    start_gdbserver "$work/live_target"
    if [[ -n "$port" && -n "$func" ]] && start "--attach gdb:127.0.0.1:$port"; then
        wait_line "0:000>" || bad "live prompt (steps)"
        # One line per step of the check: a batch runs whole, so nothing is typed ahead.
        tm send-keys -t repl "bp 0x$func; g" Enter
        wait_for "Breakpoint 0 hit" && ok "g runs to the breakpoint on push rbp" || bad "breakpoint on push rbp"
        tm send-keys -t repl "? @rsp; ? poi(@rsp)" Enter
        entry_rsp=$(value_number 2 1)
        return_address=$(value_number 2 2)
        tm send-keys -t repl "t; ? @rsp" Enter
        after_push=$(value_number 3 3)
        if [[ -n "$after_push" ]] && (( 16#$after_push == 16#$entry_rsp - 8 )) && screen | grep -qE "mov +rbp,rsp"; then
            ok "t from the breakpoint executes push rbp once (rsp 8 lower, at mov rbp,rsp)"
        else
            bad "t from push rbp: rsp $after_push, entry $entry_rsp"
        fi
        tm send-keys -t repl "p;t;p;t;p;t;p;t;p; ? @rip; ? @rsp" Enter
        rip_after=$(value_number 5 4)
        rsp_after=$(value_number 5 5)
        if [[ -n "$rsp_after" && "$rip_after" == "$return_address" ]] && (( 16#$rsp_after == 16#$entry_rsp + 8 )); then
            ok "ten steps from the breakpoint return from the function with rsp 8 above the entry"
        else
            bad "after ten steps: rip $rip_after rsp $rsp_after, entry rsp $entry_rsp, return address $return_address"
        fi
        tm send-keys -t repl "q" Enter
        wait_for "the target runs on without the debugger" && ok "q says it detaches and lets the target run" || bad "q on a live target"
        wait_dead || bad "q (steps)"
    else
        bad "gdbserver or the test program did not start (steps)"
    fi

    start_gdbserver "$work/live_target" crash
    if [[ -n "$port" ]] && start "--attach gdb:127.0.0.1:$port"; then
        wait_line "0:000>" || bad "live prompt (crash)"
        tm send-keys -t repl "g" Enter
        wait_for "Access violation - code c0000005 (first chance)" || bad "the access violation"
        tm send-keys -t repl "g" Enter
        wait_for "[target exited: process terminated by signal 11]" && ok "the target ends" || bad "the end of the target"
        tm send-keys -t repl "help" Enter
        wait_for "q, quit, exit (or Ctrl-D)" && ok "help answers after the target exited" || bad "help after the exit"
        tm send-keys -t repl "q" Enter
        wait_for "q: the process had ended" && ok "q says the process had ended" || bad "q after the exit"
        wait_dead || bad "q (crash)"
    else
        bad "gdbserver did not start (crash)"
    fi
else
    echo "skipped: the live stepping checks (gdbserver, cc or nm is not installed)"
fi

echo "$passed passed, $failed failed"
((failed == 0))
