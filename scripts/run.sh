#!/usr/bin/env bash
# Start web + worker + control worker + alert worker + comparison worker + beat on the embedded defaults
# (SQLite, filesystem broker) unless DATABASE_URL / CELERY_BROKER_URL say otherwise, and
# keep them running: a worker or beat that dies is started again, said on the terminal,
# after a wait that grows while it keeps dying. Ctrl-C once: the worker takes no new jobs,
# web, beat and the service workers stop, and the running jobs finish (it says how many);
# Ctrl-C again cancels them. Each process logs to $ROCPATH_VAR_DIR/log/<process>.log;
# ROCPATH_LOG_TERMINAL=1 shows the logs here too.
# docs/reliability.md ("Stopping and supervision") says why it works this way.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
HOST="${ROCPATH_HOST:-127.0.0.1}"
PORT="${ROCPATH_PORT:-8000}"
VAR="${ROCPATH_VAR_DIR:-var}"
LOG="$VAR/log"
RUN="$VAR/run"
WORKER_NODE="worker@%h"
CANCEL_WAIT_S=30   # after the second Ctrl-C, how long the worker may take to end its jobs
BACKOFF_MAX_S=60   # the longest wait before a process that keeps dying is started again
export DJANGO_SETTINGS_MODULE="${DJANGO_SETTINGS_MODULE:-config.settings.base}"

# HIPIFY jobs run hipify-perl locally when no container engine runs them.
if ! scripts/install-rocm-tools.sh --check >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ] || sudo -n true 2>/dev/null; then
        scripts/install-rocm-tools.sh || echo "could not install hipify-perl; HIPIFY jobs will say so" >&2
    else
        echo "hipify-perl is missing: run scripts/install-rocm-tools.sh as root for HIPIFY jobs" >&2
    fi
fi
# Local jobs run in a bubblewrap sandbox; without it, jobs that run a team's code refuse.
if ! scripts/install-sandbox.sh --check >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ] || sudo -n true 2>/dev/null; then
        scripts/install-sandbox.sh || echo "could not install bubblewrap; local HIPIFY and compile jobs will refuse to run" >&2
    else
        echo "bubblewrap is missing: run scripts/install-sandbox.sh as root (local HIPIFY and compile jobs refuse without it)" >&2
    fi
fi
# Static files are collected (and compressed) once per content into a folder shared by
# every clone on this machine (like the venv), keyed by what they are built from: the
# packages, our static/ and the storage's rules. The sidecar's source maps and Redoc are
# not collected (config/staticfiles.py). An operator's ROCPATH_STATIC_ROOT is collected
# into as it is, once per the same key.
static_key=$({ cat requirements.txt config/staticfiles.py; find static -type f -print0 | sort -z | xargs -0 sha256sum; } | sha256sum | cut -c1-16)
if [ -z "${ROCPATH_STATIC_ROOT:-}" ]; then
    export ROCPATH_STATIC_ROOT="${ROCPATH_CACHE_DIR:-$HOME/.cache/rocpath}/static-$static_key"
fi
if [ "$(cat "$ROCPATH_STATIC_ROOT/.collected" 2>/dev/null)" != "$static_key" ]; then
    mkdir -p "$(dirname "$ROCPATH_STATIC_ROOT")"
    # Two clones starting at once take turns; the second finds it done.
    flock "$ROCPATH_STATIC_ROOT.lock" $BASH -c '
        [ "$(cat "$1/.collected" 2>/dev/null)" = "$2" ] && exit 0
        echo "collecting static files into $1 (once per content)" >&2
        '"$BIN"'/python manage.py collectstatic --no-input -v 0 && echo "$2" >"$1/.collected"
    ' _ "$ROCPATH_STATIC_ROOT" "$static_key"
fi
# One interpreter: migrate, the demo login, the executor and the queues.
FACTS=$($BIN/python manage.py run_facts)
{
    read -r LOGIN; read -r EXECUTOR; read -r JOB_QUEUE; read -r CONTROL_QUEUE; read -r ALERT_QUEUE
    read -r COMPARE_QUEUE
} <<<"$FACTS"
if [ -n "${ROCPATH_EXECUTOR:-}" ] && [ "$ROCPATH_EXECUTOR" != auto ]; then
    EXECUTOR="$EXECUTOR (ROCPATH_EXECUTOR)"
else
    case "$EXECUTOR" in
        docker) EXECUTOR="docker (containers of the job image on this host's engine)" ;;
        local) EXECUTOR="local (subprocesses: no Docker engine with the job image here; make images)" ;;
    esac
fi
mkdir -p "$LOG" "$RUN"

