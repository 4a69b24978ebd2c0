import Testing
@testable import VaultCore
import VaultFormat
import VaultStore

/// A full disk reaches the writer that fills it (the crash's cousin: a disk with no room). The
/// cache used to take a writer's data until it was over its limit, so a `cp` of 280 MB onto a
/// disk with 28 MB free succeeded, and the commit that failed then held back every change.
@Suite struct FullDiskWriteTests {
    static let mebibyte = 1 << 20

    /// 1 MiB writes, as FUSE sends them, onto a disk that fills: ENOSPC within a few MiB (the
    /// free files and the chunks written behind meanwhile), not at the 64 MiB cache's limit. The
    /// refused write changes nothing; removing what it left commits on the full disk, and with
    /// room again a new file is written and committed.
    @Test func aWriterGetsENOSPCSoonAfterTheDiskFills() throws {
        let storage = LockProbingStorage(try TestVaults.storage())
        let vault = try TestVaults.open(storage, cacheBytes: 64 << 20)
        let id = try vault.create(.file, in: Vault.rootID, named: Array("big".utf8), mode: 0o644)
        try vault.commit()
        storage.failCreates(afterCount: 0)
        var written: [UInt8] = []
        var refusal: (any Error)?
        for piece in 0..<64 {
            let bytes = TestVaults.content(Self.mebibyte, seed: UInt64(piece))
            do { try vault.write(id, offset: UInt64(written.count), bytes: bytes) } catch {
                refusal = error
                break
            }
            written += bytes
        }
        #expect(refusal as? VaultError == .store(.noSpace), "\(written.count / Self.mebibyte) MiB taken, then: \(String(describing: refusal))")
        #expect(written.count <= 8 * Self.mebibyte, "ENOSPC after \(written.count / Self.mebibyte) MiB")
        #expect(try vault.attributes(id).size == UInt64(written.count), "the refused write changed the file")
        #expect(try vault.read(id, offset: 0, count: written.count) == written)
        #expect(throws: VaultError.store(.noSpace)) { try vault.write(id, offset: 0, bytes: [1]) }

        // Still full: removing what the writer left commits, as a delete does on a full disk.
        try vault.remove(Array("big".utf8), from: Vault.rootID)
        try vault.commit()

        storage.failCreates(afterCount: nil)
        let again = try vault.create(.file, in: Vault.rootID, named: Array("again".utf8), mode: 0o644)
        let bytes = TestVaults.content(3 * Self.mebibyte, seed: 99)
        try vault.write(again, offset: 0, bytes: bytes)
        try vault.commit()
        try vault.lock()
        let reopened = try TestVaults.open(storage.simulated)
        #expect(try reopened.readAll("again") == bytes)
        #expect(throws: (any Error).self) { try reopened.readAll("big") }
        try checkStorageInvariants(storage.simulated)
    }
}
