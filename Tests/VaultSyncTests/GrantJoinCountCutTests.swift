import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultFormat
import VaultStore
@testable import VaultSync

/// A first sync into a vault with a grant keeps the storage's count of files in steps of 16 at
/// every instant (docs/FORMAT.md §3, §13.12 "A join keeps whole groups", §14.9; ADVERSARIES.md:
/// the copier, the crash), and one cut at any mutation is finished by the next sync. A join of
/// the owner's device brought the group of the grant's number with 15 files and the grant
/// alone after it; a grantee's first sync made the owner record's stand-in and its own grant
/// one file at a time. Real vaults on disk, a real rclone, a local remote.
@Suite(.serialized) struct GrantJoinCountCutTests {
    /// Alice's vault on `remote`, with a file of a few chunks and a grant to Bob; Bob's own
    /// vault is locked (his storage is where the shared vault comes).
    struct Shared {
        let alice: SyncDevice, bob: SyncDevice
        let codeA: ContactCode
        let grant: String, grantBytes: [UInt8]
        let expected: [String: String]

        init(_ remote: TestRemote) throws {
            alice = try SyncDevice("alice", seed: 0xA1)
            bob = try SyncDevice("bob", seed: 0xB2)
            let codeB = try bob.vault.contactCode().code
            try bob.vault.lock()
            try alice.write("hello.txt", "hello from alice")
            try alice.write("big.txt", String(repeating: "s", count: 70_000))
            codeA = try alice.vault.contactCode().code
            try alice.vault.share(with: codeB)
            try alice.reopen()
            try alice.sync(remote)
            grant = try StorageCount.onlyGrant(alice).name
            grantBytes = try #require(FileManager.default.contents(atPath: alice.folder + "/" + grant)).map { $0 }
            expected = try alice.tree()
        }

        func finish() {
            alice.finish()
            bob.finish()
        }

        /// The grant in `device`'s storage as Alice wrote it, in its number's place.
        func holdsGrant(_ device: SyncDevice, _ place: String) throws {
            #expect(FileManager.default.contents(atPath: device.folder + "/" + grant).map { [UInt8]($0) } == grantBytes, "\(place): the grant")
            let number = try StorageCount.grants(device)[grant]
            #expect(number.map { !device.storageNames.contains($0) } == true, "\(place): its number's name")
        }
    }

    @Test func anOwnersJoinIntoAVaultWithAGrantKeepsWholeGroupsAndResumesFromACutAtAny() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let shared = try Shared(remote)
        defer { shared.finish() }

        let counter = try SyncDevice("alice-desktop-count", seed: 0xA1)
        defer { counter.finish() }
        let counting = try StorageCount.countedSync(counter, remote)
        #expect(try counter.tree() == shared.expected)
        #expect(StorageCount.uneven(counting).isEmpty, "files before mutation: \(StorageCount.uneven(counting)) of \(counting.done)")
        #expect(try StorageCount.files(counter.folder) % Format.groupSize == 0)
        try shared.holdsGrant(counter, "counted")

        let desktop = try SyncDevice("alice-desktop", seed: 0xA1)
        defer { desktop.finish() }
        var run = try CutSyncRun(desktop, remote, before: try desktop.tree(), expected: shared.expected)
        defer { run.remove() }
        let failures = try StorageCount.cutEach(&run, 0..<counting.mutations) { (place: String) throws in
            guard place.hasSuffix("then a sync") else { return }
            try shared.holdsGrant(desktop, place)
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "; "))")
        try run.finish(with: shared.alice)

        // The grant still opens the vault for Bob.
        let sharedB = try SyncDevice("bob", sharedWith: shared.bob, by: shared.codeA)
        try sharedB.sync(remote)
        #expect(try sharedB.read("hello.txt") == "hello from alice")
        try sharedB.vault.lock()
    }

    @Test func aGranteesFirstSyncKeepsWholeGroupsAndResumesFromACutAtAny() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let shared = try Shared(remote)
        defer { shared.finish() }

        // Every cut starts from Bob's storage before his first sync of the shared vault.
        let sharedB = try SyncDevice("bob", sharedWith: shared.bob, by: shared.codeA)
        let before = try sharedB.tree()
        var run = try CutSyncRun(sharedB, remote, before: before, expected: shared.expected)
        defer { run.remove() }
        let counting = try StorageCount.countedSync(sharedB, remote)
        #expect(try sharedB.tree() == shared.expected)
        #expect(StorageCount.uneven(counting).isEmpty, "files before mutation: \(StorageCount.uneven(counting)) of \(counting.done)")
        #expect(try StorageCount.files(sharedB.folder) % Format.groupSize == 0)

        let failures = try StorageCount.cutEach(&run, 0..<counting.mutations) { (place: String) throws in
            guard place.hasSuffix("then a sync") else { return }
            #expect(try sharedB.read("big.txt") == String(repeating: "s", count: 70_000), "\(place)")
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "; "))")
        try run.finish(with: shared.alice)
        #expect(try sharedB.read("hello.txt") == "hello from alice")
        try sharedB.vault.lock()
    }
}
