#!/usr/bin/env bash
# What the patches in Benchmarks/NIOPatches would save the gateway, measured: builds the gateway
# (release) against its resolved dependencies with the patches applied — in a scratch copy of
# this commit, through `swift package edit`, never in the product's tree — then alternates it
# with the unpatched release binary of the same commit under `cpu-by-config.sh` (gateway CPU per
# request, the bench's load), in both orders.
#   scripts/bench/nio-patch.sh [REPS] [DURATION]     (defaults 8 and 5)
# PATCHES="<files>" picks patches (default: all of Benchmarks/NIOPatches/*.patch; each is named
# PACKAGE--WHAT.patch). H2=1 loads over h2c with h2load instead of HTTP/1.1 with wrk.
# BASE=<binary> names the unpatched build (default .build-release/release/auth-gateway: build
# it first from the same commit, `swift build -c release --scratch-path .build-release
# --product auth-gateway`). Needs what cpu-by-config.sh needs (the bench copy that
# scripts/bench/features.sh makes). Everything it makes is under .bench-work/nio-patched.
# BUILD_ONLY=1 stops after the build and prints the patched binary's path (for idle-rss.py
# --gateway, or any other script that takes a binary).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
REPS=${1:-8}
DURATION=${2:-5}
BASE=${BASE:-$ROOT/.build-release/release/auth-gateway}
WORK=$ROOT/.bench-work/nio-patched
[ -x "$BASE" ] || { echo "no unpatched release binary at $BASE" >&2; exit 1; }
[ -n "${BUILD_ONLY:-}" ] || [ -d "$ROOT/.bench-work/bench/keys" ] || { echo "no bench copy: run scripts/bench/features.sh once" >&2; exit 1; }
mkdir -p "$WORK"

# Each patch is named PACKAGE--WHAT.patch: the package's resolved revision is cloned from
# .build/checkouts, patched, and put in place of the dependency with `swift package edit`.
(cd "$ROOT" && swift package resolve >/dev/null)
revision() {
    python3 -c 'import json,sys
pins = json.load(open(sys.argv[1]))["pins"]
print(next(p["state"]["revision"] for p in pins if p["identity"] == sys.argv[2]))' "$ROOT/Package.resolved" "$1"
}
PATCHES=${PATCHES:-$(ls "$ROOT"/Benchmarks/NIOPatches/*.patch)}
packages=$(for patch in $PATCHES; do basename "$patch" | sed 's/--.*//'; done | sort -u)
for package in $packages; do
    rm -rf "${WORK:?}/$package"
    git clone -q "$ROOT/.build/checkouts/$package" "$WORK/$package"
    git -C "$WORK/$package" checkout -q "$(revision "$package")"
done
for patch in $PATCHES; do
    package=$(basename "$patch" | sed 's/--.*//')
    git -C "$WORK/$package" apply "$patch"
    echo "$package $(revision "$package") + $(basename "$patch")"
done

# This commit's sources (not the working tree's changes), built against it.
rm -rf "$WORK/tree" "$WORK/build/checkouts" "$WORK/build/workspace-state.json"
mkdir -p "$WORK/tree"
git -C "$ROOT" archive HEAD | tar -x -C "$WORK/tree"
cp "$ROOT/Package.resolved" "$WORK/tree/"
for package in $packages; do
    swift package --package-path "$WORK/tree" --scratch-path "$WORK/build" edit "$package" --path "$WORK/$package"
done
swift build -c release --package-path "$WORK/tree" --scratch-path "$WORK/build" --product auth-gateway
cp "$WORK/build/release/auth-gateway" "$WORK/auth-gateway-patched"
if [ -n "${BUILD_ONLY:-}" ]; then echo "$WORK/auth-gateway-patched"; exit 0; fi

source "$ROOT/scripts/bench/gateway-config.sh"
write_bench_gateway_config "$ROOT/.bench-work/bench" "$WORK/gateway.json"
run() { "$ROOT/scripts/bench/cpu-by-config.sh" ${H2:+-2} -r "$REPS" -d "$DURATION" "$@"; }
run "upstream=$WORK/gateway.json^$BASE" "patched=$WORK/gateway.json^$WORK/auth-gateway-patched"
run "patched=$WORK/gateway.json^$WORK/auth-gateway-patched" "upstream=$WORK/gateway.json^$BASE"
