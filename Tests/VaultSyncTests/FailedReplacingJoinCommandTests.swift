import DotSafeTestSupport
import Foundation
import Glibc
import Testing
@testable import VaultCore
import VaultFormat
import VaultStore
@testable import VaultSync

/// A `--replace-partial-join` that fails after it replaced files, through the built `dotsafe`
/// (docs/FORMAT.md §13.12 "Replacing a partial join"): the files it replaced keep the remote's
/// bytes, so its one line must not say that nothing changed. After `ReplacePartialJoinCommandTests`'
/// killed join and the owner's rewrites, a chunk file of the owner's newest file is changed on the
/// remote (ADVERSARIES.md: the provider): `dotsafe sync` and `dotsafe mount --sync` with the option
/// fail, exit 1, each saying how many files the join replaced, that they keep the remote's bytes
/// and what that costs a state under another pattern; the storage holds the names it held, only
/// the replaced files changed (to the remote's bytes), the remote not a byte changed, nothing
/// mounted. A second failing join that replaces nothing says "nothing was changed" as before.
/// With the file as written back on the remote, the join finishes. Real vaults on disk, real
/// mounts, a real rclone.
@Suite(.serialized) struct FailedReplacingJoinCommandTests {
    typealias Joins = ReplacePartialJoinCommandTests
    typealias Mounts = MountJoinCountCutTests
    typealias Files = SharedSyncTests

