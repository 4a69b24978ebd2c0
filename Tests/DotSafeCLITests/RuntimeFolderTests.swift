import Foundation
import Glibc
import Testing
@testable import DotSafeCLI

/// Lock-file names in the runtime folder are keyed with a key made once per boot: the same
/// within a boot, different after a reboot (a boot key of another boot id is replaced), and
/// never the vault's own derivation alone.
@Suite struct RuntimeFolderTests {
    static func folder() throws -> RuntimeFolder {
        let path = (ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp") + "/dotsafe-test-runtime-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        return RuntimeFolder(path: path)
    }

    @Test func lockNamesAreKeyedPerBoot() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder.path) }
        let vault = Array("dotsafe-vault-00112233".utf8)
        let first = try folder.lockName("guard-", for: vault)
        #expect(first.hasPrefix("guard-") && first.hasSuffix(".lock") && first.count == 6 + 32 + 5)
        #expect(try folder.lockName("guard-", for: vault) == first, "one name within a boot")
        #expect(try folder.lockName("guard-", for: Array("another".utf8)) != first)
        let keyFile = folder.file(RuntimeFolder.bootKeyName)
        let stored = try #require(FileManager.default.contents(atPath: keyFile))
        #expect(stored.prefix(36) == Data(RuntimeFolder.bootID()) && stored.count == 36 + 32)
        let attributes = try FileManager.default.attributesOfItem(atPath: keyFile)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        // The key of another boot: replaced, so the names change.
        var otherBoot = Data("00000000-0000-0000-0000-000000000000".utf8)
        otherBoot.append(stored.suffix(32))
        try otherBoot.write(to: URL(fileURLWithPath: keyFile))
        let afterReboot = try folder.lockName("guard-", for: vault)
        #expect(afterReboot != first)
        #expect(try FileManager.default.contents(atPath: keyFile)?.prefix(36) == Data(RuntimeFolder.bootID()))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == [RuntimeFolder.bootKeyName], "no temporary file left")
    }

    @Test func staleLocksAreRemovedAndHeldOnesKept() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder.path) }
        let held = open(folder.file("guard-held.lock"), O_RDWR | O_CREAT, 0o600)
        defer { close(held) }
        #expect(held >= 0 && flock(held, LOCK_EX) == 0)
        FileManager.default.createFile(atPath: folder.file("guard-stale.lock"), contents: Data("mounted at /x".utf8))
        FileManager.default.createFile(atPath: folder.file("guard-new.lock"), contents: nil)
        let old = Date(timeIntervalSinceNow: -60)
        for name in ["guard-held.lock", "guard-stale.lock"] {
            try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: folder.file(name))
        }
        folder.removeStaleLocks()
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: folder.path)) == ["guard-held.lock", "guard-new.lock"])
    }

    // MARK: Where the folder is, and what stays of it on disk

    /// A folder of this test (mode 0700) with no runtime folder, /run/user or /dev/shm in it.
    static func base() throws -> String {
        let path = (ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp") + "/dotsafe-test-places-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        return path
    }

    static func names(_ path: String) -> Set<String> { Set((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []) }

    @Test func theChoiceFallsBackFromMemoryToDiskInTheREADMEsOrder() throws {
        let base = try Self.base()
        defer { try? FileManager.default.removeItem(atPath: base) }
        for name in ["runtime", "run-user", "shm"] {
            try FileManager.default.createDirectory(atPath: base + "/" + name, withIntermediateDirectories: false,
                                                    attributes: [.posixPermissions: 0o700])
        }
        var places = RuntimeFolder.Places(runUser: base + "/run-user", sharedMemory: base + "/shm")
        var environment = ["XDG_RUNTIME_DIR": base + "/runtime", "XDG_STATE_HOME": base + "/state", "HOME": base + "/home"]
        typealias Location = RuntimeFolder.Location
        #expect(RuntimeFolder.location(environment, places: places) == Location(path: base + "/runtime/dotsafe", onDisk: false))
        // A runtime folder others may enter is not used.
        chmod(base + "/runtime", 0o755)
        #expect(RuntimeFolder.location(environment, places: places) == Location(path: base + "/run-user/dotsafe", onDisk: false))
        places.runUser = base + "/no-run-user"
        #expect(RuntimeFolder.location(environment, places: places) == Location(path: base + "/shm/dotsafe-\(getuid())", onDisk: false))
        places.sharedMemory = base + "/no-shm"
        #expect(RuntimeFolder.location(environment, places: places) == Location(path: base + "/state/dotsafe/run", onDisk: true))
        environment["XDG_STATE_HOME"] = "relative/state"
        #expect(RuntimeFolder.location(environment, places: places) == Location(path: base + "/home/.local/state/dotsafe/run", onDisk: true))
        environment["HOME"] = nil
        #expect(RuntimeFolder.location(environment, places: places) == nil)
        #expect(throws: CLIError.failure("no folder for running mounts: set XDG_RUNTIME_DIR or HOME")) {
            try RuntimeFolder.open(environment: environment, places: places)
        }
    }

    @Test func aFolderOnDiskGoesWithItsLastUserAndAKilledOnesLeftoversWithTheNext() throws {
        let base = try Self.base()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let places = RuntimeFolder.Places(runUser: base + "/no-run-user", sharedMemory: base + "/no-shm")
        let environment = ["XDG_STATE_HOME": base + "/state"]
        let run = base + "/state/dotsafe/run"
        // Two users at once (a mount and an fsck): the folder and its boot key stay for the second.
        let first = try RuntimeFolder.open(environment: environment, places: places)
        #expect(first.path == run && first.diskUse != nil)
        let name = try first.lockName("guard-", for: [1, 2, 3])
        let second = try RuntimeFolder.open(environment: environment, places: places)
        #expect(try second.lockName("guard-", for: [1, 2, 3]) == name, "the second user keeps the first one's boot key")
        first.leave()
        #expect(Self.names(run) == [RuntimeFolder.bootKeyName])
        FileManager.default.createFile(atPath: run + "/0123.mount", contents: Data("{}".utf8))
        second.leave()
        #expect(!FileManager.default.fileExists(atPath: base + "/state/dotsafe"), "the last one out removes run and dotsafe")
        #expect(Self.names(base + "/state").isEmpty && FileManager.default.fileExists(atPath: base + "/state"))

        // What a daemon killed with -9 left: removed when the next user finds itself alone.
        try FileManager.default.createDirectory(atPath: run, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        for leftover in ["0123.mount", "0123.sock", name, RuntimeFolder.bootKeyName] {
            FileManager.default.createFile(atPath: run + "/" + leftover, contents: Data("left".utf8))
        }
        let next = try RuntimeFolder.open(environment: environment, places: places)
        #expect(Self.names(run).isEmpty)
        next.leave()
        #expect(!FileManager.default.fileExists(atPath: base + "/state/dotsafe"))
    }

    @Test func aFolderInMemoryStaysUntilTheReboot() throws {
        let base = try Self.base()
        defer { try? FileManager.default.removeItem(atPath: base) }
        try FileManager.default.createDirectory(atPath: base + "/shm", withIntermediateDirectories: false)
        let places = RuntimeFolder.Places(runUser: base + "/no-run-user", sharedMemory: base + "/shm")
        let folder = try RuntimeFolder.open(environment: ["XDG_STATE_HOME": base + "/state"], places: places)
        #expect(folder.path == base + "/shm/dotsafe-\(getuid())" && folder.diskUse == nil)
        _ = try folder.lockName("guard-", for: [1])
        folder.leave()
        #expect(Self.names(folder.path) == [RuntimeFolder.bootKeyName])
        #expect(!FileManager.default.fileExists(atPath: base + "/state"))
    }

    /// The folder every environment finds is /dev/shm/dotsafe-UID. Another local user who made
    /// it first (anyone may) must not stop this user's mounts: it is passed over, and taken
    /// once it is this user's own.
    @Test func aSharedMemoryFolderMadeByAnotherUserIsPassedOver() throws {
        let base = try Self.base()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let planted = base + "/shm/dotsafe-\(getuid())"
        try FileManager.default.createDirectory(atPath: planted, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try #require(chown(planted, 65534, 65534) == 0)
        let places = RuntimeFolder.Places(runUser: base + "/no-run-user", sharedMemory: base + "/shm")
        let own = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: own.path) }
        #expect(RuntimeFolder.everyEnvironment(besides: own, places: places) == nil)
        try FileManager.default.removeItem(atPath: planted)
        #expect(RuntimeFolder.everyEnvironment(besides: own, places: places)?.path == planted)
    }
}
