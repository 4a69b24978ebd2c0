// swift-tools-version:6.0
import PackageDescription

// Layers, each a module; dependencies point down (see docs/ARCHITECTURE.md).
let package = Package(
    name: "DotSafe",
    products: [
        .executable(name: "dotsafe", targets: ["dotsafe"]),
    ],
    targets: [
        .systemLibrary(name: "CLibCrypto", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CFuse", pkgConfig: "fuse3",
                       providers: [.apt(["libfuse3-dev"])]),
        .systemLibrary(name: "CSystem"),
        .systemLibrary(name: "CSecret", pkgConfig: "libsecret-1",
                       providers: [.apt(["libsecret-1-dev"])]),
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1",
                       providers: [.apt(["libdbus-1-dev"])]),
        // The one layer of raw system calls (EINTR, errno): sockets, lock files, processes, the terminal.
        .target(name: "SystemCalls", dependencies: ["CSystem"]),
        // A D-Bus connection (libdbus-1) with calls and signals as Swift values: the system bus.
        .target(name: "SystemBus", dependencies: ["CDBus"]),
        .target(name: "VaultCrypto", dependencies: ["CLibCrypto", "CSystem"]),
        .target(name: "VaultFormat"),
        .target(name: "VaultStore", dependencies: ["CSystem", "SystemCalls", "VaultCrypto", "VaultFormat"]),
        .target(name: "VaultCore", dependencies: ["CSecret", "VaultCrypto", "VaultFormat", "VaultStore"]),
        .target(name: "VaultFileSystem", dependencies: ["VaultCore", "VaultCrypto"]),
        // Sync: the merge of item trees (pure), the remote storage that rclone reaches, and the
        // vault-level protocol over both.
        .target(name: "VaultSync", dependencies: ["SystemCalls", "VaultFormat", "VaultCrypto", "VaultStore", "VaultCore"]),
        .target(name: "VaultFUSE", dependencies: ["CFuse", "SystemCalls", "VaultFileSystem", "VaultCrypto"]),
        .target(name: "DotSafeCLI", dependencies: ["SystemBus", "SystemCalls", "VaultFUSE", "VaultFileSystem", "VaultCore", "VaultStore", "VaultCrypto",
                                                "VaultFormat", "VaultSync"]),
        .executableTarget(name: "dotsafe", dependencies: ["DotSafeCLI"]),
        // Fuzzing (tools/fuzz): one function per decoder of bytes from disk, and a driver that
        // links libFuzzer only when built with -DDOTSAFE_LIBFUZZER; otherwise it replays files.
        .target(name: "FuzzTargets", dependencies: ["VaultFormat", "VaultCore", "VaultCrypto"]),
        .executableTarget(name: "DotSafeFuzz", dependencies: ["FuzzTargets"]),
        // What several test targets share: the vector-file reader, scripted random sources, the
        // mount harness (the `dotsafe` binary or an in-process mount), folders under $TMPDIR.
        .target(name: "DotSafeTestSupport", dependencies: ["VaultFUSE", "VaultFileSystem", "VaultCore", "VaultStore", "VaultCrypto", "SystemCalls"],
                path: "Tests/DotSafeTestSupport"),
        .testTarget(name: "VaultStoreTests", dependencies: ["DotSafeTestSupport", "VaultStore", "VaultFormat", "VaultCrypto"]),
        .testTarget(name: "VaultCoreTests", dependencies: ["DotSafeTestSupport", "VaultCore", "VaultStore", "VaultFormat", "VaultCrypto", "VaultSync"],
                    exclude: ["Fixtures"]),
        .testTarget(name: "VaultFileSystemTests", dependencies: ["DotSafeTestSupport", "VaultFileSystem", "VaultCore", "VaultStore", "VaultCrypto"]),
        .testTarget(name: "VaultFUSETests", dependencies: ["DotSafeTestSupport", "VaultFUSE", "VaultFileSystem", "VaultCore", "VaultStore", "VaultCrypto"]),
        .testTarget(name: "DotSafeMountTests", dependencies: ["DotSafeTestSupport", "dotsafe", "VaultCore", "VaultStore", "VaultCrypto"]),
        .testTarget(name: "VaultFormatTests", dependencies: ["DotSafeTestSupport", "VaultFormat", "VaultCore", "VaultStore", "VaultCrypto", "CLibCrypto"],
                    resources: [.copy("Vectors")]),
        .testTarget(name: "DotSafeCLITests", dependencies: ["DotSafeTestSupport", "DotSafeCLI", "SystemCalls", "VaultCore", "VaultStore", "VaultCrypto", "VaultFormat"]),
        .testTarget(name: "VaultSyncTests", dependencies: ["DotSafeTestSupport", "VaultSync", "VaultFormat", "SystemCalls", "VaultCore",
                                                            "VaultStore", "VaultCrypto"]),
        .testTarget(name: "FuzzCorpusTests", dependencies: ["FuzzTargets", "VaultCore", "VaultFormat"]),
        .testTarget(name: "VaultCryptoTests", dependencies: ["DotSafeTestSupport", "VaultCrypto"],
                    resources: [.copy("Vectors")]),
    ],
    swiftLanguageModes: [.v6]
)
