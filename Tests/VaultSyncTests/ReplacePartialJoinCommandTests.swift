import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultFormat
import VaultStore
@testable import VaultSync

/// `--replace-partial-join` through the built `dotsafe` (README, docs/FORMAT.md §13.12
/// "Replacing a partial join"): a new device's first sync killed after its downloads, before
/// its commit (in this process, as a kill leaves the storage: `MountJoinCountCutTests`), then
/// the owner removes files, syncs, writes others and syncs, so that numbers the killed join
/// filled hold other bytes on the remote (ADVERSARIES.md: the crash). `dotsafe sync` and
/// `dotsafe mount --sync` without the option: one line that names it, exit 1, not a byte of
/// the storage or the remote changed, nothing mounted. With it: the join replaces those files
/// and finishes; every file reads back through a mount, byte for byte, fsck is clean, and the
/// storage holds whole groups of 16. Real vaults on disk, real mounts, a real rclone.
@Suite(.serialized) struct ReplacePartialJoinCommandTests {
    typealias Mounts = MountJoinCountCutTests
    typealias Files = SharedSyncTests

    @Test func dotsafeSyncResumesAKilledJoinOnlyWithTheOption() throws {
        try Self.afterAKilledJoin { h, remote, desktop, expected, unchanged in
            let sync = ["sync", desktop, remote.path, "--pattern", Mounts.pattern, "--device", "desktop"]
            for attempt in 1...2 {
                let refused = h.dotsafe(sync)
                #expect(refused.status == 1 && refused.error == "dotsafe: \(SyncRefusal.heldUnderOtherPattern)\n", "\(attempt): \(refused)")
                #expect(refused.error.contains("--replace-partial-join (dotsafe sync or mount --sync)"), "\(refused)")
                #expect(try unchanged(), "sync \(attempt) changed the storage or the remote")
            }
            let joined = h.dotsafe(sync + ["--replace-partial-join"])
            #expect(joined.status == 0 && joined.output.hasPrefix("synced: "), "\(joined)")
            try Self.expectJoined(h, desktop, expected, "dotsafe sync --replace-partial-join")
        }
    }

    @Test func mountSyncResumesAKilledJoinOnlyWithTheOption() throws {
        try Self.afterAKilledJoin(Self.mountSyncResumes)
    }

    /// `mount --sync` refused in one line, nothing mounted or changed; with the option mounted,
    /// reading the owner's vault, and a write there reaches the owner.
    static func mountSyncResumes(_ h: MountHarness, _ remote: TestRemote, _ desktop: String, _ expected: [String: Data],
                                 _ unchanged: () throws -> Bool) throws {
        let options = ["--sync", remote.path, "--device", "desktop"]

        let point = try h.mountPoint("refused")
        let refused = h.dotsafe(["mount", desktop, point, "--pattern-stdin"] + options, input: Mounts.pattern + "\n")
        if refused.status == 0 { h.track(point) }
        #expect(refused.status == 1, "\(refused)")
        #expect(refused.error == "dotsafe: the first sync failed, so nothing was mounted: \(SyncRefusal.heldUnderOtherPattern)\n",
                "\(refused)")
        #expect(refused.error.contains("--replace-partial-join (dotsafe sync or mount --sync)"), "\(refused)")
        #expect(!MountHarness.isMounted(point))
        #expect(try unchanged(), "the refused mount changed the storage or the remote")

