import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore
import VaultSync

/// R-DEL-2 after a sync: the coercer of ForensicRecoveryTests, holding the pattern key and copies
/// of both the local storage and the remote, finds nothing of what was deleted, truncated or
/// overwritten and then synced. Old keys kept in the sync base, in the remote root, or in sealed
/// files the remote keeps (it never gets the refill of freed files) would show here.
@Suite struct SyncForensicRecoveryTests {
    typealias Forensic = ForensicRecoveryTests
    static let payload = Format.payloadSize

    @Test func theCoercerFindsNothingDeletedAndSyncedOnEitherSide() throws {
        let folder = try TestFolder.make("sync-forensic")
        defer { TestFolder.remove(folder) }
        let storagePath = folder + "/storage", remotePath = folder + "/remote"
        try Storage.initialize(at: storagePath, random: SystemRandom())
        func open() throws -> Vault { try Vault.open(storage: try Storage.open(at: storagePath), secrets: try TestVaults.secrets(1)) }
        let remote = RemoteStorage(try RemoteLocation(remotePath), rclone: try Rclone(environment: TestRemote.environment))
        // As `dotsafe sync` does: the vault is locked after each sync and opened again.
        func sync(_ vault: inout Vault) throws {
            _ = try VaultSynchronizer(vault: vault, remote: remote, storageFolder: storagePath, deviceName: "laptop").run()
            try vault.lock()
            vault = try open()
        }

        var vault = try open()
        let noise = TestVaults.content(2 * Self.payload, seed: 11)
        try vault.makeFile("deleted-small", Forensic.marked(1, count: 300))
        try vault.makeFile("deleted-big", Forensic.marked(2, count: 2 * Self.payload + 5))
        let overwritten = try vault.makeFile("overwritten", Forensic.marked(3, count: Self.payload + 10))
        let truncated = try vault.makeFile("truncated", Array(noise[0..<Self.payload]) + Forensic.marked(4, count: Self.payload))
        let rewritten = try vault.makeFile("rewritten", Forensic.marked(5, count: 2_000))
        try vault.makeFile("kept", Forensic.marked(9, count: 500))
        try vault.commit()
        try sync(&vault)

        try vault.remove(Array("deleted-small".utf8), from: Vault.rootID)
        try vault.remove(Array("deleted-big".utf8), from: Vault.rootID)
        try vault.write(overwritten, offset: 0, bytes: Array(noise[0..<(Self.payload + 10)]))
        try vault.truncate(truncated, size: 100)
        try vault.truncate(rewritten, size: 0)
        try vault.write(rewritten, offset: 0, bytes: Array(noise[0..<2_000]))
        try vault.commit()
        try sync(&vault)
        try vault.makeFile("later", Array(noise[0..<700]))
        try vault.commit()
        try sync(&vault)
        try vault.lock()
        vault = try open()
        #expect(try vault.readAll("kept") == Forensic.marked(9, count: 500))
        try vault.lock()

        // Both snapshots in one set; a remote file whose bytes differ from the local file of its
        // name (a freed file the remote still has) is kept beside it under another key.
        var files: [String: [UInt8]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: storagePath) {
            files[name] = Array(try Data(contentsOf: URL(fileURLWithPath: storagePath + "/" + name)))
        }
        var remoteOnly = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: remotePath) {
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: remotePath + "/" + name)))
            if files[name] == nil { files[name] = bytes } else if files[name] != bytes { files[name + "-remote"] = bytes; remoteOnly += 1 }
        }
        let recovery = try FormatTwoCoercer(files: files, patternKey: [UInt8](repeating: 1, count: 32)).recover()
        #expect(recovery.plaintexts.contains { $0.contains(Forensic.marked(9, count: 40)) }, "the coercer opens the current index")
        #expect(recovery.syncBases > 0 && recovery.remoteRecords > 0, "the coercer opens the sync base and the remote's unlock record")
        #expect(recovery.keysInSyncBase == 0, "the sync base holds no key")
        Forensic.expectNothingOld(recovery)
        print("sync forensic: \(files.count) files, \(remoteOnly) of the remote differ from the local file of their name")
    }
}
