import Testing
import VaultCore
import VaultFormat
import VaultStore

/// An item's record must fit an index page (docs/FORMAT.md §5.2): operations that grow it refuse
/// with `tooLarge` before it could not be written, instead of the commit trapping on an index page
/// overflow (which would take the daemon down and leave the change unsaveable).
@Suite struct RecordLimitTests {
    static func longName(_ i: Int) -> [UInt8] { Array(String(format: "%05d", i).utf8) + [UInt8](repeating: 0x6c, count: 250) }

    @Test func hardLinksWithLongNamesStopBeforeTheRecordOutgrowsAPage() throws {
        let storage = try TestVaults.storage()
        let vault = try TestVaults.open(storage)
        let id = try vault.makeFile("target", [1, 2, 3])
        var refusedAt: Int?
        for i in 0..<999 {
            do {
                try vault.link(id, into: Vault.rootID, named: Self.longName(i))
            } catch VaultError.tooLarge {
                refusedAt = i
                break
            }
        }
        let refused = try #require(refusedAt, "999 links of 255-byte names were all accepted")
        #expect(refused > 100, "far more than a hundred long names fit")
        #expect(try vault.attributes(id).linkCount == refused + 1)
        try vault.commit()
        try vault.lock()
        let again = try TestVaults.open(storage)
        #expect(try again.attributes(id).linkCount == refused + 1)
        #expect(try again.readAll(String(decoding: Self.longName(refused - 1), as: UTF8.self)) == [1, 2, 3])
        try again.lock()
        try checkStorageInvariants(storage)
    }

    @Test func extendedAttributesOnTopOfLongNamesStayWithinARecord() throws {
        let storage = try TestVaults.storage()
        let vault = try TestVaults.open(storage)
        let id = try vault.makeFile("target", [1])
        var links = 0
        while true {
            do { try vault.link(id, into: Vault.rootID, named: Self.longName(links)) } catch VaultError.tooLarge { break }
            links += 1
        }
        // The record is full of names: a large attribute does not fit any more.
        #expect(throws: VaultError.self) {
            try vault.setExtendedAttribute(id, Array("user.big".utf8), [UInt8](repeating: 7, count: 30_000))
        }
        try vault.lock()
        #expect(try TestVaults.open(storage).attributes(id).linkCount == links + 1)
        try checkStorageInvariants(storage)
    }
}

/// Extended attributes up to their limit, and replacing one by a value of the same size.
@Suite struct ExtendedAttributeLimitTests {
    @Test func replacingALargeAttributeIsNotCountedTwice() throws {
        let storage = try TestVaults.storage()
        let vault = try TestVaults.open(storage)
        let id = try vault.makeFile("f", [1])
        let name = Array("user.large".utf8)
        try vault.setExtendedAttribute(id, name, [UInt8](repeating: 1, count: 20_000))
        try vault.setExtendedAttribute(id, name, [UInt8](repeating: 2, count: 20_000), replace: true)
        #expect(try vault.extendedAttribute(id, name) == [UInt8](repeating: 2, count: 20_000))
        // Two of them would be 40 KB: over the 32 KiB limit.
        #expect(throws: VaultError.tooLarge("extended attributes")) {
            try vault.setExtendedAttribute(id, Array("user.other".utf8), [UInt8](repeating: 3, count: 20_000))
        }
        try vault.lock()
        let again = try TestVaults.open(storage)
        #expect(try again.extendedAttribute(id, name) == [UInt8](repeating: 2, count: 20_000))
        #expect(try again.extendedAttributeNames(id) == [name])
        try again.lock()
        try checkStorageInvariants(storage)
    }
}
