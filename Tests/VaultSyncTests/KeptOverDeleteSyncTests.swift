import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultFormat
@testable import VaultSync

/// Rule 5 of the merge (docs/SYNC-DESIGN.md §2) keeps an item edited here over its delete on the
/// remote; §3.2 lets the device that deleted it reuse its files as soon as its own published root
/// no longer references them. So the kept item can reach the remote still pointing at files of
/// that device which now hold something else (found in review): each device must end with the
/// kept item's bytes, the other device's new file, and a clean check.
@Suite(.serialized) struct KeptOverDeleteSyncTests {
    /// What the device that keeps x.bin did to it while the other deleted it.
    enum Edit: String, CaseIterable, CustomStringConvertible {
        /// One chunk of three written: the other two still point at the deleter's files.
        case content
        case rename
        case chmod
        var description: String { rawValue }
    }

    static let chunk = Format.payloadSize

    /// `chunks` whole chunks, each of its own bytes.
    static func bytes(_ seed: UInt8, chunks: Int) -> [UInt8] {
        (0..<chunks * chunk).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ ($0 / chunk) &* 13 &+ Int(seed)) }
    }

    static func contents(_ device: SyncDevice, _ path: String) throws -> [UInt8] {
        let id = try device.id(path)
        return try device.vault.read(id, offset: 0, count: Int(try device.vault.attributes(id).size))
    }

    /// The raw FileRefs of the chunks of the file at `path`, by chunk index.
    static func chunkFiles(_ device: SyncDevice, _ path: String) throws -> [Int: UInt64] {
        let id = try device.id(path)
        return try device.vault.state.withLock { state in
            try #require(state.tree.allItems[id]).chunks.mapValues(\.fileNumber)
        }
    }

    /// The pack file and offset of the small file at `path`.
    static func memberPlace(_ device: SyncDevice, _ path: String) throws -> [UInt64] {
        let id = try device.id(path)
        return try device.vault.state.withLock { state in
            let member = try #require(state.tree.allItems[id]?.packedMember)
            return [member.fileNumber, UInt64(member.offset)]
        }
    }

    /// Writes y.bin over the free files of `device` (those its last sync freed among them, but
    /// for the few kept for pages, `FileWriter.reservedFiles`); returns its bytes. `reaching`:
    /// only as many chunks as reach the last of those files, not every free file: the allocator
    /// hands out the lowest free number first (a group that data makes for the reserve's sake
    /// comes after them).
    static func writeOverFreeFiles(_ device: SyncDevice, seed: UInt8, reaching files: Set<UInt64>? = nil) throws -> [UInt8] {
        let free = device.vault.state.withLock { $0.writer.allocator.freeNumbers }
        var count = free.count
        if let files, let last = free.lastIndex(where: files.contains) { count = last + 1 }
        let y = Self.bytes(seed, chunks: max(count, 3))
        try device.write("y.bin", "")
        try device.write("y.bin", bytes: y)
        return y
    }

    /// After a sync that published, the own files of the remote root it read stay pinned until
    /// the next sync's commit (a racing root may come from that root: docs/SYNC-DESIGN.md §3.4
    /// step 7). `path` written again with its own bytes (new keys: a change to publish) and a
    /// sync free them, so that the device reuses them.
    static func releaseReadRootPins(_ device: SyncDevice, _ remote: TestRemote, rewriting path: String = "notes.txt") throws {
        let id = try device.id(path), bytes = try contents(device, path)
        try device.vault.truncate(id, size: 0)
        try device.write(path, bytes: bytes)
        try device.sync(remote)
    }

    /// Two devices (`VaultSyncTests.twoDevices`) that both hold x.bin, 3 chunks of `seed` the
    /// owner (device 0) wrote; the keeper's sync is a mount's round when `mounted`. Returns x's
    /// bytes and the owner's files of its chunks.
    static func bothHoldX(_ remote: TestRemote, seed: UInt8, mounted: Bool)
        throws -> (owner: SyncDevice, keeper: SyncDevice, x: [UInt8], xFiles: [Int: UInt64]) {
        let (owner, keeper) = try VaultSyncTests.twoDevices(remote)
        let x = Self.bytes(seed, chunks: 3)
        try owner.write("x.bin", "")
        try owner.write("x.bin", bytes: x)
        try owner.sync(remote)
        try keeper.sync(remote, mounted: mounted)
        #expect(try Self.contents(keeper, "x.bin") == x)
        return (owner, keeper, x, try Self.chunkFiles(owner, "x.bin"))
    }

    static func expectIntact(_ device: SyncDevice, _ expected: Set<String>, x: (path: String, bytes: [UInt8], mode: UInt32),
                             y: [UInt8], _ comment: String) throws {
        let names = Set(try device.tree().keys)
        #expect(names == expected, "\(comment) \(device.name): \(names.sorted())")
        #expect(try contents(device, x.path) == x.bytes, "\(comment) \(device.name): x holds the kept edit and its other chunks")
        #expect(try device.vault.attributes(try device.id(x.path)).mode & 0o7777 == x.mode, "\(comment) \(device.name)")
        #expect(try contents(device, "y.bin") == y, "\(comment) \(device.name): y holds its own bytes")
        let report = try device.vault.check()
        #expect(report.isClean, "\(comment) \(device.name): \(report.damagedItems) \(report.storageProblems)")
    }

    /// After the keeper's merge: the keeper, the owner after its next sync, the keeper after
    /// its next, and a device new to the vault pass `expectIntact`.
    static func expectIntactEverywhere(_ remote: TestRemote, _ owner: SyncDevice, _ keeper: SyncDevice, mounted: Bool,
                                       _ expectIntact: (SyncDevice, String) throws -> Void) throws {
        try expectIntact(keeper, "after the keeper's merge:")
        try owner.sync(remote)
        try expectIntact(owner, "after the owner's next sync:")
        try keeper.sync(remote, mounted: mounted)
        try expectIntact(keeper, "after the keeper's next sync:")
        let third = try SyncDevice("third")
        defer { third.finish() }
        try third.sync(remote)
        try expectIntact(third, "a device new to the vault:")
    }

    /// The owner (device 0) wrote x.bin and deleted it after both devices had it; once that
    /// delete is up it writes y.bin into x's files. The keeper changed x meanwhile and syncs
    /// only then. `mounted`: the keeper's syncs are a mount's rounds. A rename and a chmod, which
    /// keep the same chunks, run in one way each.
    @Test(arguments: [(Edit.content, false), (.content, true), (.rename, false), (.chmod, true)])
    func anItemKeptOverADeleteKeepsItsBytesWhenItsFilesAreReused(edit: Edit, mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (owner, keeper, x, xFiles) = try Self.bothHoldX(remote, seed: 0x11, mounted: mounted)
        defer { owner.finish(); keeper.finish() }

        var kept = (path: "x.bin", bytes: x, mode: UInt32(0o644))
        switch edit {
        case .content:
            let middle = Self.bytes(0x77, chunks: 1)
            try keeper.write("x.bin", bytes: middle, at: UInt64(Self.chunk))
            kept.bytes.replaceSubrange(Self.chunk..<2 * Self.chunk, with: middle)
        case .rename:
            try keeper.rename("x.bin", to: "x-renamed.bin")
            kept.path = "x-renamed.bin"
        case .chmod:
            try keeper.vault.setAttributes(try keeper.id("x.bin"), mode: 0o600)
            try keeper.vault.commit()
            kept.mode = 0o600
        }
        let keptFiles = try Self.chunkFiles(keeper, kept.path).filter { xFiles[$0.key] == $0.value }
        #expect(!keptFiles.isEmpty, "the kept x still points at files of the owner")

        try owner.vault.remove(Array("x.bin".utf8), from: Vault.rootID)
        try owner.vault.commit()
        try owner.sync(remote)
        try Self.releaseReadRootPins(owner, remote)
        let y = try Self.writeOverFreeFiles(owner, seed: 0x55, reaching: Set(keptFiles.values))
        let yFiles = Set(try Self.chunkFiles(owner, "y.bin").values)
        #expect(!Set(keptFiles.values).isDisjoint(with: yFiles), "y reuses files x's kept chunks point at: \(keptFiles) \(yFiles.sorted())")
        try owner.sync(remote)

        let names: Set<String> = ["docs/", "docs/plan.txt", "notes.txt", kept.path, "y.bin"]
        let merge = try keeper.sync(remote, mounted: mounted)
        #expect(merge.actions.contains { if case .keptEditOverDelete = $0 { true } else { false } }, "\(merge.actions)")
        try Self.expectIntact(keeper, names, x: kept, y: y, "after the keeper's merge:")
        try owner.sync(remote)
        try Self.expectIntact(owner, names, x: kept, y: y, "after the owner's next sync:")
        try keeper.sync(remote, mounted: mounted)
        try Self.expectIntact(keeper, names, x: kept, y: y, "after the keeper's next sync:")

        let third = try SyncDevice("third")
        defer { third.finish() }
        try third.sync(remote)
        try Self.expectIntact(third, names, x: kept, y: y, "a device new to the vault:")
    }

    /// The owner's first sync after an unshare puts back what the remote deleted since its base
    /// (FORMAT.md §14.8, "What the withdrawn wrote before this sync"), a delete by the owner's
    /// other device too. That device wrote x.bin, deleted it in the window and wrote y.bin into
    /// x's files: the owner's x comes back whole, and y stays y's, everywhere.
    @Test(arguments: [false, true])
    func aDeletionPutBackAfterAnUnshareKeepsItsBytesWhenItsFilesAreReused(mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (a, b, sharedB, codeB) = try WithdrawnWritesSyncTests.sharedWithBob(remote, files: ["keep.txt": "alice's"])
        defer { a.finish(); b.finish() }
        let laptop = try SyncDevice("alice-laptop", seed: 0xA1)
        defer { laptop.finish() }
        try laptop.sync(remote)
        let x = Self.bytes(0x21, chunks: 3)
        try laptop.write("x.bin", "")
        try laptop.write("x.bin", bytes: x)
        // A small file is a member of the laptop's pack, whose place the laptop reuses too.
        let small = (s: String(repeating: "s", count: 900), t: String(repeating: "t", count: 900))
        func expectSmallFiles(_ device: SyncDevice) throws {
            #expect(try device.read("s.txt") == small.s && device.read("t.txt") == small.t, "\(device.name)")
        }
        try laptop.write("s.txt", small.s)
        try laptop.sync(remote)
        try a.sync(remote)
        #expect(try Self.contents(a, "x.bin") == x)
        let xFiles = Set(try Self.chunkFiles(laptop, "x.bin").values), sPlace = try Self.memberPlace(laptop, "s.txt")

        try a.vault.unshare(with: codeB)
        try a.reopen()
        try laptop.vault.remove(Array("x.bin".utf8), from: Vault.rootID)
        try laptop.vault.remove(Array("s.txt".utf8), from: Vault.rootID)
        try laptop.vault.commit()
        try laptop.sync(remote)
        // A folder (no file, no pack member: s's place stays the end) is the change whose sync
        // frees the files the root read still pinned (`releaseReadRootPins`).
        try laptop.makeFolder("later")
        try laptop.sync(remote)
        let y = try Self.writeOverFreeFiles(laptop, seed: 0x65, reaching: xFiles)
        try laptop.write("t.txt", small.t)
        #expect(try Self.memberPlace(laptop, "t.txt") == sPlace, "t takes s's place in the laptop's pack")
        let yFiles = Set(try Self.chunkFiles(laptop, "y.bin").values)
        #expect(!xFiles.isDisjoint(with: yFiles), "y reuses x's files: \(xFiles.sorted()) \(yFiles.sorted())")
        try laptop.sync(remote)

        try a.sync(remote, mounted: mounted)
        let names: Set<String> = ["keep.txt", "later/", "s.txt", "t.txt", "x.bin", "y.bin"]
        let kept = (path: "x.bin", bytes: x, mode: UInt32(0o644))
        try Self.expectIntact(a, names, x: kept, y: y, "after the owner's sync:")
        try expectSmallFiles(a)
        try laptop.sync(remote)
        try Self.expectIntact(laptop, names, x: kept, y: y, "after the laptop follows:")
        try expectSmallFiles(laptop)
        try a.sync(remote)
        try Self.expectIntact(a, names, x: kept, y: y, "after the owner's next sync:")
        try expectSmallFiles(a)
        let third = try SyncDevice("alice-desktop", seed: 0xA1)
        defer { third.finish() }
        try third.sync(remote)
        try Self.expectIntact(third, names, x: kept, y: y, "a device new to the vault:")
        try expectSmallFiles(third)
        try sharedB.vault.lock()
    }
}
