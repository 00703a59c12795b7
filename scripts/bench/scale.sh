#!/usr/bin/env bash
# Every cost-at-scale curve from one script (docs/benchmarks.md, "Cost at scale"): routes, API
# keys, rate-limit keys, browser sessions, verified tokens and profiles, N from 1 to its maximum,
# each point alternated against N = 1; writes the table and docs/scale.svg. Arguments go to
# scripts/bench/scale.py (--quick, --curves, --rounds, --duration, --no-write). Needs wrk, nginx,
# curl, taskset, python3's cryptography and joserfc, and the release binary.
set -euo pipefail
ulimit -n 65536 2>/dev/null || true
exec python3 "$(dirname "${BASH_SOURCE[0]}")/scale.py" "$@"