        try Mounts.mounted(h, desktop, "mount --sync --replace-partial-join", options: options + ["--replace-partial-join"]) { point in
            try Mounts.expectAll(expected, at: point, "mount --sync --replace-partial-join")
            try Data("from the desktop".utf8).write(to: URL(fileURLWithPath: point + "/desktop.txt"))
        }
        var all = expected
        all["desktop.txt"] = Data("from the desktop".utf8)
        try Self.expectJoined(h, desktop, all, "mount --sync --replace-partial-join")
        try Mounts.syncLaptop(h, remote)
        try Mounts.mounted(h, h.storage, "the laptop") { point in try Mounts.expectAll(all, at: point, "the laptop") }
    }

    /// `body` after `killedJoinThenOwnerWrites`, told whether the storage and the remote are
    /// still as it left them.
    static func afterAKilledJoin(_ body: (_ h: MountHarness, _ remote: TestRemote, _ desktop: String, _ expected: [String: Data],
                                          _ unchanged: () throws -> Bool) throws -> Void) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let h = try MountHarness()
        defer { h.finish() }
        let (desktop, expected) = try killedJoinThenOwnerWrites(h, remote)
        let served = try #require(remote.servedFolder)
        let storageBefore = try Files.files(desktop), remoteBefore = try Files.files(served)
        try body(h, remote, desktop, expected) { try Files.files(desktop) == storageBefore && Files.files(served) == remoteBefore }
    }

    /// The desktop's storage after the join a kill cut, and the owner's (the laptop's) files
    /// once it rewrote numbers that join filled: what a resumed join must read.
    static func killedJoinThenOwnerWrites(_ h: MountHarness, _ remote: TestRemote) throws -> (desktop: String, files: [String: Data]) {
        let served = try #require(remote.servedFolder)
        var files = ["big.bin": Self.random(600_000)]
        for index in 0..<8 { files["note-\(index).txt"] = Data("note \(index)".utf8) }
        try Mounts.mounted(h, h.storage, "the laptop") { point in
            for (name, bytes) in files { try bytes.write(to: URL(fileURLWithPath: point + "/" + name)) }
        }
        try Mounts.syncLaptop(h, remote)

        // The join counted, then (from the same start, the remote as it was) cut after its
        // last placement of downloads, before its commit.
        let desktop = h.base + "/desktop-storage", empty = h.base + "/desktop-empty", remoteCopy = h.base + "/remote-copy"
        try #require(h.dotsafe(["init", desktop]).status == 0)
        try SyncDevice.copyFiles(from: desktop, to: empty)
        try SyncDevice.copyFiles(from: served, to: remoteCopy)
        let counting = CutStorageFolder(try Storage.open(at: desktop), cutAt: nil, countsFiles: true)
        try Mounts.firstRound(h, desktop, remote, storage: counting)
        let placements = counting.done.indices.filter { counting.done[$0] == "placeDownloads" }
        try #require(placements.count > 1, "\(counting.done)")
        try SyncDevice.copyFiles(from: empty, to: desktop)
        try SyncDevice.copyFiles(from: remoteCopy, to: served)
        let cut = CutStorageFolder(try Storage.open(at: desktop), cutAt: placements.last! + 1)
        do { try Mounts.firstRound(h, desktop, remote, storage: cut) } catch {}
        try Mounts.expectWholeGroups(desktop, "the cut join")
        let fsck = Mounts.fsck(h, desktop)
        try #require(fsck.status == 1, "killed before its commit: no vault opens yet: \(fsck)")
        let left = try Files.files(desktop), remoteThen = try Files.files(served)

        // The owner frees numbers, syncs, takes them again with other bytes, syncs.
        try Mounts.mounted(h, h.storage, "the removal") { point in
            for name in ["big.bin", "note-1.txt"] { try FileManager.default.removeItem(atPath: point + "/" + name) }
        }
        try Mounts.syncLaptop(h, remote)
        files["big.bin"] = nil
        files["note-1.txt"] = nil
        let written = ["big-2.bin": Self.random(600_000), "note-40.txt": Data("note 40".utf8)]
        try Mounts.mounted(h, h.storage, "the new files") { point in
            for (name, bytes) in written { try bytes.write(to: URL(fileURLWithPath: point + "/" + name)) }
        }
        try Mounts.syncLaptop(h, remote)
        files.merge(written) { $1 }

        // The test's own precondition: a name the killed join placed holds other bytes there now.
        let remoteNow = try Files.files(served)
        let rewritten = left.keys.filter { left[$0] == remoteThen[$0] && remoteNow[$0] != nil && remoteNow[$0] != left[$0] }
        try #require(!rewritten.isEmpty, "no file the join placed was rewritten on the remote")
        return (desktop, files)
    }

    /// The desktop's vault reads `expected` through a mount, fsck is clean, whole groups.
    static func expectJoined(_ h: MountHarness, _ desktop: String, _ expected: [String: Data], _ place: String) throws {
        try Mounts.expectWholeGroups(desktop, place)
        let checked = Mounts.fsck(h, desktop)
        #expect(checked.status == 0, "\(place): \(checked)")
        try Mounts.mounted(h, desktop, place) { point in try Mounts.expectAll(expected, at: point, place) }
    }

    static func random(_ count: Int) -> Data { Data((0..<count).map { _ in UInt8.random(in: 0...255) }) }
}
