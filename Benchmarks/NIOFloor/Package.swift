// swift-tools-version:6.1
// What SwiftNIO and NIOHTTP2 cost on their own, with nothing of the gateway: the floor under
// the gateway's HTTP/1.1 and HTTP/2 numbers (docs/benchmarks.md, "the floor under the HTTP/2
// targets"). Its own package, so that `swift build` of the gateway never builds it.
//   swift build -c release --package-path Benchmarks/NIOFloor
//   Benchmarks/NIOFloor/.build/release/nio-floor PORT TOKEN_FILE
//   Benchmarks/NIOFloor/.build/release/nio-relay-floor PORT BACKEND_PORT TOKEN_FILE
//   Benchmarks/NIOFloor/.build/release/nio-lean-proxy-floor PORT BACKEND_PORT TOKEN_FILE
import PackageDescription

let package = Package(
    name: "nio-floor",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
    ],
    targets: [
        .target(
            name: "FloorSupport",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "nio-floor",
            dependencies: [
                "FloorSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ]
        ),
        .executableTarget(
            name: "nio-relay-floor",
            dependencies: [
                "FloorSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "nio-lean-proxy-floor",
            dependencies: [
                "FloorSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
    ]
)