# Each process runs as a job of its own process group (set -m), so the terminal's Ctrl-C
# reaches this script alone and it decides what each process is told.
set -m
SERVICES=(web worker control alerts compare beat)
declare -A PID=() STARTED=() BACKOFF=() RESTART_AT=() LABEL=(
    [web]="the web server" [worker]="the worker" [control]="the control worker"
    [alerts]="the alert worker" [compare]="the comparison worker" [beat]="beat"
)
run_web() {
    exec $BIN/gunicorn config.wsgi --bind "$HOST:$PORT" --workers 2 --threads 4 \
        --graceful-timeout 5 --access-logfile "$LOG/web-access.log" --error-logfile - \
        --control-socket "$RUN/gunicorn.ctl"
}
run_worker() { exec $BIN/celery -A config worker --loglevel INFO -Q "$JOB_QUEUE" -n "$WORKER_NODE"; }
run_control() {
    exec $BIN/celery -A config worker --loglevel INFO -Q "$CONTROL_QUEUE" -c 1 -n "control@%h"
}
# Deliveries wait on receivers, not on the CPU: many threads, and each try has its own
# deadline (ROCPATH_ALERT_TRY_DEADLINE_S), which a threads pool's missing time limit needs.
run_alerts() {
    exec $BIN/celery -A config worker --loglevel INFO -Q "$ALERT_QUEUE" -P threads -c 8 -n "alerts@%h"
}
# A finished job's comparison with its baselines (a bootstrap per case: CPU, seconds for a
# sweep) on its own queue, one at a time: it never holds a job's slot back.
run_compare() {
    exec $BIN/celery -A config worker --loglevel INFO -Q "$COMPARE_QUEUE" -c 1 -n "compare@%h"
}
run_beat() { exec $BIN/celery -A config beat --loglevel INFO; }

start() {
    local name=$1
    "run_$name" >>"$LOG/$name.log" 2>&1 </dev/null &
    PID[$name]=$!
    STARTED[$name]=$SECONDS
    echo "${PID[$name]}" >"$RUN/$name.pid"
}
say() { echo "rocpath: $*" >&2; }
alive() { [ -n "${PID[$1]:-}" ] && kill -0 "${PID[$1]}" 2>/dev/null; }
# Everything a process left in its group (pool children, runners) goes with it.
kill_group() { kill "-${2:-KILL}" -- "-$1" 2>/dev/null || true; }
running_jobs() {
    $BIN/python manage.py worker_jobs --worker "$WORKER_NODE" "$@" 2>>"$LOG/worker.log" || echo "?"
}
jobs_n() { if [ "$1" = 1 ]; then echo "1 job"; else echo "$1 jobs"; fi; }

