import DotSafeTestSupport
import Foundation
import Synchronization
import Testing
import VaultCore
@testable import VaultSync

/// What a `dotsafe sync` that merges brings down (SYNC-DESIGN §3.4): each file once. The pages
/// of the remote root come down in step 2 to read its items; the merged state builds on them,
/// and they came down a second time with the files the merge needs (seen counting the
/// downloads: the laptop's one page twice). Real vaults on disk, a real rclone, a local remote.
@Suite(.serialized) struct PageDownloadTests {
    /// The laptop writes one small file: A's pull brings its page and its pack, once each.
    @Test func aPullBringsEachFileOnce() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let a = try SyncDevice("alice", seed: 0xA1), laptop = try SyncDevice("alice-laptop", seed: 0xA1)
        defer { a.finish(); laptop.finish() }
        try a.write("one.txt", "alice's")
        try a.sync(remote)
        try laptop.sync(remote)
        try laptop.write("two.txt", "the laptop's")
        try laptop.sync(remote)

        let served = try #require(remote.servedFolder)
        let names = Mutex<[String]>([])
        var sync = VaultSynchronizer(vault: a.vault, remote: try SyncDevice.remoteStorage(remote), storageFolder: a.folder, deviceName: a.name)
        // rclone's batch, as from a folder remote, each file counted.
        sync.downloadFile = { name, path in
            names.withLock { $0.append(name) }
            if let path { try Data(contentsOf: URL(fileURLWithPath: served + "/" + name)).write(to: URL(fileURLWithPath: path)) }
        }
        let summary = try sync.run()
        try a.reopen()
        let down = names.withLock { $0 }
        #expect(down.count == 2 && Set(down).count == 2, "a page and a pack, once each: \(down)")
        #expect(summary.filesDown == 2, "\(summary.line)")
        #expect(try a.tree() == ["one.txt": "alice's", "two.txt": "the laptop's"])
        let report = try a.vault.check()
        #expect(report.storageProblems.isEmpty && report.damagedItems.isEmpty, "\(report.storageProblems)")
    }
}