    @Test func aReplacingJoinThatFailsSaysWhatItReplaced() throws {
        try Joins.afterAKilledJoin { h, remote, desktop, expected, _ in
            let served = try #require(remote.servedFolder)
            let damaged = try Self.damageNewestChunk(h, served, "big-2.bin")
            let failure = "the vault on the remote is damaged: file \(FileRef(raw: damaged.ref)) does not open under its key"
            let left = h.base + "/desktop-left"
            try SyncDevice.copyFiles(from: desktop, to: left)
            let storageBefore = try Files.files(desktop), remoteBefore = try Files.files(served)
            let sync = ["sync", desktop, remote.path, "--pattern", Mounts.pattern, "--device", "desktop", "--replace-partial-join"]

            let failed = h.dotsafe(sync)
            let replaced = try Self.replacedOnly(desktop, before: storageBefore, served, remoteBefore)
            try #require(replaced > 0, "the failed join replaced no file: \(failed)")
            #expect(failed.status == 1 && failed.error == "dotsafe: \(failure); \(Self.stays(replaced))\n", "\(failed)")

            // Again: the files here are the remote's now, the join replaces none, and nothing changes.
            let afterFailure = try Files.files(desktop)
            let again = h.dotsafe(sync)
            #expect(again.status == 1 && again.error == "dotsafe: \(failure); nothing was changed\n", "\(again)")
            #expect(try Files.files(desktop) == afterFailure, "the second failed join changed the storage")
            #expect(try Files.files(served) == remoteBefore, "the second failed join changed the remote")

            // `mount --sync` from the storage as the killed join left it: the same count, nothing mounted.
            try SyncDevice.copyFiles(from: left, to: desktop)
            let point = try h.mountPoint("failed")
            let mounted = h.dotsafe(["mount", desktop, point, "--pattern-stdin", "--sync", remote.path, "--device", "desktop",
                                     "--replace-partial-join"], input: Mounts.pattern + "\n")
            if mounted.status == 0 { h.track(point) }
            #expect(!MountHarness.isMounted(point))
            #expect(try Self.replacedOnly(desktop, before: storageBefore, served, remoteBefore) == replaced)
            #expect(mounted.status == 1 && mounted.error == "dotsafe: the first sync failed, so nothing was mounted: \(failure); "
                + "\(Self.stays(replaced)); this storage holds no copy of the vault yet: mount again when the remote can be reached\n",
                "\(mounted)")

            // The file as written back on the remote: the join goes through.
            try damaged.written.write(to: URL(fileURLWithPath: served + "/" + damaged.name))
            let joined = h.dotsafe(sync)
            #expect(joined.status == 0 && joined.output.hasPrefix("synced: "), "\(joined)")
            try Joins.expectJoined(h, desktop, expected, "the join once the remote is whole")
        }
    }

    /// Stopped by Ctrl-C in its second batch of downloads (its chunk files), after its first
    /// (the index pages) replaced files: the line says how many stay, not that nothing changed;
    /// what it placed goes, the remote is untouched, and the next sync joins. Whether the first
    /// batch meets a file the owner rewrote depends on the numbers the owner's commits took
    /// (half of the set-ups, session 43): one where it met none must say that nothing changed,
    /// and the set-up is made again, up to eight times.
    @Test func aReplacingJoinStoppedAfterItReplacedSaysWhatStays() throws {
        var attempts = 0, done = false
        while !done {
            attempts += 1
            try Self.stopAReplacingJoin(lastAttempt: attempts == 8) { done = $0 }
        }
    }

    private static func stopAReplacingJoin(lastAttempt: Bool, _ replacedAny: (Bool) -> Void) throws {
        try Joins.afterAKilledJoin { h, remote, desktop, expected, _ in
            let served = try #require(remote.servedFolder)
            let storageBefore = try Files.files(desktop), remoteBefore = try Files.files(served)
            var environment = h.environment
            environment["PATH"] = try Self.slowRclone(h.base)
            let sync = ["sync", desktop, remote.path, "--pattern", Mounts.pattern, "--device", "desktop", "--replace-partial-join"]
            let running = Process(), error = Pipe()
            running.executableURL = URL(fileURLWithPath: MountHarness.binary)
            running.arguments = sync
            running.environment = environment
            running.standardOutput = FileHandle.nullDevice
            running.standardError = error
            running.standardInput = FileHandle.nullDevice
            try running.run()
            let marker = h.base + "/down-again"
            #expect(waitFor(seconds: 60) { FileManager.default.fileExists(atPath: marker) }, "the join never began its second batch")
            kill(running.processIdentifier, SIGINT)
            let said = String(decoding: error.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            running.waitUntilExit()

            let replaced = try Self.replacedOnly(desktop, before: storageBefore, served, remoteBefore)
            if replaced == 0 && !lastAttempt {
                #expect(said == "dotsafe: sync interrupted by SIGINT; nothing changed, the next sync starts over\n", "\(said)")
                return replacedAny(false)
            }
            replacedAny(true)
            try #require(replaced > 0, "its first batch replaced no file in eight set-ups: \(said)")
            #expect(running.terminationReason == .exit && running.terminationStatus == 130, "\(said)")
            #expect(said == "dotsafe: sync interrupted by SIGINT; \(Self.stays(replaced)); the next sync starts over\n", "\(said)")
            let joined = h.dotsafe(sync)
            #expect(joined.status == 0 && joined.output.hasPrefix("synced: "), "\(joined)")
            try Joins.expectJoined(h, desktop, expected, "the join after the stopped one")
        }
    }

    /// A PATH whose rclone runs the real one slowed to 1 MiB/s and marks the start of its second
    /// batch copy into a download folder (`down-again` in `base`), as `SyncSignalTests`' does.
    static func slowRclone(_ base: String) throws -> String {
        let bin = base + "/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let script = """
            #!/bin/sh
            for last; do :; done
            case "$1:$last" in
                copy:*\(DownloadFolder.suffix))
                    if [ -e '\(base)/down-once' ]; then : > '\(base)/down-again'; fi
                    : > '\(base)/down-once' ;;
            esac
            exec /usr/bin/rclone "$@" --bwlimit 1M

            """
        try script.write(toFile: bin + "/rclone.sh", atomically: false, encoding: .utf8)
        // Installed, not written in place: a descriptor open for writing on a file that is run
        // makes its exec fail ("Text file busy").
        let installed = CommandResult.run("/usr/bin/install", ["-m", "755", bin + "/rclone.sh", bin + "/rclone"])
        try #require(installed.status == 0, "\(installed)")
        return bin + ":/usr/bin:/bin"
    }

    /// The end of the line of a failed join that replaced `count` files (`FailedAfterJoinReplaced.stays`).
    static func stays(_ count: Int) -> String {
        "the join replaced \(count) file\(count == 1 ? "" : "s") of this storage with the remote's bytes, which they keep: a state "
            + "of this vault under another pattern in this storage may read the items in them as damaged"
    }

    /// Checks that `storage` holds the names it held, each file as before or (replaced) the
    /// remote's bytes at its name, and that the remote is as before: returns how many were replaced.
    static func replacedOnly(_ storage: String, before: [String: Data], _ served: String, _ remoteBefore: [String: Data]) throws -> Int {
        let after = try Files.files(storage), remoteNow = try Files.files(served)
        #expect(remoteNow == remoteBefore, "the failed join changed the remote")
        #expect(Set(after.keys) == Set(before.keys),
                "added \(after.keys.filter { before[$0] == nil }.count), removed \(before.keys.filter { after[$0] == nil }.count)")
        let replaced = before.keys.filter { after[$0] != nil && after[$0] != before[$0] }
        #expect(replaced.allSatisfy { after[$0] == remoteNow[$0] }, "a file changed to other bytes than the remote's")
        return replaced.count
    }

    /// Changes one byte of the chunk file of `path` that the owner's storage (the harness's)
    /// numbers last, on the remote: its name, FileRef and the bytes as written.
    static func damageNewestChunk(_ h: MountHarness, _ served: String, _ path: String) throws -> (name: String, ref: UInt64, written: Data) {
        let owner = try Vault.open(storage: try Storage.open(at: h.storage), secrets: try Mounts.secrets(h), options: .likeDotsafe(readOnly: true))
        defer { try? owner.lock() }
        let id = try owner.lookup(Vault.rootID, Array(path.utf8))
        let (ref, name) = try owner.state.withLock { state in
            let item = try #require(state.tree.allItems[id])
            let ref = try #require(item.chunks.values.map(\.fileNumber).max())
            return (ref, try state.name(ref))
        }
        let written = try #require(FileManager.default.contents(atPath: served + "/" + name))
        var changed = written
        changed[1000] ^= 0xff
        try changed.write(to: URL(fileURLWithPath: served + "/" + name))
        return (name, ref, written)
    }
}
