import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultFormat
@testable import VaultSync

/// `dotsafe sync --new-remote` (docs/SYNC-DESIGN.md §3.4, "Moving to a new remote"): the remote
/// a vault synced with is gone (emptied, or the user moves to another provider). A plain sync
/// is refused there for good (`RemoteRollbackTests`); with the flag the first device puts the
/// whole vault up, every device's files (a plain publish sends only its own: the old remote had
/// the rest), and each other device merges into it once without a base, losing nothing.
@Suite(.serialized) struct NewRemoteSyncTests {
    typealias Rollback = RemoteRollbackTests

    /// The laptop and the desktop synced with a remote, the desktop's large file among the
    /// laptop's files (its chunks are the desktop's: only the laptop's storage holds them once
    /// the remote is gone); then each writes offline.
    static func twoDevicesWritingOffline(_ remote: TestRemote) throws -> (SyncDevice, SyncDevice) {
        let (laptop, desktop) = try VaultSyncTests.twoDevices(remote)
        try desktop.write("docs/large.txt", Self.large)
        try desktop.sync(remote)
        try laptop.sync(remote)
        #expect(try laptop.read("docs/large.txt") == Self.large)
        try laptop.write("laptop-offline.txt", "written on the laptop offline")
        try laptop.write("notes.txt", "notes v2 from the laptop")
        try desktop.write("desktop-offline.txt", "written on the desktop offline")
        try desktop.write("docs/plan.txt", "plan v2 from the desktop")
        return (laptop, desktop)
    }

    static let large = String(repeating: "a line of the desktop's large file\n", count: 12_000)

    /// What both devices hold after both moved and synced: a merge without a base keeps each
    /// file that differs twice (the remote's at its name), so the two edits of files both
    /// held come with a copy each of what the other side held.
    static func expectMerged(_ tree: [String: String], sourceLocation: SourceLocation = #_sourceLocation) {
        let texts = ["plan v1", "plan v2 from the desktop", large, "notes v1", "notes v2 from the laptop",
                     "written on the laptop offline", "written on the desktop offline"]
        #expect(tree.values.filter { !$0.isEmpty }.sorted() == texts.sorted(), "\(tree.keys.sorted())", sourceLocation: sourceLocation)
        #expect(tree["notes.txt"] == "notes v2 from the laptop" && tree["docs/plan.txt"] == "plan v1", sourceLocation: sourceLocation)
        #expect(tree["laptop-offline.txt"] != nil && tree["desktop-offline.txt"] != nil, sourceLocation: sourceLocation)
    }

    /// The storage's files are whole and in steps of 16, and a read-only open finds nothing wrong.
    static func expectClean(_ device: SyncDevice, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(try SyncDevice.readOnlyView(device.folder, seed: device.seed, sharedBy: device.sharedBy) == [],
                "\(device.name)", sourceLocation: sourceLocation)
        #expect(try StorageCount.files(device.folder) % Format.groupSize == 0, "\(device.name)", sourceLocation: sourceLocation)
    }

    /// A new device joins `remote` into an empty folder: it finds `tree` there, and its storage is clean.
    static func expectJoins(_ remote: TestRemote, seed: UInt8 = SyncDevice.seed, finding tree: [String: String],
                            sourceLocation: SourceLocation = #_sourceLocation) throws {
        let served = try #require(remote.servedFolder)
        #expect(try StorageCount.files(served) % Format.groupSize == 0, "the remote's count", sourceLocation: sourceLocation)
        let phone = try SyncDevice("phone", seed: seed)
        defer { phone.finish() }
        try phone.sync(remote)
        #expect(try phone.tree() == tree, sourceLocation: sourceLocation)
        try Self.expectClean(phone, sourceLocation: sourceLocation)
    }

