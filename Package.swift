// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "Strata",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Strata", targets: ["Strata"]),
        .library(name: "StrataPostgres", targets: ["StrataPostgres"]),
        .library(name: "StrataPQ", targets: ["StrataPQ"]),
        .library(name: "StrataWire", targets: ["StrataWire"]),
        .library(name: "StrataHTTP", targets: ["StrataHTTP"]),
        .library(name: "StrataServiceLifecycle", targets: ["StrataServiceLifecycle"]),
        // For a host's tests: a clock that moves when told (virtual time), and a VFS that
        // cuts the power or fails an I/O call. Never linked into the library.
        .library(name: "StrataTesting", targets: ["StrataTesting"]),
        .executable(name: "strata", targets: ["StrataHost"]),
        // The sync service. Only its own targets reach SwiftNIO: `strata` and the libraries
        // above never link it (`make run` builds the `strata` product alone).
        .executable(name: "strata-server", targets: ["StrataServerCommand"]),
    ],
    dependencies: [
        // A range, not one version: a host that uses GRDB itself can resolve both. GRDB is not
        // part of the public API (the library hides its types behind `package`).
        .package(url: "https://github.com/groue/GRDB.swift", "7.10.0" ..< "8.0.0"),
        .package(url: "https://github.com/LebJe/TOMLKit", .upToNextMinor(from: "0.6.0")),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // `swift package generate-documentation --target Strata` (the catalog: Sources/Strata/Strata.docc).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // The sync service's HTTP (strata-server only).
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        // libupower-glib, UPower's client library (Debian: libupower-glib-dev).
        .systemLibrary(
            name: "CUPowerGlib",
            pkgConfig: "upower-glib",
            providers: [.apt(["libupower-glib-dev"])]
        ),
        // What the two D-Bus probes share: a private bus connection, bounded waits for signals.
        // GIO's headers come through libupower-glib's pkg-config (gio-2.0's own flags carry
        // -pthread, which SwiftPM refuses with a warning at every build).
        .target(
            name: "CStrataDBus",
            dependencies: ["CUPowerGlib"],
            linkerSettings: [.linkedLibrary("gio-2.0"), .linkedLibrary("gobject-2.0"), .linkedLibrary("glib-2.0")]
        ),
        // The power probe: libupower-glib and power-profiles-daemon, every D-Bus call bounded.
        .target(
            name: "CStrataPower",
            dependencies: ["CUPowerGlib", "CStrataDBus"],
            linkerSettings: [.linkedLibrary("gio-2.0"), .linkedLibrary("gobject-2.0"), .linkedLibrary("glib-2.0")]
        ),
        // The network probe: NetworkManager's state and connectivity, every D-Bus call bounded.
        .target(
            name: "CStrataNetwork",
            dependencies: ["CStrataDBus"],
            linkerSettings: [.linkedLibrary("gio-2.0"), .linkedLibrary("gobject-2.0"), .linkedLibrary("glib-2.0")]
        ),
        // The counting VFS: sync requests and bytes written per file kind (sqlite3.h via GRDBSQLite).
        .target(
            name: "CStrataVFS",
            dependencies: [.product(name: "GRDBSQLite", package: "GRDB.swift")]
        ),
        // The fault-injecting VFS (power cuts, I/O errors): StrataTesting's, not the library's.
        .target(
            name: "CStrataFaultVFS",
            dependencies: [.product(name: "GRDBSQLite", package: "GRDB.swift")]
        ),
        // A cache prefetch hint (the tick thread's pulls, `World+Prefetch.swift`).
        .target(name: "CStrataPrefetch"),
        .target(
            name: "Strata",
            dependencies: [
                // The D-Bus probes (GIO, libupower-glib) on Linux only: elsewhere the power
                // and network monitors report no source and the engine uses the fallbacks
                // (`UPowerProbe.swift`, `NetworkProbe.swift`). The module names no GIO symbol
                // either way: the probes' headers are plain C.
                .target(name: "CStrataPower", condition: .when(platforms: [.linux])),
                .target(name: "CStrataNetwork", condition: .when(platforms: [.linux])),
                "CStrataPrefetch",
                "CStrataVFS",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "TOMLKit", package: "TOMLKit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        // What tests need and the product does not: ManualClock, FaultVFS (`strata torture`'s too).
        .target(
            name: "StrataTesting",
            dependencies: [
                "Strata",
                "CStrataFaultVFS",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]
        ),
        // libpq, PostgreSQL's client library (Debian's libpq-dev), for the sync transport.
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // libpq in Swift: a connection whose every call is bounded by a timeout, text
        // parameters and results, notifications. Nothing of the engine: the sync service
        // (StrataServer) uses it too.
        .target(
            name: "StrataPQ",
            dependencies: ["CLibPQ"]
        ),
        // The sync transport to a PostgreSQL server, on libpq: a separate library, so an
        // engine that does not sync does not link it.
        .target(
            name: "StrataPostgres",
            dependencies: [
                "Strata",
                "CLibPQ",
                "StrataPQ",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The sync service's API as JSON types, on Foundation alone: the device's transport
        // and the service (StrataServer) both speak it.
        .target(name: "StrataWire"),
        // The sync transport to a Strata sync service (`strata-server`, StrataServer)
        // over HTTP, on Foundation's URLSession. A library of its own: an engine that does
        // not sync does not link libcurl.
        .target(
            name: "StrataHTTP",
            dependencies: [
                "Strata",
                "StrataWire",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The engine as a swift-service-lifecycle Service (a ServiceGroup, SIGTERM = clean shutdown).
        .target(
            name: "StrataServiceLifecycle",
            dependencies: [
                "Strata",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The drawing canvas: the document `strata sim` runs, `strata torture` faults and
        // `strata bench --workload canvas` measures (every kind of data the engine keeps).
        .target(
            name: "StrataCanvas",
            dependencies: ["Strata"]
        ),
        // The fsync benchmark runner: the workloads, the strategies, the report.
        .target(
            name: "StrataBench",
            dependencies: [
                "Strata",
                "StrataCanvas",
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "StrataHost",
            dependencies: [
                "Strata",
                "StrataTesting",
                "StrataBench",
                "StrataCanvas",
                "StrataHTTP",
                "StrataPostgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // Examples/GameHost's source, built with everything else (`make test` runs it): one
        // package graph, not two. The example's own Package.swift is how a user's package
        // names Strata; ExampleTests checks that manifest too.
        .executableTarget(
            name: "GameHostExample",
            dependencies: [
                "Strata",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Examples/GameHost/Sources/GameHost"
        ),
        // The README's embedding, compiled (ExampleTests checks the README shows this file).
        .executableTarget(
            name: "EmbeddingSnippet",
            dependencies: [
                "Strata",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Examples/Embedding"
        ),
        // The sync service, `strata-server`: HTTP (Hummingbird, SwiftNIO) in front of
        // PostgreSQL. It takes from the rest of the package only what speaks to PostgreSQL
        // (StrataPQ) and the API's JSON types (StrataWire): nothing of the engine.
        //
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
                "StrataPQ",
                "StrataWire",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
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
                "StrataPQ",
                "StrataWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // What the two test targets share (a tool started and waited for without Foundation's
        // Process): a target only they depend on.
        .target(name: "StrataTestSupport", path: "Tests/StrataTestSupport"),
        .testTarget(
            name: "StrataServerTests",
            dependencies: [
                "StrataTestSupport",
                "StrataServer",
                "StrataWire",
                "StrataPQ",
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "StrataTests",
            dependencies: [
                "StrataTestSupport",
                "Strata",
                "StrataTesting",
                "StrataBench",
                "StrataCanvas",
                "StrataHTTP",
                "StrataPostgres",
                "StrataServiceLifecycle",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            // Databases the tests copy and open (PayloadVersionTests), found by path.
            exclude: ["Fixtures"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
