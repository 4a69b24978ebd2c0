import DotSafeTestSupport
import Foundation
import Testing
import VaultFormat
import VaultStore

/// The contract of `StorageFolder` (FORMAT.md §3), checked the same way on every implementation
/// (CryFS's generic BlockStore tests are the model): what the vault relies on must not depend on
/// whether it runs on disk, in memory, or through the counting decorator.
@Suite struct StorageFolderConformanceTests {
    static func name(_ seed: UInt8) -> String { FileName.encode([UInt8](repeating: seed, count: Format.nameBytes)) }
    static func contents(_ seed: UInt8) -> [UInt8] { (0..<Format.fileSize).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) } }

    @Test(arguments: StorageKind.allCases)
    func createReadWriteListRemove(kind: StorageKind) throws {
        let fixture = try StorageFixture(kind)
        let storage = fixture.folder
        #expect(try storage.listFiles().isEmpty)
        let a = Self.name(1), b = Self.name(2)
        try storage.create(a, contents: Self.contents(1), durable: true)
        try storage.create(b, contents: Self.contents(2), durable: false)
        #expect(try storage.readStreaming(b).map(Array.init) == Self.contents(2), "a stream reads what is not yet on disk")
        try storage.sync([b])
        try storage.syncFolder()
        #expect(try storage.listFiles().sorted() == [a, b].sorted())
        #expect(try storage.listAllNames().sorted() == [a, b].sorted())
        #expect(try storage.entryExists(a))
        #expect(try storage.read(a) == Self.contents(1))
        #expect(try storage.readStreaming(a).map(Array.init) == Self.contents(1))
        #expect(try storage.read(b, offset: 1000, count: 17) == Array(Self.contents(2)[1000..<1017]))

        _ = try storage.readStreaming(a)
        try storage.write(a, offset: 5, bytes: [9, 8, 7])
        var expected = Self.contents(1)
        expected.replaceSubrange(5..<8, with: [9, 8, 7])
        #expect(try storage.readStreaming(a).map(Array.init) == expected, "a stream reads a write not yet on disk")
        try storage.sync([a])
        #expect(try storage.read(a) == expected)
        #expect(try storage.read(b) == Self.contents(2), "a write reaches only its own file")

        try storage.remove(a)
        try storage.syncFolder()
        #expect(try storage.listFiles() == [b])
        #expect(try storage.read(a) == nil)
        #expect(try storage.readStreaming(a) == nil)
        #expect(try !storage.entryExists(a))
    }

    /// Every file keeps the one size: a write at the very end changes bytes, never the size.
    @Test(arguments: StorageKind.allCases)
    func writesNeverChangeTheSize(kind: StorageKind) throws {
        let fixture = try StorageFixture(kind)
        let name = Self.name(3)
        try fixture.folder.create(name, contents: Self.contents(3), durable: false)
        try fixture.folder.write(name, offset: Format.fileSize - 3, bytes: [1, 2, 3])
        try fixture.folder.write(name, offset: 0, bytes: [])
        let bytes = try #require(try fixture.folder.read(name))
        #expect(bytes.count == Format.fileSize)
        #expect(Array(bytes.suffix(4)) == [Self.contents(3)[Format.fileSize - 4], 1, 2, 3])
        #expect(try fixture.folder.read(name, offset: Format.fileSize - 3, count: 3) == [1, 2, 3])
    }

    /// Only names of the storage's form are storage files; the alphabet and length are checked.
    @Test(arguments: StorageKind.allCases)
    func onlyWellFormedNamesAreListed(kind: StorageKind) throws {
        let fixture = try StorageFixture(kind)
        let good = Self.name(4)
        try fixture.folder.create(good, contents: Self.contents(4), durable: false)
        try fixture.plant(.badName)
        #expect(FileName.isWellFormed(good) && !FileName.isWellFormed(HostileEntry.badName.name))
        #expect(try fixture.folder.listFiles() == [good])
        #expect(try fixture.folder.listAllNames().sorted() == [good, HostileEntry.badName.name].sorted())
    }

    @Test(arguments: StorageKind.allCases)
    func missingFilesAndTakenNamesFailAsDocumented(kind: StorageKind) throws {
        let fixture = try StorageFixture(kind)
        let storage = fixture.folder
        let missing = Self.name(5), taken = Self.name(6)
        #expect(try storage.read(missing) == nil)
        #expect(try !storage.entryExists(missing))
        #expect(throws: StoreError.unusableFile(missing)) { try storage.read(missing, offset: 0, count: 1) }
        #expect(throws: StoreError.unusableFile(missing)) { try storage.write(missing, offset: 0, bytes: [1]) }
        try storage.remove(missing)  // nothing at the name is not an error
        #expect(try storage.listAllNames().isEmpty, "a failed write must not create the file")

        try storage.create(taken, contents: Self.contents(6), durable: true)
        #expect(throws: StoreError.exists(taken)) { try storage.create(taken, contents: Self.contents(7), durable: true) }
        #expect(try storage.read(taken) == Self.contents(6), "a refused create leaves the file as it was")
    }

    /// A rename moves a storage file to a free name, atomically, keeping its bytes and the count
    /// of files; it never replaces anything (an upgrade's unlock record, docs/FORMAT.md §13.9)
    /// and never moves what is not a storage file.
    @Test(arguments: StorageKind.allCases)
    func renameMovesAFileAndReplacesNothing(kind: StorageKind) throws {
        let fixture = try StorageFixture(kind)
        let storage = fixture.folder
        let a = Self.name(20), b = Self.name(21), c = Self.name(22)
        try storage.create(a, contents: Self.contents(20), durable: true)
        try storage.create(c, contents: Self.contents(22), durable: true)
        try storage.rename(a, to: b)
        try storage.syncFolder()
        #expect(try storage.listFiles().sorted() == [b, c].sorted())
        #expect(try storage.read(b) == Self.contents(20))
        #expect(throws: StoreError.exists(c)) { try storage.rename(b, to: c) }
        #expect(try storage.read(c) == Self.contents(22) && storage.read(b) == Self.contents(20), "a refused rename changes nothing")
        #expect(throws: StoreError.unusableFile(a)) { try storage.rename(a, to: Self.name(23)) }
        try fixture.plant(.wrongSize)
        #expect(throws: StoreError.unusableFile(HostileEntry.wrongSize.name)) {
            try storage.rename(HostileEntry.wrongSize.name, to: Self.name(24))
        }
        #expect(try fixture.isIntact(.wrongSize))
        #expect(try storage.listFiles().sorted() == [b, c].sorted())
    }

    /// A hostile entry is listed by name only, fails every read and write with `unusableFile`,
    /// is never followed, never written, and unless it is a regular file, never removed.
    @Test(arguments: StorageKind.allCases, HostileEntry.allCases)
    func hostileEntriesAreIgnoredAndNeverTouched(kind: StorageKind, entry: HostileEntry) throws {
        let fixture = try StorageFixture(kind)
        let storage = fixture.folder
        let mine = Self.name(8)
        try storage.create(mine, contents: Self.contents(8), durable: true)
        try fixture.plant(entry)
        let name = entry.name

        #expect(try storage.listFiles() == [mine])
        #expect(try storage.listAllNames().contains(name))
        #expect(try storage.entryExists(name))
        if entry != .badName {
            #expect(throws: StoreError.unusableFile(name)) { try storage.read(name) }
            #expect(throws: StoreError.unusableFile(name)) { try storage.readStreaming(name) }
            #expect(throws: StoreError.unusableFile(name)) { try storage.read(name, offset: 0, count: 16) }
            #expect(throws: StoreError.unusableFile(name)) { try storage.write(name, offset: 0, bytes: [0xee]) }
        }
        if entry != .badName {  // the vault never makes a name of another form (a precondition)
            #expect(throws: StoreError.exists(name)) { try storage.create(name, contents: Self.contents(9), durable: true) }
        }
        if entry != .wrongSize {
            #expect(throws: StoreError.unusableFile(name)) { try storage.remove(name) }
        }
        #expect(try fixture.isIntact(entry))
        #expect(try storage.read(mine) == Self.contents(8))
    }

    /// A file appears at its name complete: a reader polling the folder while files are made
    /// never sees one that is shorter or holds other bytes (FORMAT.md §3).
    @Test(arguments: StorageKind.allCases)
    func newFilesAppearComplete(kind: StorageKind) throws {
        let fixture = try StorageFixture(kind)
        let storage = fixture.folder
        let seeds: [UInt8] = Array(10..<18)
        let expected = Dictionary(uniqueKeysWithValues: seeds.map { (Self.name($0), Self.contents($0)) })
        let done = Flag()
        let torn = Flag()
        let observer = Thread {
            while !done.isSet {
                for name in (try? storage.listAllNames()) ?? [] {
                    guard let bytes = try? storage.read(name) else { continue }
                    if bytes != expected[name] { torn.set() }
                }
            }
        }
        observer.start()
        defer { done.set() }
        for seed in seeds { try storage.create(Self.name(seed), contents: Self.contents(seed), durable: false) }
        done.set()
        #expect(waitFor { observer.isFinished })
        #expect(!torn.isSet, "a reader saw a file before it was complete")
        #expect(try storage.listFiles().sorted() == expected.keys.sorted())
    }
}
