#!/usr/bin/env bash
# The test tiers (docs/development.md). pytest's exit 5 ("no tests collected") is a
# failure here: a suite that silently runs nothing must never look green.
#
#   scripts/test.sh            everything (make test), on every core: pytest-xdist with
#                              --dist loadgroup (tests/tiers.py says what stays together)
#   scripts/test.sh --fast     the in-process tier (make test-fast): no subprocess, no
#                              server, no container, no browser; the test databases are
#                              kept between runs (--reuse-db), one per xdist worker
#   scripts/test.sh --sqlite   the page and API families' tests again on SQLite, the embedded
#                              defaults' database (make test runs it too): in-process ones and
#                              those that run a tool (``process``: a real scan's hipify-perl
#                              tables, a git clone), no worker, server, container or browser
# Other arguments go to pytest as they are.
set -uo pipefail
cd "$(dirname "$0")/.."
args=()
# What a newcomer's first run serves: every page, and the REST API.
SQLITE_FAMILIES=(tests/portal tests/jobs/api tests/results tests/roadmap tests/teams)
fast_tier() { .venv/bin/python -c 'from tests.tiers import FAST_EXPRESSION; print(FAST_EXPRESSION)'; }
if [ "${1:-}" = "--fast" ]; then
    shift
    # Its own kept databases: a whole-suite run (which drops what it made) never takes them.
    export ROCPATH_TEST_DB="${ROCPATH_TEST_DB:-test_rocpath_fast_$(pwd | sha256sum | cut -c1-8)}"
    args=(-m "$(fast_tier)" --reuse-db -n "${ROCPATH_TEST_WORKERS:-auto}")
elif [ "${1:-}" = "--sqlite" ]; then
    shift
    sqlite_dir=$(mktemp -d)
    trap 'rm -rf "$sqlite_dir"' EXIT
    export DATABASE_URL="sqlite:///$sqlite_dir/rocpath.sqlite3"
    unset ROCPATH_TEST_DB
    args=(-m "not (integration or browser or containers or faults or slow)"
        -n "${ROCPATH_TEST_WORKERS:-auto}")
    case " $* " in *" tests"*) ;; *) args+=("${SQLITE_FAMILIES[@]}") ;; esac
elif [ $# -eq 0 ]; then
    args=(-n "${ROCPATH_TEST_WORKERS:-auto}" --dist loadgroup --durations=30)
fi
.venv/bin/python -m pytest "${args[@]}" "$@"
code=$?
if [ "$code" -eq 5 ]; then
    echo "pytest collected no tests: failing on purpose" >&2
    exit 1
fi
exit "$code"
