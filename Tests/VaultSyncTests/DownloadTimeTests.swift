import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultCrypto
import VaultFormat
@testable import VaultStore

/// docs/FORMAT.md §11.2: a sync's download writes storage files through rclone, past the
/// storage folder's own writes. The lock after it still gives every file a download rewrote a
/// later whole second than a copy saw (`rsync -a` compares whole seconds). The desktop's times
/// are put a minute ahead of the clock first (as a clock set back leaves them), so that every
/// time the clock gives falls in a second the copy saw or an earlier one, however fast this is;
/// and its locks re-create only the session's files, so a download the lock did not count as
/// the session's would keep the time rclone gave it.
@Suite struct DownloadTimeTests {
    @Test(arguments: [false, true])
    func aFileADownloadRewroteMovesToALaterSecond(mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let laptop = try SyncDevice("laptop")
        defer { laptop.finish() }
        try laptop.write("a.txt", "one")
        try laptop.sync(remote)
        let desktop = try SyncDevice("desktop", recreation: RecreationBudget(share: 0, secondsPerGiB: 3600))
        defer { desktop.finish() }
        try desktop.sync(remote)
        // A chunk and a page in the laptop's free files, which the desktop holds as random files.
        let bytes = try SystemRandom().bytes(Vault.Limits.payloadSize)
        try laptop.write("b.bin", "")
        try laptop.write("b.bin", bytes: bytes)
        try laptop.sync(remote)

        let files = try Storage.open(at: desktop.folder).listFiles()
        let ahead = (Int64(Date().timeIntervalSince1970) + 60) * 1_000_000_000 + 500_000_000
        #expect(try StorageRecreator(path: desktop.folder).recreate(files, time: ahead).count == files.count)
        let copy = try CopiedFile.snapshot(desktop.folder), remoteFiles = try CopiedFile.snapshot(remote.path)
        let down = try desktop.sync(remote, mounted: mounted)
        #expect(down.filesDown >= 2, "\(down.line)")
        #expect(try desktop.vault.read(try desktop.id("b.bin"), offset: 0, count: bytes.count) == bytes)
        let now = try CopiedFile.snapshot(desktop.folder)
        let rewritten = copy.keys.filter { now[$0]?.bytes != copy[$0]?.bytes && now[$0]?.bytes == remoteFiles[$0]?.bytes }
        #expect(!rewritten.isEmpty, "no download went to a name the desktop held: the test would see nothing")
        #expect(CopiedFile.expectChangesSeen(since: copy, now: now, "after the sync's lock") >= rewritten.count)
    }
}
