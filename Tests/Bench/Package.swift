// swift-tools-version:6.1
import Foundation
import PackageDescription

// The benchmark (scripts/bench), a package of its own so that building Sesame needs none of
// what only the benchmark uses (libdbus, its C clients and floor server). It measures the
// sesamed and sesamectl of Sesame's own release build; from Sesame it takes only the store, to
// fill one before sesamed starts.

// A package found by path is known by its directory's name (without a `.git` ending), which
// is whatever the checkout is called.
let sesame = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().lastPathComponent.replacing(/\.git$/, with: "")

let package = Package(
    name: "sesame-bench",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: "../.."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        .executableTarget(
            name: "sesame-bench",
            dependencies: [
                .product(name: "SesameBenchSupport", package: sesame),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // It uses Foundation (Process, JSONSerialization), which the release build links only
            // for a program that names it (scripts/lib/release-build).
            linkerSettings: [.linkedLibrary("Foundation")]
        ),
        // sesame-bench's C programs (scripts/bench runs them as processes): the floor server, the
        // Varlink load and subscriber client, and the D-Bus reference service and clients.
        .target(name: "CBenchSupport"),
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1", providers: [.apt(["libdbus-1-dev"])]),
        .executableTarget(name: "bench-floor"),
        .executableTarget(name: "bench-client", dependencies: ["CBenchSupport"]),
        .executableTarget(name: "bench-dbus", dependencies: ["CBenchSupport", "CDBus"]),
    ],
    swiftLanguageModes: [.v6]
)
