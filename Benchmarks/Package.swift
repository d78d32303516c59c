// swift-tools-version:6.1
// The Strata benchmark suite (ordo-one/benchmark). A separate package so that users of
// the Strata library do not inherit the benchmark dependency.
//
//     cd Benchmarks && swift package benchmark          # or: make bench-micro
import Foundation
import PackageDescription

// A path dependency is named after its folder: the repository root, whatever the clone is called.
let strataPackage = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

let package = Package(
    name: "StrataBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
    ],
    targets: [
        .executableTarget(
            name: "StrataCore",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Strata", package: strataPackage),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ],
            path: "Benchmarks/StrataCore",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    // Benchmark closures share state with their setup: the Swift 5 mode keeps that simple.
    swiftLanguageModes: [.v5]
)
