// swift-tools-version:6.2
import PackageDescription

// The product targets, and AuthGatewayTesting (which release builds of the benchmarks link),
// build with every warning as an error (SE-0443), so a warning cannot slip into a release.
let warningsAsErrors: [SwiftSetting] = [.treatAllWarnings(as: .error)]

let package = Package(
    name: "auth-gateway",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "auth-gateway", targets: ["auth-gateway"]),
        .library(name: "AuthGateway", targets: ["AuthGateway"]),
        .library(name: "AuthGatewayDemo", targets: ["AuthGatewayDemo"]),
        .library(name: "AuthGatewayTesting", targets: ["AuthGatewayTesting"]),
    ],
    dependencies: [
        // Each dependency is held to the minor version this release is tested with (patch
        // releases only). To update: raise a version here, `swift package update`, run
        // `swift test`; see docs/operations.md.
        .package(url: "https://github.com/apple/swift-nio.git", .upToNextMinor(from: "2.101.3")),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", .upToNextMinor(from: "2.37.6")),
        .package(url: "https://github.com/apple/swift-nio-http2.git", .upToNextMinor(from: "1.46.0")),
        // OTLP/HTTP only: the gRPC exporter would build grpc-swift for nothing.
        .package(
            url: "https://github.com/swift-otel/swift-otel.git",
            .upToNextMinor(from: "1.6.0"),
            traits: ["OTLPHTTP"]
        ),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", .upToNextMinor(from: "1.7.3")),
        .package(url: "https://github.com/apple/swift-crypto.git", .upToNextMinor(from: "4.5.2")),
        .package(url: "https://github.com/apple/swift-asn1.git", .upToNextMinor(from: "1.7.4")),
        .package(url: "https://github.com/apple/swift-log.git", .upToNextMinor(from: "1.16.2")),
        .package(url: "https://github.com/apple/swift-argument-parser.git", .upToNextMinor(from: "1.8.2")),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", .upToNextMinor(from: "2.13.0")),
        .package(url: "https://github.com/vapor/postgres-nio.git", .upToNextMinor(from: "1.33.2")),
        // The messages of Envoy's ext_authz gRPC contract (authorizer mode); the generated code
        // is committed (scripts/generate-protos.sh). Already in the graph through swift-otel.
        .package(url: "https://github.com/apple/swift-protobuf.git", .upToNextMinor(from: "1.39.0")),
    ],
    targets: [
        .target(
            name: "AuthGateway",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: warningsAsErrors
        ),
        // `auth-gateway demo`: the sample auth service, echo backend and JWT signer. Not part
        // of the product library; the tests use its services as scripted peers.
        .target(
            name: "AuthGatewayDemo",
            dependencies: [
                "AuthGateway",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: warningsAsErrors
        ),
        // Harnesses shared by the tests and `Benchmarks/` (the embedded whole-request driver),
        // and the integration harness of the tests (gateways on 127.0.0.1:0, child processes,
        // PostgreSQL clusters, scripted peers, test clients). It reaches the library's
        // `package` declarations, never `@testable`, and does not use swift-testing (release
        // builds of the benchmarks link it); the library itself has nothing that exists only
        // for tests or benchmarks.
        .target(
            name: "AuthGatewayTesting",
            dependencies: [
                "AuthGateway",
                "AuthGatewayDemo",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: warningsAsErrors
        ),
        .executableTarget(
            name: "auth-gateway",
            dependencies: [
                "AuthGateway",
                "AuthGatewayDemo",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: warningsAsErrors
        ),
        .testTarget(
            name: "AuthGatewayTests",
            dependencies: [
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                "AuthGateway",
                "AuthGatewayDemo",
                "AuthGatewayTesting",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            exclude: ["Fixtures"]
        ),
    ]
)
