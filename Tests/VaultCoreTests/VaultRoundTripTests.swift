import Testing
import VaultCore
import VaultFormat
import VaultStore

@Suite struct VaultRoundTripTests {
    static let sizes = [0, 1, Format.payloadSize - 1, Format.payloadSize, Format.payloadSize + 1, 10_000_000]

    @Test(arguments: sizes)
    func itemSurvivesCommitAndReopen(size: Int) throws {
        let storage = try TestVaults.storage()
        let vault = try TestVaults.open(storage)
        let data = TestVaults.content(size, seed: UInt64(size))
        try vault.makeFile("f", data)
        #expect(try vault.readAll("f") == data)
        try vault.lock()
        try checkStorageInvariants(storage)

        let again = try TestVaults.open(storage)
        #expect(!again.isNew)
        #expect(try again.readAll("f") == data)
        #expect(try again.attributes(try again.lookup(Vault.rootID, Array("f".utf8))).size == UInt64(size))
    }

    @Test func emptyVaultWritesNothingUntilFirstChange() throws {
        let storage = try TestVaults.storage()
        let before = storage.snapshot
        let vault = try TestVaults.open(storage)
        #expect(vault.isNew)
        _ = try vault.contents(ofFolder: Vault.rootID)
        try vault.lock()
        #expect(storage.snapshot == before)
    }

    @Test func newVaultAddsOneGroupOfSixteen() throws {
        let storage = try TestVaults.storage()
        let before = storage.snapshot.count
        let vault = try TestVaults.open(storage)
        try vault.makeFile("a", [1, 2, 3])
        try vault.commit()
        #expect(storage.snapshot.count == before + 16)
        try checkStorageInvariants(storage)
    }

    @Test func thousandsOfSmallItemsShareFewPacks() throws {
        let storage = try TestVaults.storage()
        let vault = try TestVaults.open(storage)
        let folder = try vault.create(.folder, in: Vault.rootID, named: Array("many".utf8), mode: 0o755)
        for i in 0..<3000 { try vault.makeFile("file-\(i)", TestVaults.content(100 + i % 50, seed: UInt64(i)), in: folder) }
        try vault.lock()
        try checkStorageInvariants(storage)
        let files = storage.snapshot.count
        let again = try TestVaults.open(storage)
        for i in stride(from: 0, to: 3000, by: 7) {
            #expect(try again.readAll("file-\(i)", in: folder) == TestVaults.content(100 + i % 50, seed: UInt64(i)))
        }
        // 3000 × ~140 bytes ≈ 420 KB of members: a handful of packs plus index pages.
        #expect(files < 128 + 32 + 16)
    }
}
