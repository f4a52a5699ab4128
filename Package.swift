// swift-tools-version:6.1
import PackageDescription

// The order scripts/lib/release-build lays sesamed's functions out in, which it makes for the
// sources it builds and names here for sesamed's link alone: given to every link, as a
// `swift build -Xlinker` would, it names functions the other programs and the build's own tools
// lack, and lld warns of each.
let sesamedLayout: [LinkerSetting] =
    Context.environment["SESAME_SESAMED_ORDER"].flatMap { order in
        order.isEmpty ? nil : [.unsafeFlags(["-Xlinker", "--symbol-ordering-file=\(order)"])]
    } ?? []

let package = Package(
    name: "sesame",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "sesamed", targets: ["sesamed"]),
        .executable(name: "sesamectl", targets: ["sesamectl"]),
        .executable(name: "sesamectl-commands", targets: ["sesamectl-commands"]),
        .library(name: "SesameClient", targets: ["SesameClient"]),
        // For the project's own benchmark (Tests/Bench, a package of its own), which fills a
        // store before sesamed starts; not an interface for other programs.
        .library(name: "SesameBenchSupport", targets: ["SesameCore", "SesameStore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/swift-extras/swift-extras-base64", from: "1.2.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
    ],
    targets: [
        .systemLibrary(
            name: "CSystemd",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        // Header only: sd-bus's types, for sesame-notify, which loads libsystemd itself.
        .systemLibrary(name: "CSessionBus"),
        // Header only (struct ucred, accept4), so SesameVarlink and its clients link no libsystemd.
        .systemLibrary(name: "CPeerCredentials"),
        // Header only: sesamed's own process hardening (no core dumps), a variadic prctl wrapped.
        .systemLibrary(name: "CProcessHardening"),
        // Header only: the Linux timer that tells sesamed the wall clock was set or it resumed.
        .systemLibrary(name: "CWallClock"),
        // The wire at the base, on the C library and the standard library alone (no NIO, no
        // Foundation): Varlink's JSON values, errors and typed methods, the strict JSON scan
        // sesamed checks every message with, one call made with blocking system calls, and where
        // sesamed listens. A program of this module alone (sesamectl's token shortcut) starts as
        // fast as a C client and stays small.
        .target(name: "SesameWire", plugins: ["RefuseFoundation"]),
        // The session engine runs on an event loop of its own (NIOCore names it; the daemon and the
        // tests make it), where saving may block without holding up a thread of the pool.
        .target(
            name: "SesameCore",
            dependencies: [.product(name: "NIOCore", package: "swift-nio")],
            plugins: ["RefuseFoundation"]
        ),
        .target(
            name: "SesameCoreTesting",
            dependencies: ["SesameCore", .product(name: "NIOPosix", package: "swift-nio")]
        ),
        // The Varlink contract, written once for the daemon and SesameClient: typed methods on the
        // wire and the engine's types, no transport (NIOCore only through SesameCore), no libsystemd.
        .target(name: "SesameProtocol", dependencies: ["SesameCore", "SesameWire"], plugins: ["RefuseFoundation"]),
        // Varlink's transports on NIO: the server, the client, framing into NIO's buffers.
        .target(
            name: "SesameVarlink",
            dependencies: [
                "CPeerCredentials", "SesameWire",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            plugins: ["RefuseFoundation"]
        ),
        // Calls a Varlink handler in-process with typed parameters and collects its replies, or
        // serves it on a socket of a test's own.
        .target(
            name: "SesameVarlinkTesting",
            dependencies: ["SesameVarlink", .product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "SesameStore",
            dependencies: [
                "SesameCore",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            plugins: ["RefuseFoundation"]
        ),
        .target(
            name: "SesameProviders",
            dependencies: [
                "SesameCore",
                "SesameProtocol",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ExtrasBase64", package: "swift-extras-base64"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            plugins: ["RefuseFoundation"]
        ),
        .target(
            name: "SesameDaemon",
            dependencies: [
                "CSystemd", "CProcessHardening", "CWallClock",
                "SesameCore",
                "SesameWire",
                "SesameStore",
                "SesameProtocol",
                "SesameProviders",
                "SesameVarlink",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "TOMLKit", package: "TOMLKit"),
            ],
            plugins: ["EmbedInterfaces", "RefuseFoundation"]
        ),
        // libqrencode: the QR code of the verification URI that `sesamectl login` draws.
        .systemLibrary(name: "CQREncode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),
        .executableTarget(name: "sesame-interface-embedder"),
        // Every module of a program shipped without Foundation refuses `import Foundation` when it
        // builds, naming the line (release or debug alike).
        .executableTarget(name: "sesame-foundation-check"),
        .plugin(
            name: "RefuseFoundation",
            capability: .buildTool(),
            dependencies: ["sesame-foundation-check"],
            path: "Sources/RefuseFoundationPlugin"
        ),
        // Fuzz targets (scripts/fuzz builds them with libFuzzer; built plainly, they replay files).
        // libFuzzer's driver, declared; scripts/fuzz links its definition.
        .systemLibrary(name: "CLibFuzzer"),
        .target(name: "SesameFuzzing", dependencies: ["CLibFuzzer", "SesameCore"]),
        .executableTarget(
            name: "fuzz-varlink",
            dependencies: [
                "SesameFuzzing", "SesameWire", "SesameProtocol", "SesameVarlink",
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .executableTarget(name: "fuzz-config", dependencies: ["SesameFuzzing", "SesameDaemon"]),
        .executableTarget(name: "fuzz-store", dependencies: ["SesameFuzzing", "SesameStore"]),
        .executableTarget(
            name: "fuzz-oauth",
            dependencies: [
                "SesameFuzzing", "SesameCore", "SesameProtocol", "SesameProviders",
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .plugin(
            name: "EmbedInterfaces",
            capability: .buildTool(),
            dependencies: ["sesame-interface-embedder"],
            path: "Sources/EmbedInterfacesPlugin"
        ),
        .target(
            name: "SesameClient",
            dependencies: ["SesameCore", "SesameWire", "SesameProtocol", "SesameVarlink"],
            plugins: ["RefuseFoundation"]
        ),
        .executableTarget(
            name: "sesamed",
            dependencies: [
                "SesameDaemon",
                "SesameCore",
                "SesameWire",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            linkerSettings: sesamedLayout,
            plugins: ["RefuseFoundation"]
        ),
        // The README's example program: SesameClient's `authorized` and `followEvents`, nothing else.
        // The release build stops every module from linking Foundation by itself (see
        // scripts/lib/release-build); this program uses it, so it names it.
        .executableTarget(
            name: "sesame-example",
            dependencies: ["SesameClient"],
            linkerSettings: [.linkedLibrary("Foundation")]
        ),
        // A toolchain fault the release build met (a function in a task-local), reproduced alone.
        .executableTarget(name: "repro-task-local-function"),
        // git's and docker's credential helpers, over SesameClient: names sesamectl-commands
        // answers to (see its ProgramName), so they are links, not programs of their own.
        .target(
            name: "SesameCredentialHelper",
            dependencies: [
                "SesameClient", "SesameCore", "SesameProtocol", "SesameWire",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "TOMLKit", package: "TOMLKit"),
            ],
            plugins: ["RefuseFoundation"]
        ),
        // The one command line sesamectl answers itself, and its one call: a library, so that the
        // unit tests can link it (a test bundle cannot link a static executable).
        .target(name: "SesamectlShortcut", dependencies: ["SesameWire"], plugins: ["RefuseFoundation"]),
        // `sesamectl` as people and scripts run it: answers `sesamectl token ACCOUNT` itself, with
        // one blocking call, and hands every other command line to sesamectl-commands (exec, the
        // same process). Linked of the wire alone and fully static, so it starts as fast as a C
        // client, where a program linking the event loop, Foundation and the command parser is
        // several times slower. Not a link setting of the release build: the debug build the
        // unit tests use runs the same program.
        .executableTarget(
            name: "sesamectl",
            dependencies: ["SesameWire", "SesamectlShortcut"],
            linkerSettings: [.unsafeFlags(["-static-executable"])],
            plugins: ["RefuseFoundation"]
        ),
        // Every command of sesamectl's, `token` included, for the command lines the shortcut leaves;
        // and, under their names, the credential helpers and sesame-notify (sd-bus, loaded only
        // there, for the desktop's notification server).
        .executableTarget(
            name: "sesamectl-commands",
            dependencies: [
                "SesameWire",
                "SesameCredentialHelper",
                "CPeerCredentials",
                "CQREncode",
                "CSessionBus",
                "SesameClient",
                "SesameCore",
                "SesameProtocol",
                "SesameVarlink",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            plugins: ["RefuseFoundation"]
        ),
        .testTarget(
            name: "SesameCoreTests",
            dependencies: ["SesameCore", "SesameCoreTesting", .product(name: "NIOCore", package: "swift-nio")]
        ),
        .testTarget(name: "FoundationCheckTests", dependencies: ["sesame-foundation-check"]),
        .testTarget(
            name: "sesamectlTests",
            dependencies: ["SesamectlShortcut", "sesamectl-commands", "SesameProtocol", "SesameWire"]
        ),
        .testTarget(name: "SesameCredentialHelperTests", dependencies: ["SesameCredentialHelper"]),
        .testTarget(
            name: "SesameProtocolTests",
            dependencies: ["SesameProtocol", "SesameCore", "SesameVarlink", "SesameWire"]
        ),
        .testTarget(
            name: "SesameClientTests",
            dependencies: [
                "SesameClient", "SesameCore", "SesameWire", "SesameProtocol", "SesameVarlink",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "SesameStoreTests",
            dependencies: ["SesameStore", "SesameCore", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "SesameVarlinkTests",
            dependencies: [
                "SesameVarlink", "SesameVarlinkTesting", "SesameWire",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTestUtils", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "SesameProvidersTests",
            dependencies: [
                "SesameProviders", "SesameCore", "SesameCoreTesting", "SesameProtocol",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"), .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]
        ),
        .testTarget(
            name: "SesameDaemonTests",
            dependencies: [
                "SesameDaemon", "SesameVarlink", "SesameStore", "SesameProviders", "SesameCore", "SesameProtocol",
                "SesameVarlinkTesting", "SesameCoreTesting",
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
