import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultFormat
@testable import VaultSync

/// docs/SYNC-DESIGN.md §3.2, "Kept files", for items written while the vault was format 1: an
/// upgrade keeps their chunks and pack members where format 1 sealed them, under the item's key
/// with no key of their own (FORMAT.md §13.9: scheme-1 entries, layout 3). Another device that
/// keeps such an item (an edit over the owner's delete, the conflict copy of a file both changed)
/// must end with its bytes once the owner reuses its former files, on every device and a new one.
@Suite(.serialized) struct KeptUpgradedSyncTests {
    typealias Kept = KeptOverDeleteSyncTests
    typealias Edit = KeptOverDeleteSyncTests.Edit

    static let small = Array(String(repeating: "s", count: 900).utf8)

    /// The pack member of the small file at `path`, as `device` records it.
    static func member(_ device: SyncDevice, _ path: String) throws -> ItemRecord.Member {
        let id = try device.id(path)
        return try device.vault.state.withLock { try #require($0.tree.allItems[id]?.packedMember) }
    }

    /// How many of the chunks of `path` format 1 sealed (no key of their own), and whether its
    /// pack member is format 1's.
    static func formatOneSeals(_ device: SyncDevice, _ path: String) throws -> (chunks: Int, member: Bool) {
        let id = try device.id(path)
        return try device.vault.state.withLock { state in
            let item = try #require(state.tree.allItems[id])
            return (item.chunks.values.filter { $0.key == nil }.count, item.packedMember.map { $0.key.isEmpty } ?? false)
        }
    }

    /// The bytes the remote holds at `count` bytes from `offset` of the owner's file `raw`.
    static func remoteBytes(_ remote: TestRemote, _ owner: SyncDevice, _ raw: UInt64, offset: Int = 0, count: Int = Format.fileSize)
        throws -> [UInt8] {
        let name = try owner.vault.state.withLock { try $0.name(raw) }
        let folder = try #require(remote.servedFolder)
        let data = try #require(FileManager.default.contents(atPath: folder + "/" + name), "\(name) on the remote")
        return Array(data[offset..<offset + count])
    }

    /// The owner's vault of format 1 holds x.bin (3 chunks of `seed`) and s.txt (a pack
    /// member); its first commit upgrades it, its sync puts it up and the keeper joins. Both read
    /// x and s, whose chunks and member stay format 1's. Returns x's bytes and the owner's
    /// files of its chunks, and s's member.
    static func bothHoldUpgraded(_ remote: TestRemote, seed: UInt8)
        throws -> (owner: SyncDevice, keeper: SyncDevice, x: [UInt8], xFiles: [Int: UInt64], s: ItemRecord.Member) {
        let x = Kept.bytes(seed, chunks: 3)
        let owner = try SyncDevice.formatOne("laptop", contents: ["x.bin": x, "s.txt": small])
        // The session that upgrades writes a chunked file: s stays alone in its pack.
        try owner.write("upgraded.bin", "")
        try owner.write("upgraded.bin", bytes: Kept.bytes(0x5A, chunks: 1))
        try #require(owner.vault.formatVersion == 2)
        try owner.sync(remote)
        let keeper = try SyncDevice("desktop")
        try keeper.sync(remote)
        for device in [owner, keeper] {
            #expect(try Kept.contents(device, "x.bin") == x && Kept.contents(device, "s.txt") == small, "\(device.name)")
            let seals = (x: try formatOneSeals(device, "x.bin"), s: try formatOneSeals(device, "s.txt"))
            #expect(seals.x.chunks == 3 && seals.s.member, "\(device.name): format 1's seals are kept")
        }
        return (owner, keeper, x, try Kept.chunkFiles(owner, "x.bin"), try member(owner, "s.txt"))
    }

    /// The owner makes `change` (x's and s's files no longer its) and syncs, then writes y.bin
    /// into its free files up to x's kept files and s's pack, and t.txt, and syncs again.
    /// Returns y's and t's bytes. The test's own precondition: the remote's copies of the kept
    /// chunks' files hold other bytes now (one at least: the owner keeps its lowest free files
    /// for pages, written at a later commit), and of s's pack too, or the owner holds it free.
    static func reuse(_ remote: TestRemote, _ owner: SyncDevice, _ keptFiles: [Int: UInt64], _ s: ItemRecord.Member, seed: UInt8,
                      change: () throws -> Void) throws -> (y: [UInt8], t: [UInt8]) {
        func sBytes() throws -> [UInt8] { try remoteBytes(remote, owner, s.fileNumber, offset: Int(s.offset), count: Int(s.sealedLength)) }
        let before = try keptFiles.values.map { try remoteBytes(remote, owner, $0) }, sBefore = try sBytes()
        try change()
        try owner.sync(remote)
        try Kept.releaseReadRootPins(owner, remote, rewriting: "upgraded.bin")
        let y = try Kept.writeOverFreeFiles(owner, seed: seed, reaching: Set(keptFiles.values).union([s.fileNumber]))
        let t = Array(String(repeating: "t", count: 900).utf8)
        try owner.write("t.txt", String(decoding: t, as: UTF8.self))
        try owner.sync(remote)
        let after = try keptFiles.values.map { try remoteBytes(remote, owner, $0) }
        #expect(zip(before, after).contains { $0 != $1 }, "y or a page reuses a file the kept x's chunks point at: \(keptFiles)")
        let free = owner.vault.state.withLock { $0.writer.allocator.freeNumbers.contains(s.fileNumber) }
        #expect(try sBytes() != sBefore || free, "s's pack is reused, or free to be")
        return (y, t)
    }

    static func expectSmall(_ device: SyncDevice, _ path: String, mode: UInt32, t: [UInt8], _ comment: String) throws {
        #expect(try Kept.contents(device, path) == small, "\(comment) \(device.name): s holds its bytes")
        #expect(try device.vault.attributes(try device.id(path)).mode & 0o7777 == mode, "\(comment) \(device.name)")
        #expect(try Kept.contents(device, "t.txt") == t, "\(comment) \(device.name): t holds its own bytes")
    }

    /// The owner deletes x.bin and s.txt after both devices had them; once that delete is up it
    /// writes y.bin into x's files and s's pack, and t.txt. The keeper changed both meanwhile
    /// (`edit`: x's middle chunk and s's mode, a rename of both, or a chmod of both) and syncs
    /// only then. `mounted`: the keeper's syncs are a mount's rounds.
    @Test(arguments: [(Edit.content, false), (.content, true), (.rename, false), (.chmod, true)])
    func anUpgradedItemKeptOverADeleteKeepsItsBytesWhenItsFilesAreReused(edit: Edit, mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (owner, keeper, x, xFiles, s) = try Self.bothHoldUpgraded(remote, seed: 0x13)
        defer { owner.finish(); keeper.finish() }

        var kept = (path: "x.bin", bytes: x, mode: UInt32(0o644)), keptSmall = (path: "s.txt", mode: UInt32(0o644))
        switch edit {
        case .content:
            let middle = Kept.bytes(0x79, chunks: 1)
            try keeper.write("x.bin", bytes: middle, at: UInt64(Kept.chunk))
            kept.bytes.replaceSubrange(Kept.chunk..<2 * Kept.chunk, with: middle)
            try keeper.vault.setAttributes(try keeper.id("s.txt"), mode: 0o640)
            try keeper.vault.commit()
            keptSmall.mode = 0o640
        case .rename:
            try keeper.rename("x.bin", to: "x-renamed.bin")
            try keeper.rename("s.txt", to: "s-renamed.txt")
            kept.path = "x-renamed.bin"
            keptSmall.path = "s-renamed.txt"
        case .chmod:
            for path in ["x.bin", "s.txt"] { try keeper.vault.setAttributes(try keeper.id(path), mode: 0o600) }
            try keeper.vault.commit()
            kept.mode = 0o600
            keptSmall.mode = 0o600
        }
        let keptFiles = try Kept.chunkFiles(keeper, kept.path).filter { xFiles[$0.key] == $0.value }
        #expect(keptFiles.count == (edit == .content ? 2 : 3), "the kept x still points at the owner's files: \(keptFiles)")
        #expect(try Self.member(keeper, keptSmall.path) == s, "the kept s is still the owner's format-1 member")
        let (y, t) = try Self.reuse(remote, owner, keptFiles, s, seed: 0x57) {
            try owner.vault.remove(Array("x.bin".utf8), from: Vault.rootID)
            try owner.vault.remove(Array("s.txt".utf8), from: Vault.rootID)
            try owner.vault.commit()
        }

        let names: Set<String> = ["upgraded.bin", kept.path, keptSmall.path, "t.txt", "y.bin"]
        func expectIntact(_ device: SyncDevice, _ comment: String) throws {
            try Kept.expectIntact(device, names, x: kept, y: y, comment)
            try Self.expectSmall(device, keptSmall.path, mode: keptSmall.mode, t: t, comment)
        }
        let merge = try keeper.sync(remote, mounted: mounted)
        #expect(merge.actions.contains { if case .keptEditOverDelete = $0 { true } else { false } }, "\(merge.actions)")
        try Kept.expectIntactEverywhere(remote, owner, keeper, mounted: mounted, expectIntact)
    }

    /// The keeper edits x's middle chunk and s's mode; the owner rewrites both wholly, and writes
    /// y.bin into x's former files and s's pack, and t.txt, before the keeper syncs: the
    /// keeper's versions become conflict copies (under new item IDs) of format 1's seals.
    @Test(arguments: [false, true])
    func aConflictCopyOfAnUpgradedItemKeepsItsBytesWhenItsFilesAreReused(mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (owner, keeper, x, xFiles, s) = try Self.bothHoldUpgraded(remote, seed: 0x33)
        defer { owner.finish(); keeper.finish() }

        var edited = x
        let middle = Kept.bytes(0x99, chunks: 1)
        try keeper.write("x.bin", bytes: middle, at: UInt64(Kept.chunk))
        edited.replaceSubrange(Kept.chunk..<2 * Kept.chunk, with: middle)
        try keeper.vault.setAttributes(try keeper.id("s.txt"), mode: 0o640)
        try keeper.vault.commit()
        let keptFiles = try Kept.chunkFiles(keeper, "x.bin").filter { xFiles[$0.key] == $0.value }
        #expect(Set(keptFiles.keys) == [0, 2], "the edited x's other chunks still point at the owner's files: \(keptFiles)")
        let rewritten = Kept.bytes(0x45, chunks: 3), smallRewrite = String(repeating: "r", count: 900)
        let (y, t) = try Self.reuse(remote, owner, keptFiles, s, seed: 0x67) {
            try owner.write("x.bin", bytes: rewritten)
            try owner.write("s.txt", smallRewrite)
        }

        let merge = try keeper.sync(remote, mounted: mounted)
        #expect(merge.actions.filter { if case .keptBothVersions = $0 { true } else { false } }.count == 2, "\(merge.actions)")
        let paths = try keeper.tree().keys.sorted()
        let copy = try #require(paths.first { $0.hasPrefix("x.conflict-") }, "\(paths)")
        let smallCopy = try #require(paths.first { $0.hasPrefix("s.conflict-") }, "\(paths)")
        let names: Set<String> = ["upgraded.bin", "x.bin", copy, "s.txt", smallCopy, "t.txt", "y.bin"]
        func expectIntact(_ device: SyncDevice, _ comment: String) throws {
            try Kept.expectIntact(device, names, x: (path: copy, bytes: edited, mode: 0o644), y: y, comment)
            try Self.expectSmall(device, smallCopy, mode: 0o640, t: t, comment)
            #expect(try Kept.contents(device, "x.bin") == rewritten && device.read("s.txt") == smallRewrite,
                    "\(comment) \(device.name): x and s hold the owner's rewrites")
        }
        try Kept.expectIntactEverywhere(remote, owner, keeper, mounted: mounted, expectIntact)
    }

