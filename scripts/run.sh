#!/usr/bin/env bash
# Start web + worker + beat on the embedded defaults (SQLite, filesystem broker)
# unless DATABASE_URL / CELERY_BROKER_URL say otherwise. Ctrl-C stops all of it.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
HOST="${ROCPATH_HOST:-127.0.0.1}"
PORT="${ROCPATH_PORT:-8000}"
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
$BIN/python manage.py migrate --no-input
$BIN/python manage.py collectstatic --no-input -v 0
LOGIN=$($BIN/python manage.py bootstrap_demo)
EXECUTOR=$($BIN/python -c 'import django; django.setup(); from jobs.executors import resolve_executor; print(resolve_executor())')
if [ -n "${ROCPATH_EXECUTOR:-}" ] && [ "$ROCPATH_EXECUTOR" != auto ]; then
    EXECUTOR="$EXECUTOR (ROCPATH_EXECUTOR)"
else
    case "$EXECUTOR" in
        docker) EXECUTOR="docker (containers of the job image on this host's engine)" ;;
        local) EXECUTOR="local (subprocesses: no Docker engine with the job image here; make images)" ;;
    esac
fi
mkdir -p var/log

pids=()
stop() {
    trap - INT TERM EXIT
    echo; echo "stopping rocpath…"
    kill -TERM "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true
}
trap stop INT TERM EXIT

$BIN/gunicorn config.wsgi --bind "$HOST:$PORT" --workers 2 --threads 4 \
    --access-logfile var/log/web-access.log --error-logfile var/log/web.log &
pids+=($!)
$BIN/celery -A config worker --loglevel INFO -n "worker@%h" --logfile var/log/worker.log &
pids+=($!)
$BIN/celery -A config beat --loglevel INFO --logfile var/log/beat.log &
pids+=($!)

sleep 2
cat <<MSG

  rocpath is running
    URL:      http://$HOST:$PORT/
    $LOGIN
    API docs: http://$HOST:$PORT/api/docs/
    executor: $EXECUTOR   logs: var/log/   Ctrl-C stops web, worker and beat

MSG
wait -n "${pids[@]}"
echo "a rocpath process exited; see var/log/" >&2
