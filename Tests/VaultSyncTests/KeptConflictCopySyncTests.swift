import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultFormat
@testable import VaultSync

/// Rule 3 of the merge (docs/SYNC-DESIGN.md §2) keeps this device's version of a file both sides
/// changed as a conflict copy. When the other side rewrote the file wholly, its published root no
/// longer references the old chunks' files and it reuses them (§3.2, "Kept files"), while the
/// copy's unchanged chunks still point at them: each device must end with the copy's bytes, the
/// other side's file, the file written into the reused files, and a clean check.
@Suite(.serialized) struct KeptConflictCopySyncTests {
    typealias Kept = KeptOverDeleteSyncTests

    /// The owner (device 0) wrote x.bin; both devices have it. The keeper edits its middle chunk
    /// and syncs only after the owner rewrote x wholly and wrote y.bin into x's former files.
    /// `mounted`: the keeper's syncs are a mount's rounds.
    @Test(arguments: [false, true])
    func aConflictCopyKeepsItsBytesWhenItsFilesAreReused(mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (owner, keeper, x, xFiles) = try Kept.bothHoldX(remote, seed: 0x31, mounted: mounted)
        defer { owner.finish(); keeper.finish() }

        var edited = x
        let middle = Kept.bytes(0x97, chunks: 1)
        try keeper.write("x.bin", bytes: middle, at: UInt64(Kept.chunk))
        edited.replaceSubrange(Kept.chunk..<2 * Kept.chunk, with: middle)
        let keptFiles = try Kept.chunkFiles(keeper, "x.bin").filter { xFiles[$0.key] == $0.value }
        #expect(Set(keptFiles.keys) == [0, 2], "the edited x's other chunks still point at the owner's files: \(keptFiles)")

        let rewritten = Kept.bytes(0x43, chunks: 3)
        try owner.write("x.bin", bytes: rewritten)
        let rewrittenFiles = Set(try Kept.chunkFiles(owner, "x.bin").values)
        #expect(rewrittenFiles.isDisjoint(with: xFiles.values), "the rewrite seals every chunk into a new file")
        try owner.sync(remote)
        try Kept.releaseReadRootPins(owner, remote)
        let y = try Kept.writeOverFreeFiles(owner, seed: 0x65, reaching: Set(keptFiles.values))
        let yFiles = Set(try Kept.chunkFiles(owner, "y.bin").values)
        #expect(Set(keptFiles.values).isSubset(of: yFiles), "y reuses the files the copy's chunks point at: \(keptFiles) \(yFiles.sorted())")
        try owner.sync(remote)

        let before = Int64(Date().timeIntervalSince1970)
        let merge = try keeper.sync(remote, mounted: mounted)
        let after = Int64(Date().timeIntervalSince1970)
        #expect(merge.actions.contains { if case .keptBothVersions = $0 { true } else { false } }, "\(merge.actions)")
        // Named for the device whose version it is, at the merge's time (ConflictName).
        let paths = try keeper.tree().keys.sorted(), copies = paths.filter { $0.hasPrefix("x.conflict-") }
        let names = (before...after).map { ConflictName.make("x.bin", device: keeper.name, time: $0) }
        let copy = try #require(copies.first, "\(paths)")
        #expect(copies.count == 1 && names.contains(copy), "\(copies) among \(names)")

        let all: Set<String> = ["docs/", "docs/plan.txt", "notes.txt", "x.bin", copy, "y.bin"]
        let kept = (path: copy, bytes: edited, mode: UInt32(0o644))
        func expectIntact(_ device: SyncDevice, _ comment: String) throws {
            try Kept.expectIntact(device, all, x: kept, y: y, comment)
            #expect(try Kept.contents(device, "x.bin") == rewritten, "\(comment) \(device.name): x holds the owner's rewrite")
        }
        try Kept.expectIntactEverywhere(remote, owner, keeper, mounted: mounted, expectIntact)
    }
}
