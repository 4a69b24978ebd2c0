import DotSafeTestSupport
import Foundation
import Glibc
import Testing
import VaultCore
import VaultStore

/// `dotsafe sync` when the remote fails under it (R-SYN-5): its WebDAV server killed in the
/// middle of a large first sync, a server that refuses writes, a remote folder on a full tmpfs.
/// Each gives one `dotsafe: ` line and exit 1; then the local storage is clean (`fsck`) and
/// holds what it held, a copy of the remote opens on a fresh device at the state it had, and
/// the next sync (server back, writable, space freed) completes.
@Suite(.serialized) struct SyncFailureTests {
    typealias Sync = SyncCommandTests

    /// A workspace, its storage "laptop" with `files` (name: bytes) written into its vault.
    static func laptop(_ files: [String: [UInt8]]) throws -> (base: String, environment: [String: String]) {
        let (base, environment) = try InitAndKeyringCommandTests.workspace()
        #expect(CLIRun(["init", base + "/laptop"], environment: environment).status == 0)
        try write(files, into: base + "/laptop", environment)
        return (base, environment)
    }

    static func write(_ files: [String: [UInt8]], into storage: String, _ environment: [String: String]) throws {
        let vault = try Vault.open(storage: try Storage.open(at: storage), secrets: try Sync.secrets(environment), options: .likeDotsafe())
        for (name, bytes) in files {
            let id = try vault.create(.file, in: Vault.rootID, named: Array(name.utf8), mode: 0o644)
            try vault.write(id, offset: 0, bytes: bytes)
        }
        try vault.lock()
    }

    /// Every file of the vault's top folder with its bytes.
    static func files(_ storage: String, _ environment: [String: String]) throws -> [String: [UInt8]] {
        let vault = try Vault.open(storage: try Storage.open(at: storage), secrets: try Sync.secrets(environment), options: .likeDotsafe())
        defer { try? vault.lock() }
        var result: [String: [UInt8]] = [:]
        for (name, id) in try vault.contents(ofFolder: Vault.rootID) {
            result[String(decoding: name, as: UTF8.self)] = try vault.read(id, offset: 0, count: Int(try vault.attributes(id).size))
        }
        return result
    }

    static func expectClean(_ storage: String, _ environment: [String: String], sourceLocation: SourceLocation = #_sourceLocation) {
        let fsck = CLIRun(["fsck", storage, "--pattern", Sync.pattern], environment: environment)
        #expect(fsck.status == 0, "fsck of \(storage): \(fsck)", sourceLocation: sourceLocation)
    }

    /// What a fresh device finds in a copy of the remote's folder (nil: no vault there).
    static func freshDevice(from folder: String, _ base: String, _ environment: [String: String]) throws -> [String: [UInt8]]? {
        let copy = base + "/copy-\(UUID().uuidString)", fresh = base + "/fresh-\(UUID().uuidString)"
        // A remote that never received a file has no folder yet.
        if FileManager.default.fileExists(atPath: folder) {
            try FileManager.default.copyItem(atPath: folder, toPath: copy)
        } else {
            try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        }
        let run = Sync.sync(fresh, copy, environment, device: "fresh")
        guard run.status == 0 else {
            #expect(run.standardError.hasSuffix("no vault opens with this pattern, neither in the storage nor on the remote\n"), "\(run)")
            return nil
        }
        expectClean(fresh, environment)
        return try files(fresh, environment)
    }

