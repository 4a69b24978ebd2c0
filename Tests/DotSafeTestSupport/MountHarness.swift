import Foundation
import Glibc
import Synchronization
import Testing

/// A real storage and its mount points in one folder of this test, `$TMPDIR/dotsafe-test-mount.…`,
/// mounted in one of two ways:
/// - `.binary` runs the built `dotsafe` as a user does: `init` (a keyring in the folder, 1,000
///   PBKDF2 rounds), `mount` with the pattern on standard input, `lock` (MountHarness+Binary.swift);
/// - `.inProcess` mounts the vault with `FUSEMount` in this process, for tests that hold the mount
///   object (MountHarness+InProcess.swift).
///
/// Either way, as gocryptfs tests/test_helpers/mount_unmount.go does: a mount is waited for until
/// the kernel lists it, an unmount is retried while the mount is busy, and `finish()` (always
/// call it, in a `defer`) removes what a failing test left mounted, fails the test if a mount
/// cannot be removed or a descriptor of this process still points into the folder, and removes
/// the folder.
public final class MountHarness: Sendable {
    public enum Mode: Sendable { case binary, inProcess }

    public let mode: Mode
    /// The test's folder; everything the harness makes is inside it.
    public let base: String
    public let storage: String
    /// The environment `dotsafe` runs with: its keyring in `base`, weak KDF rounds allowed.
    public let environment: [String: String]
    let mounted = Mutex<Set<String>>([])

    /// `extra`: more of `dotsafe`'s environment (the tests' switch `DOTSAFE_INDEX_THREE`, say).
    public init(_ mode: Mode = .binary, initialise: Bool = true, environment extra: [String: String] = [:]) throws {
        self.mode = mode
        base = try TestFolder.make("mount")
        // Searchable by others (not listable): tests run tools on the mount as another user.
        chmod(base, 0o711)
        storage = base + "/storage"
        var environment = ProcessInfo.processInfo.environment
        environment["DOTSAFE_KEYRING"] = base + "/keyring"
        environment["DOTSAFE_ALLOW_WEAK_KDF"] = "1"
        environment["DOTSAFE_KDF_ROUNDS"] = "1000"
        environment.merge(extra) { $1 }
        self.environment = environment
        if initialise {
            do { try initialiseStorage() } catch { TestFolder.remove(base); throw error }
        }
    }

    /// A new empty folder in `base` to mount on.
    public func mountPoint(_ name: String = "vault") throws -> String {
        let path = base + "/" + name
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    public static func isMounted(_ path: String) -> Bool { MountTable.contains(path) }
    public static func mountLine(_ path: String) -> String? { MountTable.line(path) }

    /// Waits until the kernel lists (or no longer lists) a mount at `path`.
    @discardableResult
    public static func waitUntil(mounted: Bool, _ path: String, seconds: Double = 10) -> Bool {
        waitFor(seconds: seconds) { isMounted(path) == mounted }
    }

    /// Unmounts with `fusermount3 -u`, retried while the mount is busy; lazily as a last resort.
    /// True when nothing is mounted at `path` afterwards.
    @discardableResult
    public func unmount(_ path: String, attempts: Int = 20) -> Bool {
        for _ in 0..<attempts where Self.isMounted(path) {
            if CommandResult.run("/bin/fusermount3", ["-u", path]).succeeded { break }
            usleep(100_000)
        }
        if Self.isMounted(path) { _ = CommandResult.run("/bin/fusermount3", ["-u", "-z", path]) }
        let gone = Self.waitUntil(mounted: false, path, seconds: 5)
        if gone { _ = mounted.withLock { $0.remove(path) } }
        return gone
    }

    /// Removes whatever a failing test left mounted, checks that nothing of the test is left
    /// behind, and removes the folder.
    public func finish(sourceLocation: SourceLocation = #_sourceLocation) {
        for point in mounted.withLock({ $0 }) where Self.isMounted(point) {
            if mode == .binary { _ = lock(point) }
            if !unmount(point) { Issue.record("a mount was left at \(point)", sourceLocation: sourceLocation) }
        }
        mounted.withLock { $0 = [] }
        let leaked = descriptorsInside(base)
        #expect(leaked.isEmpty, "descriptors left open in the test's folder: \(leaked)", sourceLocation: sourceLocation)
        TestFolder.remove(base)
    }

    /// Runs a bash script in `folder` (default: `base`); fails the test with its output when it
    /// fails, unless a failure is expected.
    @discardableResult
    public func sh(_ script: String, in folder: String? = nil, expectFailure: Bool = false,
                   sourceLocation: SourceLocation = #_sourceLocation) -> CommandResult {
        let result = run("/bin/bash", ["-euo", "pipefail", "-c", script], input: nil, folder: folder ?? base)
        if !expectFailure {
            #expect(result.status == 0, "script failed: \(script)\n\(result)", sourceLocation: sourceLocation)
        }
        return result
    }

    /// Runs a program with the harness's environment.
    @discardableResult
    public func run(_ executable: String, _ arguments: [String], input: String?, folder: String? = nil) -> CommandResult {
        CommandResult.run(executable, arguments, input: input, folder: folder, environment: environment)
    }

    /// Names, sizes, contents and modification times of every storage file.
    public func storageSnapshot() throws -> [String: String] {
        var snapshot: [String: String] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: storage) {
            let path = storage + "/" + name
            var info = stat()
            lstat(path, &info)
            let data = FileManager.default.contents(atPath: path) ?? Data()
            snapshot[name] = "\(info.st_size) \(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec) \(data.hashValue)"
        }
        return snapshot
    }

    private func initialiseStorage() throws {
        switch mode {
        case .binary:
            let result = dotsafe(["init", storage])
            guard result.status == 0 else { throw HarnessError("init failed: \(result)") }
        case .inProcess:
            try initialiseInProcess()
        }
    }

    /// Descriptors of this process that point into `folder`: a file the test left open on its
    /// mount, or a vault (which holds its storage folder open) that was never closed.
    private func descriptorsInside(_ folder: String) -> [String] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.compactMap { entry in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + entry),
                  target == folder || target.hasPrefix(folder + "/") else { return nil }
            return target
        }
    }
}
