// swift-tools-version:6.1
// The benchmarks live in their own package so that `swift build` and `swift test` of the
// gateway never build ordo-one/benchmark. Run: swift package --package-path Benchmarks benchmark
import PackageDescription

let package = Package(
    name: "auth-gateway-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "auth-gateway", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "GatewayBenchmarks",
            dependencies: [
                .product(name: "AuthGateway", package: "auth-gateway"),
                .product(name: "AuthGatewayDemo", package: "auth-gateway"),
                .product(name: "AuthGatewayTesting", package: "auth-gateway"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "GatewayBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        )
    ]
)
