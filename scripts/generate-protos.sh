#!/usr/bin/env bash
# Regenerates Sources/AuthGateway/Authorizer/Generated/*.pb.swift from the .proto files under
# protos/ (trimmed copies of Envoy's ext_authz messages and google.rpc.Status; each file's header
# says where it comes from and what was removed). The generated code is committed, so a build
# never runs a generator; run this only after changing a .proto file or the swift-protobuf
# version:
#
#   scripts/generate-protos.sh
#
# What it uses:
#   - protoc: the first on PATH, else Debian's `protobuf-compiler` (installed with apt-get when
#     running as root);
#   - protoc-gen-swift: $PROTOC_GEN_SWIFT when set, else built (release) from swift-protobuf at
#     $SWIFT_PROTOBUF_VERSION (default below, the version Package.swift requires) in a scratch
#     folder outside the repository ($SCRATCH, default ${TMPDIR:-/tmp}/auth-gateway-protoc-gen-swift),
#     cloned from $SWIFT_PROTOBUF_GIT (default: the local package mirror when there is one, else
#     GitHub). The first build takes a few minutes; later runs reuse it.
#   - the well-known types (google/protobuf/*.proto) from that same swift-protobuf checkout; the
#     generated code takes them from the SwiftProtobuf module.
# Options: Visibility=Package (the types are the package's, never public API of the library) and
# FileNaming=PathToUnderscores (envoy_service_auth_v3_external_auth.pb.swift, ...).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROTOS=$ROOT/protos
OUT=$ROOT/Sources/AuthGateway/Authorizer/Generated
SWIFT_PROTOBUF_VERSION=${SWIFT_PROTOBUF_VERSION:-1.39.0}
SCRATCH=${SCRATCH:-${TMPDIR:-/tmp}/auth-gateway-protoc-gen-swift}
if [ -z "${SWIFT_PROTOBUF_GIT:-}" ]; then
    if [ -d /opt/swift-packages/apple/swift-protobuf.git ]; then
        SWIFT_PROTOBUF_GIT=/opt/swift-packages/apple/swift-protobuf.git
    else
        SWIFT_PROTOBUF_GIT=https://github.com/apple/swift-protobuf.git
    fi
fi

# protoc
if ! command -v protoc >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing protobuf-compiler (Debian)"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq protobuf-compiler >/dev/null
    else
        echo "protoc is missing: apt-get install -y protobuf-compiler" >&2
        exit 1
    fi
fi

# swift-protobuf checkout at the pinned version (for protoc-gen-swift and the well-known types)
CHECKOUT=$SCRATCH/swift-protobuf-$SWIFT_PROTOBUF_VERSION
if [ ! -d "$CHECKOUT/.git" ]; then
    mkdir -p "$SCRATCH"
    git clone --quiet "$SWIFT_PROTOBUF_GIT" "$CHECKOUT"
fi
git -C "$CHECKOUT" -c advice.detachedHead=false checkout --quiet "$SWIFT_PROTOBUF_VERSION"
WELL_KNOWN=$CHECKOUT/Protos/Sources/SwiftProtobuf
if [ ! -f "$WELL_KNOWN/google/protobuf/timestamp.proto" ]; then
    echo "no well-known types under $WELL_KNOWN" >&2
    exit 1
fi

# protoc-gen-swift
if [ -z "${PROTOC_GEN_SWIFT:-}" ]; then
    PROTOC_GEN_SWIFT=$CHECKOUT/.build/release/protoc-gen-swift
    if [ ! -x "$PROTOC_GEN_SWIFT" ]; then
        echo "building protoc-gen-swift $SWIFT_PROTOBUF_VERSION in $CHECKOUT (a few minutes)"
        (cd "$CHECKOUT" && swift build -c release --product protoc-gen-swift)
    fi
fi
generator_version=$("$PROTOC_GEN_SWIFT" --version)
case "$generator_version" in
*"$SWIFT_PROTOBUF_VERSION"*) ;;
*)
    echo "protoc-gen-swift is '$generator_version', not $SWIFT_PROTOBUF_VERSION" >&2
    exit 1
    ;;
esac

echo "$(protoc --version), $generator_version"
mkdir -p "$OUT"
rm -f "$OUT"/*.pb.swift
cd "$PROTOS"
protos=$(find . -name '*.proto' | sed 's|^\./||' | LC_ALL=C sort)
# shellcheck disable=SC2086 # one word per .proto path (none has a space)
protoc \
    --plugin=protoc-gen-swift="$PROTOC_GEN_SWIFT" \
    --proto_path="$PROTOS" \
    --proto_path="$WELL_KNOWN" \
    --swift_opt=Visibility=Package \
    --swift_opt=FileNaming=PathToUnderscores \
    --swift_out="$OUT" \
    $protos
ls "$OUT"