    /// The identities of format 1's seals are computed alike on every side: devices of an
    /// upgraded vault that have nothing new move nothing, and a one-chunk edit of an upgraded
    /// file moves one chunk and pages, not the file's other chunks.
    @Test func idleDevicesOfAnUpgradedVaultMoveNothing() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (owner, keeper, x, _, _) = try Self.bothHoldUpgraded(remote, seed: 0x15)
        defer { owner.finish(); keeper.finish() }
        let learnt = try owner.sync(remote)
        #expect(learnt.filesUp == 0, "\(learnt.line)")
        for device in [keeper, owner, keeper, owner] {
            let idle = try device.sync(remote)
            #expect(idle == SyncSummary(), "\(device.name): \(idle.line)")
        }
        var edited = x
        let middle = Kept.bytes(0x7B, chunks: 1)
        try keeper.write("x.bin", bytes: middle, at: UInt64(Kept.chunk))
        edited.replaceSubrange(Kept.chunk..<2 * Kept.chunk, with: middle)
        let pushed = try keeper.sync(remote)
        let pulled = try owner.sync(remote)
        // The keeper sends its chunk and pages (and takes the owner's root); the owner takes no more.
        #expect(pulled.filesUp == 0 && pulled.filesDown < pushed.filesUp, "\(pushed.line) then \(pulled.line)")
        #expect(try Kept.contents(owner, "x.bin") == edited && Self.formatOneSeals(owner, "x.bin").chunks == 2)
        #expect(try keeper.sync(remote) == SyncSummary() && owner.sync(remote) == SyncSummary())
    }

    /// A format-1 chunk the remote holds with other bytes (a provider changed it) stops the
    /// sync that would download it, before anything is committed: it opens under the item's
    /// key and recorded nonce, or not at all. The owner keeps every byte.
    @Test func aChangedFormatOneChunkStopsTheDownload() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let x = Kept.bytes(0x17, chunks: 3)
        let owner = try SyncDevice.formatOne("laptop", contents: ["x.bin": x])
        defer { owner.finish() }
        try owner.write("upgraded.txt", "written by the session that upgrades")
        try owner.sync(remote)
        let file = try #require(try Kept.chunkFiles(owner, "x.bin")[1])
        let name = try owner.vault.state.withLock { try $0.name(file) }
        let path = try #require(remote.servedFolder) + "/" + name
        var bytes = try #require(FileManager.default.contents(atPath: path))
        bytes[Format.fileSize / 2] ^= 0x01
        try bytes.write(to: URL(fileURLWithPath: path))

        let newcomer = try SyncDevice("desktop")
        defer { newcomer.finish() }
        #expect(throws: SyncRefusal.damagedRemote("file \(FileRef(raw: file)) does not open under its key")) { try newcomer.sync(remote) }
        #expect(try Kept.contents(owner, "x.bin") == x)
        #expect(try owner.vault.check().isClean)
    }
}
