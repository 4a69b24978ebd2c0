import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultFormat
import VaultStore
@testable import VaultSync

/// A vault upgraded from format 1 keeps the chunks its files had then, sealed as format 1
/// (docs/FORMAT.md §13.7, scheme 1: no key of their own in the chunk map). A device joining it
/// must bring them down too: a join brings the groups of the index pages whole, so chunks in
/// those groups came along, but a file of format 1 larger than the pages' groups had chunks in
/// groups of their own, which the join filled with random bytes (its other devices' groups made
/// whole) instead: the new device's copy of that file read "chunk N of M does not open", for
/// `dotsafe sync` and `mount --sync` alike. Real vaults on disk, a real rclone, a local remote.
@Suite(.serialized) struct UpgradedJoinFormatOneChunksTests {
    @Test(arguments: [false, true])
    func aJoinBringsTheChunksOfAFormatOneFileInEveryGroup(mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        // 24 chunks of 256 KiB: more than one group of 16 files.
        let big = String((0..<24 * 262_144).map { _ in "abcdefghijklmnopqrstuvwxyz".randomElement()! })
        let first = try SyncDevice.formatOne("laptop", files: ["big.txt": big, "notes.txt": "notes v1"])
        defer { first.finish() }
        try first.write("upgraded.txt", "upgraded")
        try #require(first.vault.formatVersion == 2 && first.vault.namesArePatternDerived == (true, true))
        try first.sync(remote)

        let second = try SyncDevice("desktop")
        defer { second.finish() }
        try second.sync(remote, mounted: mounted)
        let report = try second.vault.check()
        #expect(report.isClean, "\(report.damagedItems) \(report.storageProblems)")
        #expect(try second.read("big.txt") == big)
        #expect(try second.tree() == first.tree())
        #expect(try StorageCount.files(second.folder) % Format.groupSize == 0)
    }
}
