#!/usr/bin/env python3
"""The per-stage CPU budget of a request (docs/benchmarks.md, "Per-stage CPU budget").

Reads a `perf record -g` profile of the gateway (scripts/bench/profile-h2.sh writes one) and
charges every sample to one stage: the stage of the sample's leaf-most frame that a rule below
names (the gateway's own functions by type and method, NIOHTTP2/HPACK as a stage of their own;
generic helpers such as ASCII comparisons, copies and destroys are charged to their caller).
Kernel time is charged to the stage whose code made the system call (writes), or to "read"
(a socket read runs before any gateway code is on the stack). Prints a Markdown table: share
of the samples, microseconds of CPU per request (samples x sampling period / requests), and
the kernel's part of each. Also writes the folded stacks next to the profile (`folded.txt`,
the input of any flame graph tool: flamegraph.pl, inferno, speedscope).

    stage-budget.py PERF_DATA REQUESTS [--frequency 999]
"""
import argparse
import collections
import os
import re
import subprocess
import sys

# (stage, pattern over the demangled "Type.method" of a frame). First match wins, per frame.
RULES = [
    ("parse", r"^(RequestParser|RepeatedFieldTexts|HeadScanner|RequestFraming|HeaderNames|RequestTarget)\b|HTTP1ServerConnection\.parseRequests|HTTP2ServerStream\.(receivedHeaders|requestHead)|HTTP2Messages"),
    ("auth (token cache hit)", r"^(RequestAuthenticator|CredentialExtraction|TokenExtractor|RecentTokens|JWTVerification|VerifiedTokenCache|ProofOfPossession|ProfileLookup|RequirementCheck|IdentityFields|IdentityLookup|TokenDigest|AuthRequest|SessionAuthentication|APIKeyAuthentication|CookieHeader|SignInCookies)\b"),
    ("rewrite", r"^(HeaderRewriter|ForwardingPolicy|UpstreamRequestHead|FittingFields)\b|HTTP2ServerStream\.upstreamHead"),
    ("plan (route, decision)", r"^(RequestPlanner|RouteTable|AccessDecision|CORS|DecisionInput|RequestID|ExchangeHandler\.decide|RateLimit)"),
    ("lease", r"^(UpstreamPool|UpstreamRegistry|PoolStateMachine|TargetSelector|TargetAvailability|ExchangeHandler\.lease|UpstreamConnection\.release)"),
    ("write request", r"^(HTTPWriter\.(requestHead|field\b)|UpstreamConnection\.sendHead|UpstreamLease\.flush|FlushCoalescer|UpstreamHTTP2Connection\.send)|HTTP1ServerConnection\.sendRequest|HTTPWriter\.requestHeadLength"),
    ("read response", r"^(ResponseParser|UpstreamResponseHead|UpstreamHandler|HTTP2ResponseHead|UpstreamStream)\b"),
    ("respond", r"^(HTTPWriter\.(clientResponseHead|fields)|HTTP1ResponseHead|ResponseFraming)|HTTP1ServerConnection\.(flushResponse|writeResponse|writeResponseHead|upstreamResponse|finishResponse)|HTTP2ServerStream\.(respond|write|upstreamResponse|send)|HTTP2ServerConnection\.(flush|write)"),
    ("HTTP/2 frames + HPACK (NIOHTTP2)", r"^(NIOHTTP2|NIOHPACK)\."),
]
# Frames that never decide a stage: charged to the caller.
GENERIC = re.compile(
    r"^(ASCII\.|_ChannelInboundHandler|_ChannelOutboundHandler|outlined |destroy for|initializeWithCopy|assignWithCopy|assignWithTake|initializeWithTake|"
    r"type metadata|protocol witness for Swift|value witness|merged |reabstraction|Swift\.|__swift|swift_)"
)
GATEWAY_MODULES = ("AuthGateway.",)
OTHER = "connection + exchange bookkeeping (other gateway code)"
READ = "read (socket reads, no gateway code on the stack)"
LOOP = "event loop (epoll, scheduling, NIO without gateway code)"


