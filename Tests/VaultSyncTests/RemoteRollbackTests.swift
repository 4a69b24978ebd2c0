import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
@testable import VaultSync

/// A remote put back to an older state (a provider's restore, a backup copied over it): a
/// merge with it would take everything written since as deleted there, so the sync refuses with
/// one line and changes nothing on either side: `dotsafe sync` and a mount's round
/// (`mounted`: `MountedSynchronizer`, `mount --sync`) alike. Also when another device, which
/// never saw what was lost, synced with the old copy since and took its generation to this
/// device's or beyond (docs/SYNC-DESIGN.md §3.4, "A remote put back").
@Suite(.serialized) struct RemoteRollbackTests {
    static func contents(_ folder: String) throws -> [String: Data] {
        var result: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
            result[name] = FileManager.default.contents(atPath: folder + "/" + name)
        }
        return result
    }

    /// A copy of the remote as it is now; the function returned puts it back over the remote.
    static func copy(of remote: TestRemote) throws -> () throws -> Void {
        let served = try #require(remote.servedFolder), old = remote.folder + "/old"
        try FileManager.default.copyItem(atPath: served, toPath: old)
        return {
            try FileManager.default.removeItem(atPath: served)
            try FileManager.default.copyItem(atPath: old, toPath: served)
        }
    }

    /// What a refusal as put back says the user can do.
    static let wayOut = "nothing was changed, and this storage keeps its state: put the remote's newer copy back if there is one, "
        + "or go on from the remote as it is: sync into an empty storage folder, then copy into that vault what this storage "
        + "changed since its last sync; or, if this remote replaces the one the vault synced with, 'dotsafe sync --new-remote' "
        + "merges the two without a common state"

    /// `device`'s next sync (or round) is refused as a rollback, whose reason starts with
    /// `reason`; neither the remote nor the device's storage changes, and its tree stays.
    static func expectRefused(_ device: SyncDevice, _ remote: TestRemote, mounted: Bool, reason: String,
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
        let served = try #require(remote.servedFolder)
        let remoteBefore = try Self.contents(served), localBefore = try Self.contents(device.folder)
        let tree = try device.tree()
        let error = #expect(throws: SyncRefusal.self, sourceLocation: sourceLocation) { try device.sync(remote, mounted: mounted) }
        guard case .rolledBack = error else {
            Issue.record("not refused as rolled back: \(String(describing: error))", sourceLocation: sourceLocation)
            return
        }
        #expect(error!.description.hasPrefix("the vault on the remote is damaged: " + reason), "\(error!)", sourceLocation: sourceLocation)
        #expect(error!.description.hasSuffix(" (restored or rolled back?); " + Self.wayOut), "\(error!)", sourceLocation: sourceLocation)
        #expect(try Self.contents(served) == remoteBefore, "nothing changed on the remote", sourceLocation: sourceLocation)
        #expect(try Self.contents(device.folder) == localBefore, "nothing changed in the storage", sourceLocation: sourceLocation)
        try device.reopen()
        #expect(try device.tree() == tree, sourceLocation: sourceLocation)
    }

    @Test(arguments: [false, true])
    func aRemoteRolledBackIsRefusedAndNothingChanges(mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }
        let putBack = try Self.copy(of: remote)

        try first.write("newer.txt", "written after the copy")
        try first.sync(remote)
        try second.sync(remote, mounted: mounted)
        #expect(try second.read("newer.txt") == "written after the copy")

        // The old copy replaces the remote.
        try putBack()
        try Self.expectRefused(second, remote, mounted: mounted, reason: "it holds generation ")
        #expect(try second.read("newer.txt") == "written after the copy")
        // Refused again: the refusal changed nothing that would let a later sync merge.
        try Self.expectRefused(second, remote, mounted: mounted, reason: "it holds generation ")
        // The way out the line gives: an empty folder joins the remote as it is, and takes the
        // file by hand; the remote then holds it again.
        let again = try SyncDevice("desktop-again")
        defer { again.finish() }
        try again.sync(remote, mounted: mounted)
        #expect(try again.tree()["newer.txt"] == nil)
        try again.write("newer.txt", try second.read("newer.txt"))
        #expect(try again.sync(remote, mounted: mounted).filesUp > 0)
        let fresh = try SyncDevice("fresh")
        defer { fresh.finish() }
        try fresh.sync(remote)
        #expect(try fresh.read("newer.txt") == "written after the copy")
    }

    /// A second remote, new and empty (a USB folder beside the cloud), is not a put-back one:
    /// its own line says what it is. Refused all the same (the sync base is one per vault: a
    /// sync with it would make the next merge with the first remote take back what changed
    /// between), nothing changed on either side; the first remote goes on syncing.
    @Test(arguments: [false, true])
    func aSecondEmptyRemoteIsToldApartFromAPutBackOne(mounted: Bool) throws {
        let remote = try TestRemote(.local), usb = try TestRemote(.local)
        defer { remote.finish(); usb.finish() }
        let device = try SyncDevice("laptop")
        defer { device.finish() }
        try device.write("notes.txt", "notes")
        try device.sync(remote)
        let local = try Self.contents(device.folder), tree = try device.tree()
        let served = try #require(usb.servedFolder)
        let usbBefore = FileManager.default.fileExists(atPath: served) ? try Self.contents(served) : [:]

        let error = #expect(throws: SyncRefusal.self) { try device.sync(usb, mounted: mounted) }
        #expect(error == .otherRemote, "\(String(describing: error))")
        #expect(error?.description.hasPrefix("this remote holds no index of this vault") == true)
        #expect(error?.description.hasSuffix("nothing was changed; if this remote replaces the one the vault synced with (emptied, "
                                             + "or a move), 'dotsafe sync --new-remote' puts the vault there") == true)
        #expect((FileManager.default.fileExists(atPath: served) ? try Self.contents(served) : [:]) == usbBefore)
        #expect(try Self.contents(device.folder) == local, "nothing changed in the storage")
        try device.reopen()
        #expect(try device.tree() == tree)
        try device.write("more.txt", "more")
        #expect(try device.sync(remote, mounted: mounted).filesUp > 0)
    }

    /// `first` adds important.txt and syncs (a mount's round when `mounted`); the remote is put
    /// back to its copy from before; `second`, which never saw that file, adds desktop-N.txt and
    /// syncs with the old copy, `rounds` times.
    static func putBackThenSyncedElsewhere(_ remote: TestRemote, _ first: SyncDevice, _ second: SyncDevice, mounted: Bool,
                                           rounds: Int) throws {
        let putBack = try Self.copy(of: remote)
        try first.write("important.txt", "written after the copy")
        try first.sync(remote, mounted: mounted)
        try putBack()
        for round in 0..<rounds {
            try second.write("desktop-\(round).txt", "from the desktop")
            try second.sync(remote)
        }
    }

    /// The laptop adds a file and syncs; the remote is put back; the desktop, which never saw
    /// that file, changes something and syncs with the old copy twice: the remote is beyond the
    /// laptop's generation. Taking the remote as it is would delete the laptop's file, which the
    /// remote's device table says the laptop had not made: its sync is refused.
    @Test(arguments: [false, true])
    func aRemoteRolledBackThenSyncedPastByAnotherDeviceIsRefused(mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }
        try Self.putBackThenSyncedElsewhere(remote, first, second, mounted: mounted, rounds: 2)
        try Self.expectRefused(first, remote, mounted: mounted, reason: "it lacks items this device synced with at generation ")
        #expect(try first.read("important.txt") == "written after the copy")
    }

    /// As above, the desktop syncing once: the remote holds the laptop's generation written by
    /// another device, what a racing device's root written over the laptop's leaves
    /// (`RacedRootSyncTests`). Merged without a base, with the warning: nothing is taken as
    /// deleted, and both devices end with both files.
    @Test(arguments: [false, true])
    func aRemoteAtThisDevicesGenerationByAnotherMergesWithoutABase(mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }
        try Self.putBackThenSyncedElsewhere(remote, first, second, mounted: mounted, rounds: 1)
        let merge = try first.sync(remote, mounted: mounted)
        #expect(merge.warnings == [RemoteRollback.replacedRootWarning], "\(merge)")
        #expect(try first.read("important.txt") == "written after the copy")
        #expect(try first.read("desktop-0.txt") == "from the desktop")
        #expect(try second.sync(remote).warnings.isEmpty)
        #expect(try second.tree() == first.tree())
        #expect(try second.read("important.txt") == "written after the copy")
    }
}
