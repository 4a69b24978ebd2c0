import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultFormat
@testable import VaultSync

/// A mount's round fetches, before it merges, only the files whose content its merge takes
/// (SYNC-DESIGN §3.6 step 2). The desktop wrote big.bin and the laptop has it; the laptop then
/// deletes or rewrites it while the desktop, leaving big.bin alone, edits another file. The
/// laptop's next round merges (the remote changed), and its merge keeps the laptop's big.bin
/// or its deletion, so the desktop's three chunks of it stay on the remote. The provider damages
/// them there: a round that fetched them anyway stopped at "does not open under its key", and
/// for a big file it downloaded all of it for nothing. Real vaults on disk, a real rclone.
@Suite(.serialized) struct LocallyChangedFetchTests {
    typealias Kept = KeptOverDeleteSyncTests
    typealias Shared = SharedSyncTests
    static let desktopsBig = Kept.bytes(0xD1, chunks: 3), laptopsBig = Kept.bytes(0x1A, chunks: 3)

    @Test(arguments: ["deleted", "rewritten"])
    func aRoundFetchesNoneOfAFileThatOnlyThisDeviceChanged(change: String) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let served = try #require(remote.servedFolder)
        let laptop = try SyncDevice("laptop"), desktop = try SyncDevice("desktop")
        defer { laptop.finish(); desktop.finish() }
        try laptop.write("note.txt", "one")
        try laptop.sync(remote)
        try desktop.sync(remote)
        try desktop.write("big.bin", "")
        try desktop.write("big.bin", bytes: Self.desktopsBig)
        try desktop.sync(remote)
        try laptop.sync(remote, mounted: true)
        try #require(try Kept.contents(laptop, "big.bin") == Self.desktopsBig)

        if change == "deleted" {
            try laptop.vault.remove(Array("big.bin".utf8), from: Vault.rootID)
            try laptop.vault.commit()
        } else {
            try laptop.write("big.bin", bytes: Self.laptopsBig)
        }
        try desktop.write("note.txt", "two")
        try desktop.sync(remote)
        // The provider damages the desktop's chunks of big.bin, which only the remote's root
        // still references once the laptop merges.
        let chunks = try WithdrawnFilesFetchTests.contentNames(desktop, "big.bin")
        #expect(chunks.count == 3)
        var damaged: [String: Data] = [:]
        for name in chunks {
            var bytes = try #require(FileManager.default.contents(atPath: served + "/" + name))
            bytes[bytes.count / 2] ^= 0x5A
            try bytes.write(to: URL(fileURLWithPath: served + "/" + name))
            damaged[name] = bytes
        }

        try laptop.sync(remote, mounted: true)
        let expected = change == "deleted" ? ["note.txt": "two"] : ["note.txt": "two", "big.bin": String(decoding: Self.laptopsBig, as: UTF8.self)]
        #expect(try laptop.tree() == expected)
        let held = try Shared.files(laptop.folder)
        #expect(damaged.filter { held[$0.key] == $0.value }.isEmpty, "the damaged chunks came into the laptop's storage")
        let report = try laptop.vault.check()
        #expect(report.storageProblems.isEmpty && report.damagedItems.isEmpty, "\(report.storageProblems)")
        #expect(held.count % Format.groupSize == 0)
        // The desktop takes the laptop's change, and neither has anything left to send.
        try desktop.sync(remote)
        #expect(try desktop.tree() == expected)
        let again = try laptop.sync(remote, mounted: true)
        #expect(again.filesUp == 0 && again.filesDown == 0, "\(again)")
    }
}