    /// The one line a failed sync prints: `dotsafe: ` and the message, alone.
    static func expectOneLine(_ run: CLIRun, _ prefix: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(run.status == 1, "\(run)", sourceLocation: sourceLocation)
        let lines = run.standardError.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("dotsafe: " + prefix), "\(run)", sourceLocation: sourceLocation)
        #expect(run.standardOutput.isEmpty, sourceLocation: sourceLocation)
    }

    static func randomBytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255) } }

    /// An rclone for the sync (first on PATH) that runs the real one slowed to 4 MiB/s and
    /// creates `started` when an upload begins.
    static func slowRclone(_ base: String) throws -> (path: String, started: String) {
        let started = base + "/upload-started"
        let path = try rclone(base, script: """
            for last; do :; done
            case "$1:$last" in copy::webdav*) : > '\(started)' ;; esac
            exec /usr/bin/rclone "$@" --bwlimit 4M
            """)
        return (path, started)
    }

    /// A PATH whose first `rclone` is this shell script.
    static func rclone(_ base: String, script: String) throws -> String {
        let bin = base + "/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        try ("#!/bin/sh\n" + script + "\n").write(toFile: bin + "/rclone.sh", atomically: false, encoding: .utf8)
        // Installed by another process: a descriptor of this one open for writing on the file
        // that is run, inherited by a child another test spawns meanwhile, made its exec fail
        // with "Text file busy" (exit 126) once under load.
        let installed = CommandResult.run("/usr/bin/install", ["-m", "755", bin + "/rclone.sh", bin + "/rclone"])
        try #require(installed.status == 0, "\(installed)")
        return bin + ":/usr/bin:/bin"
    }

    @Test func theServerStoppedInTheMiddleOfALargeFirstSync() throws {
        let large = ["big.bin": Self.randomBytes(6 << 20), "small.txt": Array("small".utf8)]
        let (base, baseEnvironment) = try Self.laptop(large)
        var environment = baseEnvironment
        defer { try? FileManager.default.removeItem(atPath: base) }
        let remote = try TestRemote(.webdav)
        defer { remote.finish() }
        let rclone = try Self.slowRclone(base)
        environment["PATH"] = rclone.path

        // 6 MiB at 4 MiB/s: the server dies half a second into the upload.
        let killer = Thread {
            _ = waitFor(seconds: 60) { FileManager.default.fileExists(atPath: rclone.started) }
            Thread.sleep(forTimeInterval: 0.5)
            remote.stop()
        }
        killer.start()
        let failed = Sync.sync(base + "/laptop", remote.path, environment, device: "laptop")
        #expect(waitFor(seconds: 60) { killer.isFinished })
        Self.expectOneLine(failed, "the remote :webdav:storage cannot be reached: ")
        Self.expectClean(base + "/laptop", environment)
        #expect(try Self.files(base + "/laptop", environment) == large, "nothing of the local vault is lost")
        #expect(try Self.freshDevice(from: try #require(remote.servedFolder), base, environment) == nil,
                "a first sync cut short publishes no root")

        try remote.start()
        let again = Sync.sync(base + "/laptop", remote.path, environment, device: "laptop")
        #expect(again.status == 0 && again.standardOutput.hasPrefix("synced: "), "\(again)")
        #expect(try Self.freshDevice(from: try #require(remote.servedFolder), base, environment) == large)
    }

    @Test func aRemoteThatRefusesWrites() throws {
        let first = ["first.txt": Array("first".utf8)]
        let (base, environment) = try Self.laptop(first)
        defer { try? FileManager.default.removeItem(atPath: base) }
        let writable = try TestRemote(.webdav)
        defer { writable.finish() }
        #expect(Sync.sync(base + "/laptop", writable.path, environment, device: "laptop").status == 0)
        try Self.write(["second.txt": Array("second".utf8)], into: base + "/laptop", environment)

        // The same remote files, served read-only.
        let readOnly = try TestRemote(.webdav, readOnly: true)
        defer { readOnly.finish() }
        let served = try #require(writable.servedFolder), servedReadOnly = try #require(readOnly.servedFolder)
        try FileManager.default.copyItem(atPath: served, toPath: servedReadOnly)
        let before = try Self.folderContents(servedReadOnly)
        let refused = Sync.sync(base + "/laptop", readOnly.path, environment, device: "laptop")
        Self.expectOneLine(refused, "the remote :webdav:storage refused to store or remove files: ")
        #expect(try Self.folderContents(servedReadOnly) == before, "the read-only remote is unchanged")
        Self.expectClean(base + "/laptop", environment)
        let both = first.merging(["second.txt": Array("second".utf8)]) { a, _ in a }
        #expect(try Self.files(base + "/laptop", environment) == both)
        #expect(try Self.freshDevice(from: servedReadOnly, base, environment) == first)

        let again = Sync.sync(base + "/laptop", writable.path, environment, device: "laptop")
        #expect(again.status == 0, "\(again)")
        #expect(try Self.freshDevice(from: served, base, environment) == both)
    }

    /// The remote is a folder on an 8 MiB tmpfs (root only: the test mounts it).
    @Test(.enabled(if: getuid() == 0, "mounts a tmpfs"))
    func aRemoteThatRunsOutOfSpace() throws {
        let first = ["first.txt": Array("first".utf8)]
        let (base, environment) = try Self.laptop(first)
        defer { try? FileManager.default.removeItem(atPath: base) }
        let disk = base + "/disk"
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        let mounted = CommandResult.run("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=8m", "tmpfs", disk])
        try #require(mounted.succeeded, "\(mounted)")
        defer { _ = CommandResult.run("/usr/bin/umount", [disk]) }
        let remote = disk + "/remote"
        #expect(Sync.sync(base + "/laptop", remote, environment, device: "laptop").status == 0)

        let large = ["large.bin": Self.randomBytes(6 << 20)]
        try Self.write(large, into: base + "/laptop", environment)
        let full = Sync.sync(base + "/laptop", remote, environment, device: "laptop")
        Self.expectOneLine(full, "the remote \(remote) is out of space")
        Self.expectClean(base + "/laptop", environment)
        let both = first.merging(large) { a, _ in a }
        #expect(try Self.files(base + "/laptop", environment) == both)
        #expect(try Self.freshDevice(from: remote, base, environment) == first)

        let grown = CommandResult.run("/usr/bin/mount", ["-o", "remount,size=64m", disk])
        try #require(grown.succeeded, "\(grown)")
        let again = Sync.sync(base + "/laptop", remote, environment, device: "laptop")
        #expect(again.status == 0, "\(again)")
        #expect(try Self.freshDevice(from: remote, base, environment) == both)
    }

    static func folderContents(_ folder: String) throws -> [String: Data] {
        var result: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
            result[name] = FileManager.default.contents(atPath: folder + "/" + name)
        }
        return result
    }
}
