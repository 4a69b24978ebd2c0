import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
@testable import VaultSync

/// A remote put back to an older state (a provider's restore, a backup copied over it): a
/// merge with it would take everything written since as deleted there, so the sync refuses with
/// one line and changes nothing on either side: `dotsafe sync` and a mount's round
/// (`mounted`: `MountedSynchronizer`, `mount --sync`) alike.
@Suite(.serialized) struct RemoteRollbackTests {
    static func contents(_ folder: String) throws -> [String: Data] {
        var result: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
            result[name] = FileManager.default.contents(atPath: folder + "/" + name)
        }
        return result
    }

    /// The remote as `old` holds it again.
    static func putBack(_ old: String, as served: String) throws {
        try FileManager.default.removeItem(atPath: served)
        try FileManager.default.copyItem(atPath: old, toPath: served)
    }

    /// `device`'s next sync (or round) is refused as a rollback, whose reason starts with
    /// `reason`; neither the remote nor the device's storage changes, and its tree stays.
    static func expectRefused(_ device: SyncDevice, _ remote: TestRemote, mounted: Bool, reason: String,
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
        let served = try #require(remote.servedFolder)
        let remoteBefore = try Self.contents(served), localBefore = try Self.contents(device.folder)
        let tree = try device.tree()
        let error = #expect(throws: SyncRefusal.self, sourceLocation: sourceLocation) { try device.sync(remote, mounted: mounted) }
        guard case .rolledBack = error else {
            Issue.record("not refused as rolled back: \(String(describing: error))", sourceLocation: sourceLocation)
            return
        }
        #expect(error!.description.hasPrefix("the vault on the remote is damaged: " + reason), "\(error!)", sourceLocation: sourceLocation)
        #expect(error!.description.hasSuffix(" (restored or rolled back?); nothing was changed"), "\(error!)", sourceLocation: sourceLocation)
        #expect(try Self.contents(served) == remoteBefore, "nothing changed on the remote", sourceLocation: sourceLocation)
        #expect(try Self.contents(device.folder) == localBefore, "nothing changed in the storage", sourceLocation: sourceLocation)
        try device.reopen()
        #expect(try device.tree() == tree, sourceLocation: sourceLocation)
    }

    @Test(arguments: [false, true])
    func aRemoteRolledBackIsRefusedAndNothingChanges(mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }
        let served = try #require(remote.servedFolder)
        let old = remote.folder + "/old"
        try FileManager.default.copyItem(atPath: served, toPath: old)

        try first.write("newer.txt", "written after the copy")
        try first.sync(remote)
        try second.sync(remote, mounted: mounted)
        #expect(try second.read("newer.txt") == "written after the copy")

        // The old copy replaces the remote.
        try Self.putBack(old, as: served)
        try Self.expectRefused(second, remote, mounted: mounted, reason: "it holds generation ")
        #expect(try second.read("newer.txt") == "written after the copy")
        // Refused again: the refusal changed nothing that would let a later sync merge.
        try Self.expectRefused(second, remote, mounted: mounted, reason: "it holds generation ")
    }
}
