import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultFormat
import VaultStore
@testable import VaultSync

/// A grant comes down over the file at its number's name (FORMAT.md §14.9), so that the count
/// never moves; in a join, that file may be one another state in the storage reads. The second
/// device's state read z.bin; the first device (device 0) deleted it, synced until its files
/// were free, then shared until a grant took a number the second's state reads, withdrew one
/// grant (§14.8: a new RL) and changed the pattern. The new pattern synced into the second's
/// storage is a join over the old state (§13.12; a killed sync of the second placed the files
/// the remote root references). ADVERSARIES.md: the user who moves on to the new pattern where
/// the old state still holds what it alone has. Real vaults on disk, a real rclone, a local
/// remote.
@Suite(.serialized) struct GrantPlaceOtherStateTests {
    /// Without `--replace-partial-join` the file at the grant's number keeps its bytes and the
    /// old pattern reads its state as before. (The join stops before its grants come, refused by
    /// a file it compares that differs.)
    @Test func aJoinsGrantLeavesTheFileTheOldStateReadsAtItsNumber() throws {
        try Self.withTheNewPatternOverTheOldState { first, second, remote, state in
            do {
                try second.sync(remote)
                #expect(try second.tree() == first.tree(), "the join brings the vault")
                #expect(try second.vault.check().isClean)
            } catch SyncRefusal.heldUnderOtherPattern {
                #expect(try SharedSyncTests.files(second.folder) == state.before, "a refused join changes no file")
            }
            #expect(try SharedSyncTests.files(second.folder)[state.place] == state.before[state.place], "the file at the grant's number is as it was")
            #expect(try PatternFollowTests.view(second.folder, seed: SyncDevice.seed) == state.tree, "the old pattern opens its state")
            let old = try Vault.open(storage: try Storage.open(at: second.folder), secrets: try SyncDevice.secrets(SyncDevice.seed),
                                     options: Vault.Options(readOnly: true, cacheBytes: 8 << 20))
            defer { try? old.lock() }
            let zID = try old.lookup(Vault.rootID, Array("z.bin".utf8))
            #expect(try old.read(zID, offset: 0, count: state.zBytes.count) == state.zBytes, "z reads as before with the old pattern")
        }
    }