def demangle(symbols):
    names = {}
    unique = sorted(s for s in symbols if s.startswith("$s"))
    if not unique:
        return names
    out = subprocess.run(
        ["swift", "demangle", "--simplified", "--compact"], input="\n".join(unique), capture_output=True,
        text=True, check=True).stdout.splitlines()
    for raw, name in zip(unique, out):
        name = re.sub(r"^(specialized |partial apply for |protocol witness for |closure #\d+ in |implicit closure #\d+ in |variable initialization expression of |static )+", "", name)
        name = re.sub(r"\(.*", "", name)
        names[raw] = name
    return names


def module_of(raw):
    match = re.match(r"\$s(\d+)", raw)
    if not match:
        return ""
    length = int(match.group(1))
    start = match.end()
    return raw[start:start + length]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("perf_data")
    parser.add_argument("requests", type=int)
    parser.add_argument("--frequency", type=float, default=999.0)
    parser.add_argument("--explain", metavar="STAGE", help="also list the frames that decided this stage")
    args = parser.parse_args()
    script = subprocess.run(
        ["perf", "script", "-i", args.perf_data, "--no-demangle", "-F", "ip,sym,dso"], capture_output=True,
        text=True, check=True).stdout
    samples = [block for block in script.split("\n\n") if block.strip()]
    stacks = []
    symbols = set()
    for block in samples:
        frames = []
        for line in block.splitlines():
            parts = line.strip().split(None, 1)
            if len(parts) < 2:
                continue
            symbol = re.sub(r"\+0x[0-9a-f]+$", "", parts[1].rsplit(" (", 1)[0])
            dso = parts[1].rsplit(" (", 1)[-1].rstrip(")") if " (" in parts[1] else ""
            frames.append((symbol, "kernel" in dso))
            symbols.add(symbol)
        if frames:
            stacks.append(frames)
    names = demangle(symbols)
    rules = [(stage, re.compile(pattern)) for stage, pattern in RULES]
    total = collections.Counter()
    kernel = collections.Counter()
    folded = collections.Counter()
    deciders = collections.Counter()
    for frames in stacks:
        stage = None
        for symbol, _ in frames:  # leaf first
            module = module_of(symbol)
            name = names.get(symbol, symbol)
            if module in ("NIOHTTP2", "NIOHPACK"):
                stage = RULES[-1][0]
                break
            if module != "AuthGateway" or GENERIC.match(name):
                continue
            stage = next((s for s, rule in rules if rule.search(name)), OTHER)
            deciders[(stage, name, frames[0][1])] += 1
            break
        if stage is None:
            text = " ".join(names.get(s, s) for s, _ in frames)
            stage = READ if re.search(r"readFromSocket|Socket\.read|\bread\b", text) else LOOP
        total[stage] += 1
        if frames[0][1]:
            kernel[stage] += 1
        folded[";".join(names.get(s, s) for s, _ in reversed(frames))] += 1
    with open(os.path.join(os.path.dirname(os.path.abspath(args.perf_data)), "folded.txt"), "w") as out:
        for stack, count in folded.most_common():
            out.write(f"{stack} {count}\n")
    count = sum(total.values())
    per_request = 1e6 / args.frequency / args.requests
    print(f"{count} samples at {args.frequency:g} Hz over {args.requests} requests: "
          f"{count * per_request:.1f} µs CPU per request")
    print()
    print("| stage | share | µs per request | of which kernel |")
    print("|---|---:|---:|---:|")
    order = [s for s, _ in RULES] + [OTHER, READ, LOOP]
    for stage in order:
        if total[stage] == 0:
            continue
        print(f"| {stage} | {100 * total[stage] / count:.1f} % | {total[stage] * per_request:.2f} | "
              f"{kernel[stage] * per_request:.2f} |")
    if args.explain:
        print()
        for (stage, name, in_kernel), n in deciders.most_common():
            if stage.startswith(args.explain):
                print(f"{n:6d} {'kernel ' if in_kernel else ''}{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
