import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultFormat
@testable import VaultSync

/// A provider that serves a leaf page of the index with one byte changed: the device that
/// fetches it refuses in one line that names the page, says once that nothing was changed, and
/// stays a new vault, its storage as it was (the page it placed goes: a file left at a name a
/// join writes would refuse the next join); once the page is served as written, it joins. (The interior pages' case is
/// `IndexLevelsSyncTests.aTamperedInteriorPageOnTheRemoteIsRefused`.)
@Suite struct DamagedRemotePageTests {
    @Test(arguments: [false, true])
    func aLeafPageChangedOnTheRemoteIsRefusedInOneLine(mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let first = try SyncDevice("laptop")
        defer { first.finish() }
        try first.write("notes.txt", "notes v1")
        try first.sync(remote)
        let leaf = try #require(first.vault.state.withLock { $0.committer.pageTable.pages.compactMap(\.ref).first?.fileNumber })
        // A data file has one name here and on the remote (the device's names key, §13.11).
        let path = try #require(remote.servedFolder) + "/" + first.vault.state.withLock { try $0.name(leaf) }
        let written = try #require(FileManager.default.contents(atPath: path))
        var changed = written
        changed[1000] ^= 0xff
        try changed.write(to: URL(fileURLWithPath: path))

        let second = try SyncDevice("desktop")
        defer { second.finish() }
        let before = try RemoteRollbackTests.contents(second.folder)
        let error = #expect(throws: SyncRefusal.self) { try second.sync(remote, mounted: mounted) }
        #expect(error?.description == "the vault on the remote is damaged: index page \(FileRef(raw: leaf)) does not open; nothing was changed")
        try second.reopen()
        #expect(second.vault.isNew)
        #expect(try RemoteRollbackTests.contents(second.folder) == before)

        try written.write(to: URL(fileURLWithPath: path))
        try second.sync(remote, mounted: mounted)
        #expect(try second.tree() == first.tree())
    }
}
