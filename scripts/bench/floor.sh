#!/usr/bin/env bash
# The floor under the gateway's HTTP/2 and HTTP/1.1 numbers: `Benchmarks/NIOFloor` (SwiftNIO and
# NIOHTTP2 with none of the gateway, every request answered at once, no backend) loaded by
# the comparison kit's h2compare.sh --with-h1 next to HAProxy h2 and h2 + jwt_verify, pinned the
# same way (~1.5 minutes). What it shows: the most any server on NIOHTTP2 can do on this load, and
# what a stream costs NIOHTTP2 against what a request costs SwiftNIO (docs/benchmarks.md).
# Uses the bench copy in .bench-work/bench (scripts/bench/features.sh makes one).
#   scripts/bench/floor.sh [h2compare options, e.g. -r 5]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BENCH=$ROOT/.bench-work/bench
[ -d "$BENCH/keys" ] || { echo "no bench copy at $BENCH: run scripts/bench/features.sh once" >&2; exit 1; }
swift build -c release --package-path "$ROOT/Benchmarks/NIOFloor" >&2
FLOOR=$ROOT/Benchmarks/NIOFloor/.build/release/nio-floor
cd "$BENCH"
timeout 900 ./h2compare.sh --with-h1 "$@" --gw-cmd "$FLOOR 18095 $BENCH/keys/tokens/valid-rs256.jwt" floor=127.0.0.1:18095
