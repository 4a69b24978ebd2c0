import Testing
import VaultCore
import VaultFormat
import VaultStore

/// R-SEC-4: the storage folder is hostile input. Something that is not a storage file (a folder,
/// a link, a FIFO) at a name the vault would derive is ignored and never touched; it does not
/// stop the vault from opening.
@Suite struct HostileFolderTests {
    @Test(arguments: [UInt64(2), 16, 17, 40])
    func foreignEntryAtALeftoverNameIsLeftAlone(number: UInt64) throws {
        let storage = try TestVaults.storage()
        let numbers = try FileNumbers(storage, count: 64)
        let vault = try TestVaults.open(storage)
        try vault.makeFile("a", [1, 2, 3])
        try vault.lock()
        // Numbers from 16 up are beyond this vault's one group: where leftovers of a crash would be.
        // Number 2 is the first cover: for a new vault (seed 3 below) the leftover scan starts at 0.
        storage.plantForeign(numbers.name(number))
        let planted = try FileNumbers(storage, seed: 3, count: 64).name(number)
        storage.plantForeign(planted)
        let before = Set(try storage.listAllNames())

        let again = try TestVaults.open(storage)
        #expect(try again.readAll("a") == [1, 2, 3])
        try again.lock()
        let other = try TestVaults.open(storage, seed: 3)
        #expect(other.isNew)
        try other.lock()
        #expect(Set(try storage.listAllNames()) == before, "the foreign entries are still there, nothing else changed")
        try checkStorageInvariants(storage)

        // Both vaults grow through the names taken: the entries are skipped, never written.
        for (seed, big) in [(UInt8(1), "big"), (3, "other")] {
            let grower = try TestVaults.open(storage, seed: seed)
            try grower.makeFile(big, streamContent(40 * Format.payloadSize, seed: seed))
            try grower.lock()
            expectSame(try TestVaults.open(storage, seed: seed).readAll(big), streamContent(40 * Format.payloadSize, seed: seed), big)
        }
        #expect(before.isSubset(of: Set(try storage.listAllNames())))
        #expect(try storage.entryExists(numbers.name(number)) && storage.entryExists(planted))
    }
}
