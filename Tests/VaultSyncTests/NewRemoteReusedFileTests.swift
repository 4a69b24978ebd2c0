import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultFormat
@testable import VaultSync

/// The move's limit written in SYNC-DESIGN §3.4 "Moving to a new remote", played: the old remote
/// is gone while the laptop is behind. The desktop freed the files of its large file and took
/// the same numbers again for another file, synced with the old remote; the laptop never saw
/// that. The laptop moves first (its copy of the desktop's groups holds the OLD bytes at those
/// names), then the desktop moves (its storage holds the NEW bytes at the same names). A merge
/// would reference one name under two keys (R-SYN-4: two devices never write one name with
/// different content), and read here those names hold other bytes than the remote means: the
/// desktop's move is refused in its own line, before anything changes on either side, and the
/// way on the line gives (a join into an empty folder, the second file copied in) loses nothing.
@Suite(.serialized) struct NewRemoteReusedFileTests {
    typealias Rollback = RemoteRollbackTests

    static let refusal = "the remote holds files of this device as another device last saw them, before this device used them "
        + "again (the old remote was gone before that device synced again): merged, one file would hold two contents; nothing "
        + "was changed; to go on, sync into an empty storage folder from this remote, then copy into that vault what this "
        + "storage holds that it lacks"

    /// `laptopRenames`: the laptop renamed the large file and synced before the desktop removed it:
    /// its record then lies in the laptop's page, and only its chunks name the desktop's files.
    @Test(arguments: [false, true])
    func aFileNumberTheDesktopTookAgainAfterTheLaptopLastSyncedIsNotReadUnderTwoKeys(laptopRenames: Bool) throws {
        let old = try TestRemote(.local), fresh = try TestRemote(.local)
        defer { old.finish(); fresh.finish() }
        let (laptop, desktop) = try VaultSyncTests.twoDevices(old)
        defer { laptop.finish(); desktop.finish() }
        let large = String(repeating: "the desktop's first large file\n", count: 12_000)
        let second = String(repeating: "THE DESKTOP'S SECOND LARGE FILE\n", count: 12_000)
        try desktop.write("large.txt", large)
        try desktop.sync(old)
        try laptop.sync(old)
        #expect(try laptop.read("large.txt") == large)
        let path = laptopRenames ? "renamed.txt" : "large.txt"
        if laptopRenames {
            try laptop.rename("large.txt", to: path)
            try laptop.sync(old)
            try desktop.sync(old)
        }
        let largeID = try desktop.id(path)
        let firstFiles = Set(try desktop.vault.state.withLock { try $0.tree.item(largeID).fileNumbers })

        // The desktop removes it and takes its numbers again, synced each time with the old remote.
        try KilledJoinRemoteChangedTests.freeAndTakeAgain(desktop, old, removing: [path], writing: ["second.txt": second])
        let secondID = try desktop.id("second.txt")
        let secondFiles = Set(try desktop.vault.state.withLock { try $0.tree.item(secondID).fileNumbers })
        try #require(!firstFiles.isDisjoint(with: secondFiles), "the set-up must take a number again: \(firstFiles) \(secondFiles)")

        // The old remote is gone; the laptop moves first, then the desktop.
        laptop.replacesRemote = true
        try laptop.sync(fresh)
        desktop.replacesRemote = true
        let served = try #require(fresh.servedFolder)
        let remoteBefore = try Rollback.contents(served), localBefore = try Rollback.contents(desktop.folder)
        let treeBefore = try desktop.tree()
        for _ in 0..<2 {
            let error = #expect(throws: SyncRefusal.self) { try desktop.sync(fresh) }
            #expect(error == .ownFilesReused, "\(String(describing: error))")
            #expect(error?.description == Self.refusal)
            #expect(try Rollback.contents(served) == remoteBefore, "nothing changed on the remote")
            #expect(try Rollback.contents(desktop.folder) == localBefore, "nothing changed in the desktop's storage")
            try desktop.reopen()
            #expect(try desktop.tree() == treeBefore)
            #expect(try desktop.vault.check().isClean)
        }

        // The way on the line gives: an empty folder joins the new remote, and takes the file by hand.
        let again = try SyncDevice("desktop-again")
        defer { again.finish() }
        try again.sync(fresh)
        #expect(try again.tree()["second.txt"] == nil)
        try again.write("second.txt", try desktop.read("second.txt"))
        try again.sync(fresh)
        laptop.replacesRemote = false
        try laptop.sync(fresh)
        for device in [laptop, again] {
            let tree = try device.tree()
            #expect(tree["second.txt"] == second, "\(device.name): second.txt")
            #expect(tree[path] == large, "\(device.name): \(path)")
            let report = try device.vault.check()
            #expect(report.isClean, "\(device.name): \(report.damagedItems) \(report.storageProblems)")
            #expect(try StorageCount.files(device.folder) % Format.groupSize == 0)
        }
        #expect(try laptop.tree() == again.tree())
        try NewRemoteSyncTests.expectJoins(fresh, finding: try laptop.tree())
    }
}
