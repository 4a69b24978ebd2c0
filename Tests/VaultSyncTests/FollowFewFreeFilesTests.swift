import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultFormat
import VaultStore
@testable import VaultSync

/// docs/FORMAT.md §14.8, "The file count of a follow": a follow that starts with fewer than two
/// free files of groups the committed root owns commits a new group under the old keys first
/// (before anything comes down), and its slots take files of that group. A (the owner's first
/// device) follows its laptop's withdrawal of Y's grant, cut just before its switch: the count
/// is a multiple of 16 before each mutation of the whole follow and after the cut, a read-only
/// check is clean, and the next syncs bring every file everywhere. (The free files are those of
/// A's session: the others, free in its root, are held by the session, as a sync's staged
/// downloads hold some; a storage cannot be brought below one free file by the vault's own
/// commits, `UnshareFileCountTests.storage`.)
@Suite(.serialized) struct FollowFewFreeFilesTests {
    typealias Cuts = OwnerFollowCutTests
    typealias Shared = SharedSyncTests

    /// A's storage opened through a folder that counts (`cutAt`: and cuts), its session left with
    /// `free` free files.
    static func holding(_ a: SyncDevice, free: Int, cutAt: Int?) throws -> CutStorageFolder {
        let folder = try a.reopen { CutStorageFolder($0, cutAt: cutAt, countsFiles: true) }
        try a.vault.state.withLock { state in
            for number in state.writer.allocator.freeNumbers.dropFirst(free) {
                let held = state.writer.allocator.reserve(number)
                #expect(held)
            }
            let left = state.writer.allocator.freeCount
            try #require(left == free, "\(left) free files")
        }
        return folder
    }

    @Test(arguments: [0, 1])
    func aFollowWithFewFreeFilesCommitsAGroupFirst(free: Int) throws {
        let remote = try TestRemote(.local)
        let shared = try Cuts.Run.sharedOnTwoDevices(remote)
        let (a, b, sharedX, sharedY) = (shared.a, shared.b, shared.sharedX, shared.sharedY)
        let copies = try TestFolder.make("follow-few-free-copies")
        defer {
            for device in [a, b, shared.x, shared.y, sharedX, sharedY] { device.finish() }
            TestFolder.remove(copies)
            remote.finish()
        }
        try a.write("desktop.txt", "from the desktop")
        // Free files whatever the random cover count left: a chunked file's, written and
        // removed (`holding` keeps `free` of them; the full run once found none).
        try a.write("gone", String(repeating: "g", count: 600_000))
        try a.vault.remove(Array("gone".utf8), from: Vault.rootID)
        try a.vault.commit()
        try a.reopen()
        try b.vault.unshare(with: shared.codeY)
        try b.reopen()
        try b.write("after.txt", "after yvonne")
        try b.sync(remote)
        let served = try #require(remote.servedFolder)
        try SyncDevice.copyFiles(from: a.folder, to: copies + "/a")
        try SyncDevice.copyFiles(from: served, to: copies + "/remote")
        let before = try Shared.files(a.folder).count

        // The whole follow, counted: a group (16 files) comes first, then the count stays.
        // (`sync(_:beforeChange:)`: the vault is opened again from the disk, not locked first,
        // so that the folder counts the sync's mutations only.)
        let counting = try Self.holding(a, free: free, cutAt: nil)
        try a.sync(remote) { _ in }
        try Cuts.checkCounts(counting, a)
        let done = counting.done
        let group = try #require(done.firstIndex(of: "createGroup"), "\(done)")
        #expect(group < (done.firstIndex(of: "rename") ?? 0), "the group before the slots are lent: \(done)")
        let after = try Shared.files(a.folder).count
        #expect(after > before && after % Format.groupSize == 0, "\(before) files before, \(after) after")
        let switchAt = try #require(counting.done.lastIndex(of: "replace"), "\(counting.done)")

        // Cut just before the switch (the record's `replace`): the old root opens, and the
        // slots' files are of the group it owns, so the count is whole.
        try a.restore(from: copies + "/a")
        try SyncDevice.copyFiles(from: copies + "/remote", to: served)
        let cutting = try Self.holding(a, free: free, cutAt: switchAt)
        #expect(throws: (any Error).self) { try a.sync(remote) { _ in } }
        #expect(cutting.mutations == switchAt, "\(cutting.done.suffix(4))")
        #expect(a.reopenFailure == nil, "\(a.reopenFailure.map { "\($0)" } ?? "")")
        try Cuts.checkFirstDeviceAfterSwitchCut(a, b, sharedX, sharedY, remote, "\(free) free: cut before the switch, after \(cutting.done.suffix(4))")
    }
}