STATE=running # running → draining (first Ctrl-C) → canceling (second) → killing (third)
drain() {
    STATE=draining
    echo >&2
    for name in web control alerts compare beat; do alive "$name" && kill -TERM "${PID[$name]}"; done
    alive worker && kill -TERM "${PID[worker]}" # warm shutdown: no new jobs, running ones finish
    # Said at once: counting starts a manage.py, which takes a while on a loaded machine.
    say "stopping: the worker takes no new jobs and lets the running ones finish. Ctrl-C again cancels them"
    say_running
}
# Said again while the worker drains whenever the count changes: a job the worker had
# taken but not yet marked running when the first count ran is counted by a later one.
SAID_COUNT=""
RECOUNT_EVERY_S=5
say_running() {
    local count
    count=$(running_jobs)
    RECOUNT_AT=$((SECONDS + RECOUNT_EVERY_S))
    [ "$count" = "$SAID_COUNT" ] && return 0
    [ "$STATE" = draining ] || return 0 # a Ctrl-C came while it counted
    SAID_COUNT=$count
    if [ "$count" = 0 ]; then
        say "no job is running"
    else
        say "$(jobs_n "$count") running"
    fi
}
cancel_jobs() {
    STATE=canceling
    local count
    count=$(running_jobs --cancel --reason "make run's second Ctrl-C (worker stopped)")
    # The deadline starts once the cancel is sent, not before a count slowed by a busy machine.
    CANCEL_DEADLINE=$((SECONDS + CANCEL_WAIT_S))
    say "canceling $(jobs_n "$count") (they end canceled: worker stopped), then the worker stops; Ctrl-C again kills it at once"
}
kill_all() {
    STATE=killing
    for name in "${!PID[@]}"; do kill_group "${PID[$name]}"; done
}
on_signal() {
    case $STATE in
        running) drain ;;
        draining) cancel_jobs ;;
        *) kill_all ;;
    esac
}
finish() {
    trap - INT TERM HUP EXIT
    for name in "${!PID[@]}"; do kill_group "${PID[$name]}"; done
    [ -n "${TAIL:-}" ] && kill_group "$TAIL"
    rm -f "$RUN"/*.pid
}
trap on_signal INT TERM HUP
trap finish EXIT

LOGS=() NAMES=""
for name in "${SERVICES[@]}"; do
    LOGS+=("$LOG/$name.log")
    NAMES+="$name.log "
    : >>"$LOG/$name.log"
done
if [ "${ROCPATH_LOG_TERMINAL:-0}" = 1 ]; then
    tail -n 0 -F --pid=$$ "${LOGS[@]}" >&2 2>/dev/null </dev/null &
    TAIL=$!
fi
# The web server starts first and alone: the page is what a newcomer waits for, and on a
# 2-core machine the workers and beat importing Django beside it tripled
# its start. They start once it answers (a job submitted meanwhile waits in the broker).
start web

# The URL is printed once the web server answers /healthz (a 503 naming a service that is
# down is an answer too: the page then says which), polled while the web server lives.
# Asked in bash itself (/dev/tcp): a Python start per poll, every 0.2 s, took CPU from the
# processes starting beside it on a 2-core machine. Any HTTP status line is an answer.
answers() {
    local line=""
    { exec 3<>"/dev/tcp/$HOST/$PORT"; } 2>/dev/null || return 1
    printf 'GET /healthz HTTP/1.0\r\nHost: %s:%s\r\n\r\n' "$HOST" "$PORT" >&3
    IFS= read -r -t 2 line <&3 || true
    exec 3<&- 3>&-
    [[ $line == HTTP/* ]]
}
until answers || [ "$STATE" != running ]; do
    if ! kill -0 "${PID[web]}" 2>/dev/null; then
        say "the web server exited before it answered; its log: $LOG/web.log"
        break
    fi
    sleep 0.2 &
    wait $! || true
done
if [ "$STATE" = running ] && alive web; then
    for name in "${SERVICES[@]}"; do
        # A Ctrl-C between two starts drained those already started: start no more.
        [ "$STATE" = running ] || break
        [ "$name" = web ] || start "$name"
    done
fi
cat <<MSG

  rocpath is running
    URL:      http://$HOST:$PORT/
    $LOGIN
    API docs: http://$HOST:$PORT/api/docs/
    executor: $EXECUTOR
    logs:     $LOG/: ${NAMES}(ROCPATH_LOG_TERMINAL=1 shows them here too)
    Ctrl-C stops taking jobs and lets running ones finish; a second Ctrl-C cancels them

MSG

STATUS=0
while :; do
    live=()
    for name in "${!PID[@]}"; do live+=("${PID[$name]}"); done
    [ "$STATE" != running ] && [ ${#live[@]} -eq 0 ] && break
    if [ "$STATE" = canceling ] && [ "$SECONDS" -ge "$CANCEL_DEADLINE" ]; then
        say "the worker did not stop within ${CANCEL_WAIT_S} s of the cancel; killing it"
        kill_all
    fi
    if [ "$STATE" = draining ] && alive worker && [ "$SECONDS" -ge "${RECOUNT_AT:-0}" ]; then
        say_running
    fi
    # A tick while a restart, a recount or the cancel deadline is due; else only a process or
    # a signal wakes us.
    timer=""
    if [ ${#RESTART_AT[@]} -gt 0 ] || [ "$STATE" != running ] || [ ${#live[@]} -eq 0 ]; then
        sleep 1 &
        timer=$!
    fi
    exited="" code=0
    # (bash's own "Killed" notice is dropped: the lines below say what happened)
    wait -n -p exited "${live[@]}" $timer 2>/dev/null || code=$?
    exited=${exited:-}
    [ -n "$timer" ] && { kill "$timer" 2>/dev/null || true; wait "$timer" 2>/dev/null || true; }
    for name in "${!PID[@]}"; do
        pid=${PID[$name]} status=$code
        if [ "$pid" != "$exited" ]; then
            # A process that ended while the script ran something else (a trap's count, a
            # start) may be reaped and forgotten by bash: wait -n never names it, and the
            # run never ended (a Ctrl-C right after start waited for ever).
            kill -0 "$pid" 2>/dev/null && continue
            status="?"
        fi
        kill_group "$pid"
        unset "PID[$name]"
        [ "$STATE" = running ] || continue # told to stop: no alarm
        if [ "$name" = web ]; then
            say "the web server exited (status $status); stopping the rest. See $LOG/web.log"
            STATUS=1
            drain
            break
        fi
        up=$((SECONDS - STARTED[$name]))
        if [ "$up" -ge "$BACKOFF_MAX_S" ]; then
            BACKOFF[$name]=1
        else
            wait_s=${BACKOFF[$name]:-0}
            wait_s=$((wait_s ? wait_s * 2 : 1))
            BACKOFF[$name]=$((wait_s > BACKOFF_MAX_S ? BACKOFF_MAX_S : wait_s))
        fi
        RESTART_AT[$name]=$((SECONDS + BACKOFF[$name]))
        say "${LABEL[$name]} exited (status $status, after ${up} s); starting it again in ${BACKOFF[$name]} s. See $LOG/$name.log"
    done
    for name in "${!RESTART_AT[@]}"; do
        if [ "$STATE" != running ]; then
            unset "RESTART_AT[$name]"
        elif [ "$SECONDS" -ge "${RESTART_AT[$name]}" ]; then
            unset "RESTART_AT[$name]"
            start "$name"
            say "${LABEL[$name]} started again (pid ${PID[$name]})"
        fi
    done
done
say "stopped"
exit "$STATUS"
