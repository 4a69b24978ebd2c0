import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultFormat
@testable import VaultSync

/// An index with an interior level (docs/FORMAT.md §13.5) on both sides of a sync: the device
/// that joins fetches the interior pages, then the leaves they name; changes go both ways; and
/// when most files go, the level goes on both devices. Both devices' roots take 4 refs, so a
/// few thousand files of long names make the level.
@Suite struct IndexLevelsSyncTests {
    static let fanOut = PageTable.FanOut(root: 4, interior: 4)

    static func name(_ i: Int) -> String { "\(i)-" + String(repeating: "n", count: 200) }

    static func parents(_ device: SyncDevice) -> Int { device.vault.state.withLock { $0.committer.pageTable.parents.count } }

    @Test func anIndexWithAnInteriorLevelSyncsBothWays() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let first = try SyncDevice("laptop", fanOut: Self.fanOut)
        defer { first.finish() }
        for i in 0..<6_000 {
            let id = try first.vault.create(.file, in: Vault.rootID, named: Array(Self.name(i).utf8), mode: 0o644)
            if i % 1_000 == 0 { try first.vault.write(id, offset: 0, bytes: Array("file \(i)".utf8)) }
        }
        try first.vault.commit()
        try first.sync(remote)
        #expect(Self.parents(first) >= 2)

        let second = try SyncDevice("desktop", fanOut: Self.fanOut)
        defer { second.finish() }
        let down = try second.sync(remote)
        #expect(down.filesDown > 0)
        #expect(try second.tree() == first.tree(), "the joining device holds every file")
        #expect(Self.parents(second) >= 2, "and the interior level")

        // Changed on each side: a leaf and its parent go up, the other side fetches them.
        try second.write(Self.name(2_000), "changed on the desktop")
        try second.write("new.txt", "made on the desktop")
        try second.sync(remote)
        try first.write(Self.name(4_000), "changed on the laptop")
        try first.sync(remote)
        try second.sync(remote)
        #expect(try first.read(Self.name(2_000)) == "changed on the desktop")
        #expect(try second.read(Self.name(4_000)) == "changed on the laptop")
        #expect(try second.tree() == first.tree())

        // Nearly all removed on the laptop: the level goes there, and on the desktop after its sync.
        for i in 0..<6_000 where i % 1_000 != 0 { try first.vault.remove(Array(Self.name(i).utf8), from: Vault.rootID) }
        try first.sync(remote)
        try second.sync(remote)
        try second.reopen()
        #expect(try second.tree() == first.tree())
        #expect(try second.tree().count == 7)
        #expect(Self.parents(first) == 0)
        for device in [first, second] {
            let report = try device.vault.check()
            #expect(report.isClean, "\(device.name): \(report.damagedItems) \(report.storageProblems)")
        }
    }

    /// A provider that serves a changed interior page: the joining device refuses with the
    /// page's name before it reads a leaf, and stays a new vault; once the page is served as
    /// written, it joins with every file.
    @Test func aTamperedInteriorPageOnTheRemoteIsRefused() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let first = try SyncDevice("laptop", fanOut: Self.fanOut)
        defer { first.finish() }
        for i in 0..<6_000 { _ = try first.vault.create(.file, in: Vault.rootID, named: Array(Self.name(i).utf8), mode: 0o644) }
        try first.vault.commit()
        try first.sync(remote)
        let parent = try #require(first.vault.state.withLock { $0.committer.pageTable.parentRefs.first?.fileNumber })
        // A data file has one name here and on the remote (the device's names key, §13.11).
        let path = try #require(remote.servedFolder) + "/" + first.vault.state.withLock { try $0.name(parent) }
        let written = try #require(FileManager.default.contents(atPath: path))
        var changed = written
        changed[changed.count / 2] ^= 4
        try changed.write(to: URL(fileURLWithPath: path))

        let second = try SyncDevice("desktop", fanOut: Self.fanOut)
        defer { second.finish() }
        let error = #expect(throws: SyncRefusal.self) { try second.sync(remote) }
        #expect(error?.description == "the vault on the remote is damaged: index page \(FileRef(raw: parent)) does not open; nothing was changed")
        try second.reopen()
        #expect(second.vault.isNew)
        #expect(try FileManager.default.contents(atPath: path) == changed, "the remote as it was")

        try written.write(to: URL(fileURLWithPath: path))
        try second.sync(remote)
        #expect(try second.tree() == first.tree())
        #expect(try second.tree().count == 6_000)
    }
}
