// swift-tools-version:6.1
import PackageDescription

// The sync service, `strata-server`: a package of its own, so that the engine, `strata` and
// `make run` never resolve nor build SwiftNIO, and so `make test` can build the service
// while the engine's tests run. It takes from the engine's package only what speaks to
// PostgreSQL (StrataPQ, on libpq) and the API's JSON types (StrataWire): nothing of the engine.
let package = Package(
    name: "StrataServer",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "strata-server", targets: ["StrataServerCommand"]),
    ],
    dependencies: [
        .package(name: "Strata", path: ".."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/LebJe/TOMLKit", exact: "0.6.0"),
    ],
    targets: [
        // OpenSSL's libcrypto (Debian's libssl-dev): the tokens' signatures (HMAC, Ed25519,
        // ECDSA) and digests. The system's library, not a second copy of one compiled here.
        .systemLibrary(
            name: "CStrataCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        // OpenSSL's libssl: TLS on the service's connections (`[server] tls_certificate`),
        // driven through memory buffers by a NIO handler of ours.
        .systemLibrary(
            name: "CStrataTLS",
            pkgConfig: "libssl",
            providers: [.apt(["libssl-dev"])]
        ),
        .target(
            name: "StrataServer",
            dependencies: [
                "CStrataCrypto",
                "CStrataTLS",
                .product(name: "StrataPQ", package: "Strata"),
                .product(name: "StrataWire", package: "Strata"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "TOMLKit", package: "TOMLKit"),
            ]
        ),
        .executableTarget(
            name: "StrataServerCommand",
            dependencies: [
                "StrataServer",
                .product(name: "StrataPQ", package: "Strata"),
                .product(name: "StrataWire", package: "Strata"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "StrataServerTests",
            dependencies: [
                "StrataServer",
                .product(name: "StrataWire", package: "Strata"),
                .product(name: "StrataPQ", package: "Strata"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
