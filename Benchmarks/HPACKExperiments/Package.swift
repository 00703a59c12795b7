// swift-tools-version:6.1
// Experiments on two costs inside NIOHTTP2 and NIOHPACK that the HTTP/2 floor profile found
// (docs/benchmarks.md, "the floor under the HTTP/2 targets"): header field validation and
// HPACK Huffman decoding. Each copies the upstream code, next to the patch that would be offered
// upstream, checks that both agree and measures both. Its own package, so that `swift build` of
// the gateway never builds it. See README.md.
//   swift build -c release --package-path Benchmarks/HPACKExperiments
//   Benchmarks/HPACKExperiments/.build/release/hpack-experiments [TOKEN_FILE]
import PackageDescription

let package = Package(
    name: "hpack-experiments",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
    ],
    targets: [
        .executableTarget(
            name: "hpack-experiments",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ]
        )
    ]
)
