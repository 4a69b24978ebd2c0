import DotSafeTestSupport
@testable import VaultCore
import Testing
import VaultFormat

/// The storage the format-1 release wrote (Fixtures/format1.tar.gz) with index 3 on
/// (docs/FORMAT.md §15.1): opened and locked, it is left as it was; `dotsafe upgrade`'s
/// conversion makes it format 2 and index 3 by one commit, with every file, attribute and time
/// as before, and the check finds nothing; a release without index 3 then refuses it as newer.
@Suite struct Format1FixtureConversionTests {
    static func options(readOnly: Bool = false, indexThree: Bool = true) -> Vault.Options {
        var options = Vault.Options(readOnly: readOnly, cacheBytes: 8 << 20)
        options.indexThree = indexThree
        return options
    }

    @Test func theFormat1StorageConvertsWithEveryFile() throws {
        let fixture = try Format1FixtureTests.unpack()
        defer { TestFolder.remove(fixture.folder) }
        let files = Set(try fixture.storage.listFiles())
        do {
            let vault = try Vault.open(storage: fixture.storage, secrets: try fixture.secrets(), options: Self.options())
            #expect(vault.indexVersion == 1 && vault.indexThreeHold.isEmpty)
            #expect(try Format1FixtureTests.contents(of: vault) == Format1FixtureTests.expected)
            try vault.lock()
        }
        #expect(Set(try fixture.storage.listFiles()) == files, "a session that changes nothing converts nothing")
        let unchanged = try Vault.open(storage: fixture.storage, secrets: try fixture.secrets(), options: Self.options(readOnly: true))
        #expect(unchanged.indexVersion == 1, "still format 1")
        try unchanged.lock()

        let vault = try Vault.open(storage: fixture.storage, secrets: try fixture.secrets(), options: Self.options())
        #expect(try vault.convertToIndexThree())
        #expect(vault.indexVersion == 3 && vault.formatVersion == 2)
        try vault.lock()
        #expect(try fixture.storage.listFiles().count == files.count, "the conversion keeps the count of storage files")

        #expect(throws: VaultError.newerFormat(IndexRootV3.envelopeVersion)) {
            _ = try Vault.open(storage: fixture.storage, secrets: try fixture.secrets(), options: Self.options(readOnly: true, indexThree: false))
        }
        let again = try Vault.open(storage: fixture.storage, secrets: try fixture.secrets(), options: Self.options(readOnly: true))
        defer { try? again.lock() }
        #expect(again.indexVersion == 3 && again.rollbackWarning == nil)
        #expect(try Format1FixtureTests.contents(of: again) == Format1FixtureTests.expected)
        let attribute = Format1FixtureTests.extendedAttribute
        #expect(try again.extendedAttribute(try Format1FixtureTests.id(attribute.path, in: again), attribute.name) == attribute.value)
        #expect(try again.attributes(try Format1FixtureTests.id("docs/hello.txt", in: again)).mtime == Format1FixtureTests.clockStart)
        try IndexThreeVaultTests.expectRecordsExact(again, "the converted fixture")
        let report = try again.check()
        #expect(report.isClean, "\(report.storageProblems) \(report.damagedItems)")
    }
}