    /// The same where the grant is all that differs: the second's storage holds the remote's
    /// bytes at every other name the two share (as a sync of the old pattern killed later would
    /// have left it; made so here by copying them), so every file the join compares is the one
    /// here, and what stops it is the file at the grant's number (`refuseForeignGrantPlaces`).
    /// No file changes.
    @Test func aJoinIsRefusedAtItsGrantsNumberAlone() throws {
        try Self.withTheNewPatternOverTheOldState { _, second, remote, state in
            let remoteFiles = try SharedSyncTests.files(try #require(remote.servedFolder))
            for (name, bytes) in remoteFiles where state.before[name] != nil && name != state.place {
                try bytes.write(to: URL(fileURLWithPath: second.folder + "/" + name))
            }
            let before = try SharedSyncTests.files(second.folder)
            #expect(remoteFiles[state.place] == nil && before[state.place] != remoteFiles[state.grant], "the grant differs from the file at its number")
            let refusal = SharedSyncTests.refusal { try second.sync(remote) }
            #expect(refusal == "\(SyncRefusal.heldUnderOtherPattern)")
            #expect(try SharedSyncTests.files(second.folder) == before, "a refused join changes no file")
        }
    }

    /// Told that no other state is here (`--replace-partial-join`, §13.12), the join's grant goes
    /// over the old state's file at its number: that file is one the join replaced, and the line
    /// of a join stopped after it (a signal after its commit) counts it with the others. The
    /// count is the truth: every file that was here when it began and no longer holds its bytes.
    @Test func aReplacingJoinCountsTheFileItsGrantWentOver() throws {
        try Self.withTheNewPatternOverTheOldState { _, second, remote, state in
            var thrown: (any Error)?
            var synchronizer = VaultSynchronizer(vault: second.vault, remote: try SyncDevice.remoteStorage(remote),
                                                 storageFolder: second.folder, deviceName: second.name)
            synchronizer.replacesPartialJoin = true
            synchronizer.beforeChange = { if $0 == "upload" { throw SyncDevice.Stop() } }
            do { _ = try synchronizer.run() } catch { thrown = error }
            second.reopenAfterCrash()
            let error = try #require(thrown, "the join was not stopped")
            let told = (error as? FailedAfterJoinReplaced)?.replaced ?? 0

            let after = try SharedSyncTests.files(second.folder)
            let changed = state.before.keys.filter { after[$0] != state.before[$0] }
            #expect(changed.contains(state.place), "the grant went over the file at its number")
            #expect(after.count % 16 == 0, "whole groups: \(after.count) files")
            #expect(told == changed.count, "told \(told) replaced, \(changed.count) files of the old state changed")
            #expect("\(error)" == "\(SyncDevice.Stop())" + "; " + FailedReplacingJoinCommandTests.stays(changed.count))
            #expect(try PatternFollowTests.view(second.folder, seed: 8) != nil, "the new pattern opens the vault")
        }
    }

    /// A replacing join that fails after its grant went over the old state's file (a chunk file
    /// damaged on the remote, which comes down after the grants): the grant goes back to its
    /// number's name, where its group stands whole, and the line counts that file with what
    /// stays. Before, what the join placed went and took the grant with it, the group one file
    /// short (a count off a multiple of 16, for any observer to see). The next join, the remote
    /// mended, goes through.
    @Test func aFailedReplacingJoinPutsItsGrantBackInItsPlace() throws {
        try Self.withTheNewPatternOverTheOldState { first, second, remote, state in
            try first.write("late.txt", String(repeating: "l", count: 300_000))
            try first.reopen()
            try first.sync(remote)
            let lateFile = try #require(try KeptOverDeleteSyncTests.chunkFiles(first, "late.txt").max { $0.key < $1.key }?.value)
            let served = try #require(remote.servedFolder) + "/" + (try first.vault.state.withLock { try $0.name(lateFile) })
            let written = try #require(FileManager.default.contents(atPath: served))
            var damaged = written
            damaged[1000] ^= 0xff
            try damaged.write(to: URL(fileURLWithPath: served))

            second.replacesPartialJoin = true
            var thrown: (any Error)?
            do { try second.sync(remote) } catch { thrown = error }
            // `dotsafe sync` is a process of its own: the next opens the vault afresh.
            second.reopenAfterCrash()
            let line = try #require(thrown.map { "\($0)" }, "the join over the damaged file went through")
            let after = try SharedSyncTests.files(second.folder)
            let remoteFiles = try SharedSyncTests.files(try #require(remote.servedFolder))
            #expect(after[state.place] == remoteFiles[state.grant], "the file at the grant's number is not the grant")
            #expect(after[state.grant] == nil, "the grant stayed at its own name")
            #expect(after.count % Format.groupSize == 0, "\(after.count) files")
            #expect(Set(after.keys) == Set(state.before.keys), "the storage's names changed")
            let rewritten = state.before.keys.filter { after[$0] != state.before[$0] }
            #expect(line == "the vault on the remote is damaged: file \(FileRef(raw: lateFile)) does not open under its key; "
                    + FailedReplacingJoinCommandTests.stays(rewritten.count), "\(line)")

            try written.write(to: URL(fileURLWithPath: served))
            try second.sync(remote)
            #expect(try second.tree() == first.tree(), "the next join brings the vault")
            #expect(try second.vault.check().isClean)
        }
    }

    /// Two devices of one vault, the second's storage holding an old state under a grant's
    /// number (`grantOverOldState`) and switched to the first's new pattern, then `body`.
    static func withTheNewPatternOverTheOldState(_ body: (SyncDevice, SyncDevice, TestRemote, OldState) throws -> Void) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }
        let state = try grantOverOldState(first, second, remote)
        try second.usePattern(8)
        try body(first, second, remote, state)
    }

    struct OldState {
        /// The name of the grant's number, a file of z that the old state reads.
        let place: String
        /// The grant's own name.
        let grant: String
        let tree: [String: String]
        let before: [String: Data]
        let zBytes: [UInt8]
    }

    /// The first device shares and changes its pattern until the remote root lists a grant at a
    /// number whose file the second's old state reads (z.bin's); the second's storage as it is
    /// then.
    static func grantOverOldState(_ first: SyncDevice, _ second: SyncDevice, _ remote: TestRemote) throws -> OldState {
        try first.sync(remote)  // the first device learns of the second
        try PatternFollowRefusalTests.writeInOneCommit(first, "z.bin", chunks: 8)
        let zFile = try #require(try KeptOverDeleteSyncTests.chunkFiles(first, "z.bin").values.min())
        try first.sync(remote)
        try second.sync(remote)
        let zBytes = try KeptOverDeleteSyncTests.contents(second, "z.bin")
        try first.vault.remove(Array("z.bin".utf8), from: Vault.rootID)
        try first.vault.commit()
        try first.sync(remote)
        try first.sync(remote)  // reads its root back: z's files are no longer pinned
        // The second's sync brings the first's files, killed before its commit: its state still
        // reads z, and every file the remote root references is here with the remote's bytes.
        try PatternFollowRefusalTests.killBeforeCommit(second, remote) { try !ReplacedIndexPageTests.references($0, zFile) }
        let read = second.vault.state.withLock { Set($0.referencedFiles().map(\.file)) }
        try #require(read.contains(zFile), "the second's state reads z")

        // Shares (no page written) take the lowest free numbers until one is a file the second reads.
        var codes: [ContactCode] = [], grant: UInt64?
        for seed in UInt8(0xC0)..<0xD0 where grant == nil {
            let contact = try SyncDevice("contact-\(seed)", seed: seed)
            defer { contact.finish() }
            codes.append(try contact.vault.contactCode().code)
            try first.vault.share(with: codes.last!)
            try first.reopen()
            let grants = first.vault.state.withLock { $0.committer.formatTwo?.specialFiles.filter(\.isGrantFile).map(\.file.raw) ?? [] }
            grant = grants.first(where: read.contains)
        }
        let shared = try #require(grant, "no grant took a number the second reads")
        try first.sync(remote)
        try first.vault.unshare(with: codes.last!)
        try first.reopen()
        try first.sync(remote)
        try first.changePattern(to: 8)
        try first.sync(remote)
        let place = try second.vault.state.withLock { try $0.name(shared) }
        let grantName = try #require(first.vault.state.withLock { state in
            state.committer.formatTwo?.specialFiles.first { $0.isGrantFile && $0.file.raw == shared }.map { FileName.encode($0.name) }
        })
        return OldState(place: place, grant: grantName, tree: try second.tree(), before: try SharedSyncTests.files(second.folder), zBytes: zBytes)
    }
}
