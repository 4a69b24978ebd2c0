import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
@testable import VaultSync

/// A remote put back to an older state (a provider's restore, a backup copied over it): a
/// merge with it would take everything written since as deleted there, so the sync refuses with
/// one line and changes nothing on either side.
@Suite(.serialized) struct RemoteRollbackTests {
    static func contents(_ folder: String) throws -> [String: Data] {
        var result: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
            result[name] = FileManager.default.contents(atPath: folder + "/" + name)
        }
        return result
    }

    @Test func aRemoteRolledBackIsRefusedAndNothingChanges() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }
        let served = try #require(remote.servedFolder)
        let old = remote.folder + "/old"
        try FileManager.default.copyItem(atPath: served, toPath: old)

        try first.write("newer.txt", "written after the copy")
        try first.sync(remote)
        try second.sync(remote)
        #expect(try second.read("newer.txt") == "written after the copy")

        // The old copy replaces the remote.
        try FileManager.default.removeItem(atPath: served)
        try FileManager.default.copyItem(atPath: old, toPath: served)
        let remoteBefore = try Self.contents(served), localBefore = try Self.contents(second.folder)
        let tree = try second.tree()
        let error = #expect(throws: SyncRefusal.self) { try second.sync(remote) }
        guard case .damagedRemote = error else { Issue.record("not refused as damaged: \(String(describing: error))"); return }
        #expect(error!.description.hasPrefix("the vault on the remote is damaged: it holds generation "), "\(error!)")
        #expect(error!.description.contains("restored or rolled back"))
        #expect(try Self.contents(served) == remoteBefore, "nothing changed on the remote")
        #expect(try Self.contents(second.folder) == localBefore, "nothing changed in the storage")
        try second.reopen()
        #expect(try second.tree() == tree)
    }
}
