import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultFormat
@testable import VaultSync

/// What the owner's sync after a withdrawal brings into the owner's storage of what the withdrawn
/// person wrote meanwhile (FORMAT.md §14.8, "What the withdrawn wrote before this sync"; SYNC-DESIGN
/// §3.6, "What the withdrawn wrote"). The merge leaves their changes out; the files holding them
/// need not come down: only the pages of the root read, which the sync must read to tell what
/// to leave out. B, the revoked friend, writes a file of three chunks and rewrites one chunk of
/// one of A's between A's `unshare` and A's sync, then may damage one of those chunks on the remote
/// (the provider could too). Real vaults on disk, a real rclone, a local remote.
@Suite(.serialized) struct WithdrawnFilesFetchTests {
    typealias Shared = SharedSyncTests
    typealias Kept = KeptOverDeleteSyncTests
    static let chunk = Format.payloadSize
    static let big = Kept.bytes(0xA7, chunks: 3)

    /// The names of the files that hold the content of `path` in `device`'s storage.
    static func contentNames(_ device: SyncDevice, _ path: String) throws -> Set<String> {
        let id = try device.id(path)
        return try device.vault.state.withLock { state in
            let item = try #require(state.tree.allItems[id])
            var numbers = item.chunks.values.map(\.fileNumber)
            if let member = item.packedMember { numbers.append(member.fileNumber) }
            return Set(try numbers.map { try state.name($0) })
        }
    }

    /// A's vault (keep.txt, big.bin of three chunks) shared with B and synced on both sides, then
    /// withdrawn; B, not knowing, writes and syncs: `window` names the files that B's sync put on
    /// the remote (`after`: their bytes), `blocks` those that hold B's new chunks.
    struct Window {
        let a: SyncDevice, b: SyncDevice, sharedB: SyncDevice
        let after: [String: Data]
        let window: Set<String>
        let blocks: Set<String>

        init(_ remote: TestRemote) throws {
            let codeB: ContactCode
            (a, b, sharedB, codeB) = try WithdrawnWritesSyncTests.sharedWithBob(remote, files: ["keep.txt": "alice's", "big.bin": ""])
            try a.write("big.bin", bytes: WithdrawnFilesFetchTests.big)
            try a.sync(remote)
            try sharedB.sync(remote)
            #expect(try Kept.contents(sharedB, "big.bin") == WithdrawnFilesFetchTests.big)
            try a.vault.unshare(with: codeB)
            try a.reopen()
            try sharedB.write("from-bob.bin", "")
            try sharedB.write("from-bob.bin", bytes: Kept.bytes(0xB5, chunks: 3))
            try sharedB.write("big.bin", bytes: Kept.bytes(0xB6, chunks: 1), at: UInt64(WithdrawnFilesFetchTests.chunk))
            let served = try #require(remote.servedFolder)
            let before = try Shared.files(served)
            try sharedB.sync(remote)
            // A file goes up as it lies in the storage, at its name (but the root and record).
            let after = try Shared.files(served)
            let window = Set(after.keys.filter { after[$0] != before[$0] })
            blocks = try WithdrawnFilesFetchTests.contentNames(sharedB, "from-bob.bin")
                .union(WithdrawnFilesFetchTests.contentNames(sharedB, "big.bin")).intersection(window)
            (self.after, self.window) = (after, window)
        }

        /// The files of B's window that A's storage holds with the bytes B sent.
        func broughtIn() throws -> Set<String> {
            let held = try Shared.files(a.folder)
            return window.filter { held[$0] != nil && held[$0] == after[$0] }
        }

        /// A kept its state whole, its storage checks clean in groups of 16, and B is told that
        /// access ended.
        func expectOwnersState(_ remote: TestRemote) throws {
            #expect(try Set(a.tree().keys) == ["keep.txt", "big.bin"] && a.read("keep.txt") == "alice's")
            #expect(try Kept.contents(a, "big.bin") == WithdrawnFilesFetchTests.big)
            let report = try a.vault.check()
            #expect(report.storageProblems.isEmpty && report.damagedItems.isEmpty, "\(report.storageProblems)")
            #expect(try Shared.files(a.folder).count % Format.groupSize == 0)
            #expect(Shared.refusal { try sharedB.sync(remote) } == SharingError.accessEnded.description)
            try sharedB.vault.lock()
        }
    }

    /// Both a `dotsafe sync` and a mount's round bring in the pages of B's root (read to leave
    /// B's changes out) and none of the four files holding B's new chunks.
    @Test(arguments: [false, true])
    func theOwnersSyncBringsInNoneOfTheWithdrawnPersonsChunks(mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let setUp = try Window(remote)
        defer { setUp.a.finish(); setUp.b.finish() }
        #expect(setUp.blocks.count == 4, "three chunks of B's new file, one of B's edit: \(setUp.blocks.count)")
        let summary = try setUp.a.sync(remote, mounted: mounted)
        let brought = try setUp.broughtIn()
        #expect(brought.isDisjoint(with: setUp.blocks),
                "B's chunks in A's storage: \(brought.intersection(setUp.blocks).count) of \(setUp.blocks.count)")
        // What remains is what the sync reads: the pages of B's root (here one), brought once.
        #expect(brought.count == 1, "B's files in A's storage: \(brought.count), \(summary.filesDown) down")
        #expect(summary.filesDown == 1, "B's one page, once: \(summary.line)")
        try setUp.expectOwnersState(remote)
    }

    /// A's round cut before each of its changes of the remote (a process that died there), then
    /// run again: B's chunks never come in, whatever the round read again.
    @Test(arguments: ["upload", "root", "grants", "record", "remove", "retire", "forget rotation"])
    func aRoundCutShortAndRunAgainBringsInNoneOfThem(stop: String) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let setUp = try Window(remote)
        defer { setUp.a.finish(); setUp.b.finish() }
        #expect(throws: SyncDevice.Stop.self, "\(stop)") { try setUp.a.sync(remote, stoppingAt: stop, mounted: true) }
        #expect(try setUp.broughtIn().isDisjoint(with: setUp.blocks), "\(stop): after the cut")
        try setUp.a.sync(remote, mounted: true)
        #expect(try setUp.broughtIn().isDisjoint(with: setUp.blocks), "\(stop)")
        try setUp.expectOwnersState(remote)
    }

    /// One of B's new chunks damaged on the remote (B, or the provider): the file is one the
    /// merge leaves out, so neither sync needs it, and neither stops at it.
    @Test(arguments: [false, true])
    func aDamagedChunkOfTheWithdrawnPersonDoesNotStopTheOwnersSync(mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let setUp = try Window(remote)
        defer { setUp.a.finish(); setUp.b.finish() }
        let served = try #require(remote.servedFolder)
        let victim = try #require(setUp.blocks.sorted().first)
        var damaged = try #require(setUp.after[victim])
        damaged[damaged.count / 2] ^= 0x5A
        try damaged.write(to: URL(fileURLWithPath: served + "/" + victim))
        try setUp.a.sync(remote, mounted: mounted)
        try setUp.expectOwnersState(remote)
        // The remote moved to A's keys: A's next sync has nothing to do.
        let again = try setUp.a.sync(remote, mounted: mounted)
        #expect(again.filesUp == 0 && again.filesDown == 0, "\(again)")
    }
}
