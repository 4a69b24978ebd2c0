import Foundation
import Testing
import VaultCore
import VaultCrypto
import VaultFileSystem
import VaultFUSE
import VaultStore

/// A real storage on disk under `$TMPDIR/dotsafe-test-…` and a mount point beside it. Each
/// `withMount` opens the vault with the same secrets, mounts it in-process, runs the body, and
/// unmounts in all cases; it fails the test if the mount is left behind.
struct MountHarness {
    let folder: String
    let storagePath: String
    let mountPoint: String

    init(folder: String, storagePath: String, mountPoint: String) {
        self.folder = folder
        self.storagePath = storagePath
        self.mountPoint = mountPoint
    }

    init() throws {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(base)/dotsafe-test-mount.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw HarnessError("mkdtemp failed in \(base)") }
        folder = String(cString: made)
        storagePath = folder + "/storage"
        mountPoint = folder + "/mnt"
        try Storage.initialize(at: storagePath, random: SystemRandom())
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: false)
    }

    /// Removes the folder (never into a mount left behind).
    func removeFolder() {
        guard !Self.isMounted(mountPoint) else { return }
        try? FileManager.default.removeItem(atPath: folder)
    }

    static func secrets() throws -> VaultSecrets {
        try VaultSecrets(patternKey: SecretBytes(copying: [UInt8](repeating: 0x5A, count: 32)))
    }

    /// Mounts, runs `body` with the mount point, unmounts (also when `body` throws).
    @discardableResult
    func withMount<R>(options: FUSEMount.Options = FUSEMount.Options(), commitDelay: Double = 5,
                      _ body: (FUSEMount) throws -> R) throws -> R {
        let storage = try DiskStorageFolder(path: storagePath)
        let vault = try Vault.open(storage: storage, secrets: Self.secrets(), options: Vault.Options(owner: (getuid(), getgid())))
        let fileSystem = FileSystem(vault: vault, options: FileSystem.Options(commitDelay: commitDelay),
                                    capacity: { [storage] in try storage.capacity() })
        let mount: FUSEMount
        do {
            mount = try FUSEMount.mount(fileSystem, at: mountPoint, options: options)
        } catch {
            try? fileSystem.close()
            throw error
        }
        var unmounted = false
        defer {
            if !unmounted {
                // The body failed: get rid of the mount whatever holds it.
                try? mount.unmount(lazy: true)
            }
            #expect(!Self.isMounted(mountPoint), "a mount was left at \(mountPoint)")
        }
        let result = try body(mount)
        try mount.unmount()
        unmounted = true
        return result
    }

    /// Whether /proc/mounts lists `path` (with its octal escapes for spaces and the like).
    static func isMounted(_ path: String) -> Bool {
        guard let mounts = try? String(contentsOfFile: "/proc/mounts", encoding: .utf8) else { return false }
        return mounts.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            return fields.count > 2 && unescape(String(fields[1])) == path
        }
    }

    static func mountLine(_ path: String) -> String? {
        guard let mounts = try? String(contentsOfFile: "/proc/mounts", encoding: .utf8) else { return nil }
        return mounts.split(separator: "\n").map(String.init).first { line in
            let fields = line.split(separator: " ")
            return fields.count > 2 && unescape(String(fields[1])) == path
        }
    }

    private static func unescape(_ field: String) -> String {
        var result = ""
        var characters = Array(field)
        var index = 0
        while index < characters.count {
            if characters[index] == "\\", index + 3 < characters.count,
               let code = UInt8(String(characters[index + 1...index + 3]), radix: 8) {
                result.append(Character(UnicodeScalar(code)))
                index += 4
            } else {
                result.append(characters[index])
                index += 1
            }
        }
        characters = []
        return result
    }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A tool run to completion.
struct ToolResult {
    var status: Int32
    var output: String
    var error: String
    var succeeded: Bool { status == 0 }
}

/// Runs a program found on PATH (through /usr/bin/env), with an optional working folder.
@discardableResult
func run(_ arguments: [String], in directory: String? = nil, environment extra: [String: String] = [:]) throws -> ToolResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    var environment = ProcessInfo.processInfo.environment
    environment["LC_ALL"] = "C"
    for (key, value) in extra { environment[key] = value }
    process.environment = environment
    let output = Pipe()
    let error = Pipe()
    process.standardOutput = output
    process.standardError = error
    process.standardInput = FileHandle.nullDevice
    try process.run()
    // Read both pipes concurrently enough: stderr is small for every tool used here.
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    let errorData = error.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    try? output.fileHandleForReading.close()
    try? error.fileHandleForReading.close()
    return ToolResult(status: process.terminationStatus, output: String(decoding: outputData, as: UTF8.self),
                      error: String(decoding: errorData, as: UTF8.self))
}

/// Runs a shell command line and requires it to succeed; returns its standard output.
@discardableResult
func shell(_ command: String, in directory: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
    let result = try run(["bash", "-c", "set -o pipefail; " + command], in: directory, environment: ["TZ": "UTC"])
    #expect(result.succeeded, "\(command) failed (\(result.status)): \(result.error)", sourceLocation: sourceLocation)
    guard result.succeeded else { throw HarnessError("\(command): \(result.error)") }
    return result.output
}
