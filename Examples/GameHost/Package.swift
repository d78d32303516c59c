// swift-tools-version:6.1
// A game host that embeds Strata, as a package of your own would: `swift run GameHost`.
//
// Here Strata comes from this repository by path; in your package, name it by its git URL:
//     .package(url: "https://github.com/OWNER/strata", from: "0.1.0"),
//     .product(name: "Strata", package: "strata"),
import Foundation
import PackageDescription

// A path dependency is named after its folder: the repository root, whatever the clone is called.
let strataPackage = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

let package = Package(
    name: "GameHost",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: "../.."),
        // `import Logging` (the engine takes a Logger) needs swift-log as a dependency of your own.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .executableTarget(
            name: "GameHost",
            dependencies: [
                .product(name: "Strata", package: strataPackage),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