    /// `device`'s plain sync with `remote` is refused with `expected`; nothing changes on either side.
    static func expectRefused(_ device: SyncDevice, _ remote: TestRemote, _ expected: SyncRefusal,
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
        let served = try #require(remote.servedFolder)
        let remoteBefore = FileManager.default.fileExists(atPath: served) ? try Rollback.contents(served) : [:]
        let localBefore = try Rollback.contents(device.folder), tree = try device.tree()
        let error = #expect(throws: SyncRefusal.self, sourceLocation: sourceLocation) { try device.sync(remote) }
        #expect(error == expected, "\(String(describing: error))", sourceLocation: sourceLocation)
        #expect(error?.description.contains("'dotsafe sync --new-remote'") == true, sourceLocation: sourceLocation)
        #expect((FileManager.default.fileExists(atPath: served) ? try Rollback.contents(served) : [:]) == remoteBefore,
                "nothing changed on the remote", sourceLocation: sourceLocation)
        #expect(try Rollback.contents(device.folder) == localBefore, "nothing changed in the storage", sourceLocation: sourceLocation)
        try device.reopen()
        #expect(try device.tree() == tree, sourceLocation: sourceLocation)
    }

    /// `emptied`: the old remote emptied and used again; else a new one, the old one kept (and
    /// refused afterwards, as it holds less than the devices synced with).
    @Test(arguments: [false, true])
    func aVaultMovesToANewRemoteAndBothDevicesKeepTheirOfflineWrites(emptied: Bool) throws {
        let old = try TestRemote(.local), fresh = emptied ? nil : try TestRemote(.local)
        defer { old.finish(); fresh?.finish() }
        let (laptop, desktop) = try Self.twoDevicesWritingOffline(old)
        defer { laptop.finish(); desktop.finish() }
        let oldCopy = try Rollback.copy(of: old)
        if emptied { try FileManager.default.removeItem(atPath: try #require(old.servedFolder)) }
        let remote = fresh ?? old

        try Self.expectRefused(laptop, remote, .otherRemote)
        laptop.replacesRemote = true
        let moved = try laptop.sync(remote)
        #expect(moved.warnings.isEmpty && moved.filesDown == 0 && moved.conflicts == 0, "\(moved)")
        let laptopTree = try laptop.tree()
        try Self.expectJoins(remote, finding: laptopTree)

        // The desktop's plain sync takes the remote for a rolled-back one: refused, nothing changed.
        let rolledBack = try #require(Self.refusal { try desktop.sync(remote) })
        guard case .rolledBack = rolledBack else { Issue.record("\(rolledBack)"); return }
        try Self.expectRefused(desktop, remote, rolledBack)
        desktop.replacesRemote = true
        let merge = try desktop.sync(remote)
        #expect(merge.warnings == [RemoteRollback.newRemoteWarning], "\(merge)")
        #expect(merge.conflicts == 2, "\(merge)")
        Self.expectMerged(try desktop.tree())

        // From now on plain syncs, on both, and nothing lost anywhere.
        laptop.replacesRemote = false
        desktop.replacesRemote = false
        try laptop.sync(remote)
        #expect(try desktop.sync(remote).warnings.isEmpty)
        Self.expectMerged(try laptop.tree())
        #expect(try desktop.tree() == laptop.tree())
        try desktop.write("after.txt", "after the move")
        try desktop.sync(remote)
        try laptop.sync(remote)
        #expect(try laptop.read("after.txt") == "after the move")
        for device in [laptop, desktop] { try Self.expectClean(device) }
        try Self.expectJoins(remote, finding: try laptop.tree())

        // The old remote, back (put back when it was emptied), is refused without the flag.
        if emptied { return }
        try oldCopy()
        let again = try #require(Self.refusal { try laptop.sync(old) })
        try Self.expectRefused(laptop, old, again)
    }

    /// Where a plain sync works, the flag changes nothing: no warning, no conflict copy.
    @Test func theFlagWithTheRemoteThisDeviceSyncedWithIsAPlainSync() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (laptop, desktop) = try VaultSyncTests.twoDevices(remote)
        defer { laptop.finish(); desktop.finish() }
        try desktop.write("notes.txt", "notes from the desktop")
        try desktop.sync(remote)
        try laptop.write("docs/plan.txt", "plan from the laptop")
        laptop.replacesRemote = true
        let sync = try laptop.sync(remote)
        #expect(sync.warnings.isEmpty && sync.conflicts == 0, "\(sync)")
        #expect(try laptop.tree() == ["docs/": "", "docs/plan.txt": "plan from the laptop", "notes.txt": "notes from the desktop"])
    }

    /// The move cut before each change to the remote, as a killed process (before the uploads;
    /// after them, a file torn and one missing as a kill in the batch leaves them; after the
    /// record; after the first root slot): the storage is clean, and the next run finishes it.
    @Test(arguments: ["upload", "record", "root", "root#2"])
    func aMoveCutAnywhereFinishesOnTheNextRun(cut: String) throws {
        let old = try TestRemote(.local), remote = try TestRemote(.local)
        defer { old.finish(); remote.finish() }
        let (laptop, desktop) = try Self.twoDevicesWritingOffline(old)
        defer { laptop.finish(); desktop.finish() }
        laptop.replacesRemote = true
        #expect(throws: SyncDevice.Stop.self) { try laptop.sync(remote, stoppingAt: cut) }
        try Self.expectClean(laptop)
        let served = try #require(remote.servedFolder)
        if cut == "record" || cut == "root" {
            let record = try laptop.vault.remoteUnlockName()
            let names = try FileManager.default.contentsOfDirectory(atPath: served).filter { FileName.isWellFormed($0) && $0 != record }.sorted()
            try #require(names.count > 16, "\(names.count)")
            try FileManager.default.removeItem(atPath: served + "/" + names[3])
            let torn = try FileHandle(forWritingTo: URL(fileURLWithPath: served + "/" + names[7]))
            try torn.truncate(atOffset: UInt64(Format.fileSize / 2))
            try torn.close()
        }
        try laptop.sync(remote)
        try Self.expectClean(laptop)
        try Self.expectJoins(remote, finding: try laptop.tree())
        desktop.replacesRemote = true
        try desktop.sync(remote)
        desktop.replacesRemote = false
        laptop.replacesRemote = false
        try laptop.sync(remote)
        Self.expectMerged(try laptop.tree())
        #expect(try desktop.tree() == laptop.tree())
    }

    /// A shared vault moved: its grant goes up with it, at its name. The grantee, before the
    /// owner moved it, is told the vault is not there yet, nothing changed; after, its plain
    /// sync is refused as the owner's other devices' are, and with the flag it merges, its
    /// offline write kept on both sides.
    @Test func aSharedVaultMovesAndItsGranteeFollows() throws {
        let old = try TestRemote(.local), remote = try TestRemote(.local)
        defer { old.finish(); remote.finish() }
        let trio = try SharingTrio()
        defer { trio.finish() }
        let (alice, bob, codeA) = (trio.a, trio.b, trio.codeA)
        try alice.vault.share(with: trio.codeB)
        try alice.reopen()
        try alice.sync(old)
        let shared = try SyncDevice("bob", sharedWith: bob, by: codeA)
        try shared.sync(old)
        #expect(try shared.tree() == alice.tree())
        try shared.write("from-bob.txt", "made by bob offline")
        try alice.write("from-alice.txt", "made by alice offline")

        shared.replacesRemote = true
        let served = try #require(remote.servedFolder)
        let storage = try Rollback.contents(bob.folder)
        let early = SharedSyncTests.refusal { try shared.sync(remote) }
        #expect(early == SharingError.sharedVaultNotOnRemote.description)
        #expect(try Rollback.contents(bob.folder) == storage && !FileManager.default.fileExists(atPath: served))
        try shared.reopen()

        alice.replacesRemote = true
        try alice.sync(remote)
        shared.replacesRemote = false
        let refused = try #require(Self.refusal { try shared.sync(remote) })
        #expect(refused.description.contains("'dotsafe sync --new-remote'"), "\(refused)")
        try shared.reopen()
        shared.replacesRemote = true
        #expect(try shared.sync(remote).warnings == [RemoteRollback.newRemoteWarning])
        alice.replacesRemote = false
        shared.replacesRemote = false
        try alice.sync(remote)
        let both = ["hello.txt": "hello from alice", "from-alice.txt": "made by alice offline", "from-bob.txt": "made by bob offline"]
        #expect(try alice.tree() == both)
        #expect(try shared.tree() == both)
        #expect(try shared.sync(remote).warnings.isEmpty)
        try Self.expectJoins(remote, seed: 0xA1, finding: both)
    }

    /// The error `body` throws as a sync refusal; nil (and a failure) when it succeeds.
    static func refusal(_ body: () throws -> Void) -> SyncRefusal? {
        do { try body() } catch let error as SyncRefusal { return error } catch { Issue.record("\(error)") }
        Issue.record("expected a refusal")
        return nil
    }
}
