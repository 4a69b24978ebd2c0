import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultCrypto
import VaultFormat
@testable import VaultSync

/// A synced vault's pattern change (FORMAT.md §13.12, "with sync"): the next sync writes the
/// new pattern's remote record and removes the old one; a device with the old pattern is told
/// what happened, a new device needs the new pattern. The same for `dotsafe sync` and a mount's
/// rounds (`mounted`: `MountedSynchronizer`, `mount --sync`). Real vaults on disk, a real
/// rclone, a WebDAV server the test starts on 127.0.0.1.
@Suite(.serialized) struct SyncedPatternChangeTests {
    /// The remote's file names (the test's served folder).
    static func remoteNames(_ remote: TestRemote) throws -> Set<String> {
        Set(try FileManager.default.contentsOfDirectory(atPath: try #require(remote.servedFolder)))
    }

    @Test(arguments: [false, true])
    func theNextSyncMovesTheRemoteRecordAndTheOldPatternIsToldWhy(mounted: Bool) throws {
        let remote = try TestRemote(.webdav)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }
        try first.sync(remote)  // the first device learns of the second: two devices in its table
        let oldRemoteName = try first.vault.remoteUnlockName()

        try first.changePattern(to: 8)
        let newRemoteName = try first.vault.remoteUnlockName()
        #expect(newRemoteName != oldRemoteName)
        #expect(try first.vault.formerRemoteUnlockName() == oldRemoteName, "the root keeps the name until the next sync")
        #expect(try Self.remoteNames(remote).contains(oldRemoteName), "the change itself is local")

        try first.write("after.txt", "written after the change")
        // Meanwhile the other device, at the old pattern, syncs a change: the remote is still there.
        try second.write("meanwhile.txt", "synced by the other device meanwhile")
        try second.sync(remote)
        let moved = try first.sync(remote, mounted: mounted)
        #expect(try first.read("meanwhile.txt") == "synced by the other device meanwhile", "merged")
        let names = try Self.remoteNames(remote)
        #expect(names.contains(newRemoteName) && !names.contains(oldRemoteName))
        #expect(moved.filesRemoved >= 1)
        #expect(try first.vault.formerRemoteUnlockName() == nil)

        // The other device, with the old pattern: one clear line, its storage untouched.
        let before = second.storageNames
        let treeBefore = try second.tree()
        #expect(throws: SyncRefusal.patternChanged) { try second.sync(remote, mounted: mounted) }
        #expect(SyncRefusal.patternChanged.description.hasPrefix("the vault's pattern was changed on another device"))
        try second.reopen()
        let treeAfter = try second.tree()
        #expect(second.storageNames == before && treeAfter == treeBefore)

        // A new device needs the new pattern; the old one opens nothing there.
        let stranger = try SyncDevice("old-pattern", seed: 7)
        defer { stranger.finish() }
        #expect(throws: SyncRefusal.noVault) { try stranger.sync(remote) }
        let third = try SyncDevice("phone", seed: 8)
        defer { third.finish() }
        try third.sync(remote)
        #expect(try third.tree() == first.tree())
        #expect(try third.read("after.txt") == "written after the change")
        try third.write("from-phone.txt", "phone")
        try third.sync(remote)
        try first.sync(remote)
        #expect(try first.read("from-phone.txt") == "phone")
        #expect(try Self.remoteNames(remote).contains(oldRemoteName) == false)
    }

    /// The other device, told to go on with the new pattern, syncs it into its own storage after
    /// a withdrawal (`unshare`) and then the pattern change on the first device (without the
    /// withdrawal it follows the change: `PatternFollowTests`): the withdrawal gave the vault a
    /// new RL, so no local slot of the remote's RL is in the other device's storage to follow,
    /// but the devices' names keys stayed, and the join would write that device's former files
    /// (and the first device's, which it holds) over the old state's.
    /// Refused in one line before anything comes down: every byte of the storage stays, the old
    /// pattern opens the change made offline, fsck is clean.
    @Test(arguments: [false, true])
    func aWithdrawalThenAPatternChangeSyncedIntoTheOldPatternsStorageChangesNothing(mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try SyncedPatternChangeTests.withdrawnThenChanged(remote)
        defer { first.finish(); second.finish() }
        let tree = try second.tree()
        let contents = try RemoteRollbackTests.contents(second.folder)
        let remoteContents = try RemoteRollbackTests.contents(try #require(remote.servedFolder))

        try second.usePattern(8)
        #expect(throws: SyncRefusal.heldUnderOtherPattern) { try second.sync(remote, mounted: mounted) }
        #expect(!SyncRefusal.heldUnderOtherPattern.description.contains("\n"))
        #expect(try RemoteRollbackTests.contents(second.folder) == contents, "no file of the storage changed")
        #expect(try RemoteRollbackTests.contents(try #require(remote.servedFolder)) == remoteContents, "nor of the remote")
        try second.usePattern(SyncDevice.seed)
        #expect(try second.tree() == tree)
        #expect(try second.read("offline.txt") == "not synced yet")
        #expect(try second.vault.check().isClean)
        // The way out the line gives: the new pattern into an empty folder gets what was synced.
        let again = try SyncDevice("desktop-again", seed: 8)
        defer { again.finish() }
        try again.sync(remote)
        #expect(try again.read("after.txt") == "after the withdrawal")
    }

    /// Two devices of a vault shared with a third person: the second writes offline, the first
    /// withdraws the grant (`unshare`), writes, syncs, changes the pattern (to seed 8) and syncs.
    /// `written`: files the first writes before the share, which both devices then hold.
    /// `writingOffline`: the second device commits a file after its last sync (its index pages
    /// its own); else its state is the one its last sync committed.
    static func withdrawnThenChanged(_ remote: TestRemote, writing written: [String: String] = [:],
                                     writingOffline: Bool = true) throws -> (first: SyncDevice, second: SyncDevice) {
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        for (path, text) in written.sorted(by: { $0.key < $1.key }) { try first.write(path, text) }
        let carol = try SyncDevice("carol", seed: 0xC3)
        defer { carol.finish() }
        let code = try carol.vault.contactCode().code
        try first.vault.share(with: code)
        try first.reopen()
        try first.sync(remote)
        try second.sync(remote)
        if writingOffline { try second.write("offline.txt", "not synced yet") }
        try first.vault.unshare(with: code)
        try first.reopen()
        try first.write("after.txt", "after the withdrawal")
        try first.sync(remote)
        try first.changePattern(to: 8)
        try first.sync(remote)
        return (first, second)
    }

    /// The first device, whose vault a join downloads in several batches: six files of a
    /// few chunks each and a folder of small ones, synced.
    static func syncedLaptop(_ remote: TestRemote) throws -> SyncDevice {
        let first = try SyncDevice("laptop")
        for index in 0..<6 { try first.write("file-\(index).txt", String(repeating: "\(index)", count: 300_000)) }
        try first.makeFolder("notes")
        for index in 0..<40 { try first.write("notes/note-\(index).txt", "note \(index)") }
        try first.sync(remote)
        return first
    }

    /// A first sync of a new device killed at any write of its downloads leaves what it placed,
    /// each file whole at its name (the remote's bytes), the rest of its group beside it (from
    /// the remote for a page's group, else random bytes at names the remote root does not
    /// reference), in steps of 16: the next sync resumes over it, and the vault is the
    /// remote's, clean, in steps of 16. (A join that fails short of a kill removes what it placed:
    /// `DamagedRemotePageTests`.)
    @Test(arguments: [false, true])
    func aFirstSyncKilledInItsDownloadsResumesAtTheNext(mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let first = try Self.syncedLaptop(remote)
        defer { first.finish() }
        let expected = try first.tree()
        var cut = 1, resumed = 0
        while true {
            let second = try SyncDevice("desktop-\(cut)")
            defer { second.finish() }
            let before = Set(try SharedSyncTests.files(second.folder).keys)
            do {
                _ = try second.sync(remote, cuttingDownloadAt: cut, mounted: mounted)
                break
            } catch is SyncDevice.Stop {}
            // Device 0's group 0 too: its numbers 0 and 1 and the owner record's came as
            // stand-ins (FORMAT.md §13.12, "A join keeps whole groups").
            #expect(try StorageCount.files(second.folder) % Format.groupSize == 0, "cut at write \(cut)")
            if !Set(try SharedSyncTests.files(second.folder).keys).subtracting(before).isEmpty { resumed += 1 }
            try second.sync(remote, mounted: mounted)
            #expect(try second.tree() == expected, "cut at write \(cut)")
            #expect(try second.read("file-3.txt") == String(repeating: "3", count: 300_000), "cut at write \(cut)")
            let report = try second.vault.check()
            #expect(report.isClean, "cut at write \(cut): \(report.damagedItems) \(report.storageProblems)")
            #expect(try SharedSyncTests.files(second.folder).count % Format.groupSize == 0, "cut at write \(cut)")
            cut += 1
        }
        #expect(resumed > 2, "kills that left files: \(resumed) of \(cut - 1)")
    }

    /// What a killed first sync left, whose bytes differ since from the remote's at a name the
    /// remote root references (a state of this vault under another pattern looks so, and so
    /// does a killed join whose remote moved on): the next sync is refused in the same line,
    /// every byte of the storage as it was, and the way out its line gives joins.
    @Test(arguments: [false, true])
    func aKilledFirstSyncsFilesThatDifferFromTheRemoteAreRefused(mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let first = try Self.syncedLaptop(remote)
        defer { first.finish() }
        let served = try #require(remote.servedFolder)
        let remoteNames = try Self.remoteNames(remote)
        // The last cut of the downloads that leaves files at the remote's names.
        let counter = try SyncDevice("desktop-count")
        let writes = try counter.sync(remote, cuttingDownloadAt: .max, mounted: mounted)
        counter.finish()
        var cut = writes + 1, victim: SyncDevice?
        repeat {
            victim?.finish()
            cut -= 1
            victim = try SyncDevice("desktop-\(cut)")
            #expect(throws: SyncDevice.Stop.self) { _ = try victim?.sync(remote, cuttingDownloadAt: cut, mounted: mounted) }
        } while victim?.storageNames.isDisjoint(with: remoteNames) == true && cut > 1
        let second = try #require(victim)
        defer { second.finish() }
        // Each file the kill left at a name the remote holds gets other bytes.
        var changed = 0
        for name in second.storageNames where remoteNames.contains(name) {
            let path = second.folder + "/" + name
            guard FileManager.default.contents(atPath: path) == FileManager.default.contents(atPath: served + "/" + name) else { continue }
            try Data(try SystemRandom().bytes(Format.fileSize)).write(to: URL(fileURLWithPath: path))
            changed += 1
        }
        #expect(changed > 0, "cut at write \(cut) of \(writes)")
        let contents = try RemoteRollbackTests.contents(second.folder)
        #expect(throws: SyncRefusal.heldUnderOtherPattern) { try second.sync(remote, mounted: mounted) }
        #expect(try RemoteRollbackTests.contents(second.folder) == contents, "no file of the storage changed")
        let again = try SyncDevice("desktop-again")
        defer { again.finish() }
        try again.sync(remote, mounted: mounted)
        #expect(try again.tree() == first.tree())
    }

    /// The provider sees the count in steps of 16 after every sync (R-SYN-2): the change's sync
    /// puts the new record up and takes the old one away, and the free file at the new record's
    /// number goes too. Syncs with nothing to do move nothing afterwards (SYNC-DESIGN §3.3).
    /// Index 2 and index 3 (what `dotsafe` writes, FORMAT.md §15).
    @Test(arguments: [false, true], [false, true])
    func afterAPatternChangeTheRemoteKeepsWholeGroupsAndANoOpMovesNothing(mounted: Bool, indexThree: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let device = try SyncDevice("laptop", indexThree: indexThree)
        defer { device.finish() }
        func remoteCount() throws -> Int { try Self.remoteNames(remote).count }
        try device.write("base.txt", "base")
        try device.sync(remote, mounted: mounted)
        #expect(try remoteCount() % 16 == 0)
        try device.changePattern(to: 8)
        try device.sync(remote, mounted: mounted)
        let count = try remoteCount()
        #expect(count % 16 == 0, "after the change's sync: \(count) files")
        // The commit that forgets the former record changes nothing the remote holds: the next
        // sync reads this device's root back and sends nothing (in index 3 a root went up once,
        // the file block the change's root-up commit rewrote for its pins, FORMAT.md §15.4).
        for round in 1...3 {
            let nothing = try device.sync(remote, mounted: mounted)
            #expect(nothing == SyncSummary(), "no-op \(round): \(nothing.line)")
            #expect(try remoteCount() % 16 == 0)
        }
        try device.write("more.txt", "more")
        let change = try device.sync(remote, mounted: mounted)
        #expect(change.filesUp > 0 && change.filesDown == 0)
        #expect(try remoteCount() % 16 == 0)
        #expect(try device.sync(remote, mounted: mounted) == SyncSummary())
        let fresh = try SyncDevice("fresh", seed: 8, indexThree: indexThree)
        defer { fresh.finish() }
        try fresh.sync(remote)
        #expect(try fresh.tree() == device.tree())
    }

    @Test(arguments: [false, true])
    func aSyncStoppedAtAnyChangeAfterAPatternChangeIsFinishedByTheNext(mounted: Bool) throws {
        let changes = ["upload", "record", "root", "root#2", "remove", "former record", "forget"]
        for stop in changes {
            let remote = try TestRemote(.local)
            defer { remote.finish() }
            let first = try SyncDevice("laptop")
            defer { first.finish() }
            try first.write("notes.txt", "notes v1")
            try first.sync(remote)
            let oldRemoteName = try first.vault.remoteUnlockName()
            try first.changePattern(to: 8)
            try first.write("notes.txt", "notes v2")
            #expect(throws: SyncDevice.Stop.self, "\(stop)") { try first.sync(remote, stoppingAt: stop, mounted: mounted) }
            // At this instant the remote opens, with one pattern or the other, to a whole state.
            for (seed, name) in [(UInt8(7), "old"), (8, "new")] {
                let device = try SyncDevice("\(name)-\(stop)", seed: seed)
                defer { device.finish() }
                do {
                    try device.sync(remote)
                    let notes = try device.tree()["notes.txt"]
                    #expect(["notes v1", "notes v2"].contains(notes), "\(stop): \(name) pattern")
                } catch SyncRefusal.noVault {
                    // This pattern's record is not on the remote at this instant.
                } catch SyncRefusal.patternChanging {
                    // The record is not the one the root lists (the new record is up and the
                    // root not yet, or the other way round): a joiner waits.
                    #expect(name == "new" ? stop == "root" : ["root#2", "remove", "former record"].contains(stop), "\(stop): \(name)")
                }
            }
            #expect(try first.read("notes.txt") == "notes v2")
            try first.sync(remote, mounted: mounted)
            #expect(try first.vault.formerRemoteUnlockName() == nil, "\(stop)")
            let names = try Self.remoteNames(remote)
            let newRemoteName = try first.vault.remoteUnlockName()
            #expect(!names.contains(oldRemoteName) && names.contains(newRemoteName), "\(stop)")
            let fresh = try SyncDevice("fresh-\(stop)", seed: 8)
            defer { fresh.finish() }
            try fresh.sync(remote)
            // A sync cut after its local commit and before its remote root keeps the remote's
            // tree as its base: the old-pattern probe's publish in between loses nothing.
            #expect(try fresh.read("notes.txt") == "notes v2", "\(stop)")
        }
    }
}
