import Testing
import VaultFormat

/// docs/FORMAT.md §13: each MUST-reject rule of the format-2 structures is refused with its own
/// error, and what a reader MAY skip (tags from 1024 up) is kept.
@Suite struct FormatTwoRejectTests {
    static func device(prefix: UInt32 = 0x1234abcd, id: UInt8 = 1) -> DeviceEntry {
        DeviceEntry(deviceID: Array(repeating: id, count: 16), namesKey: Array(repeating: 2, count: 32), itemPrefix: prefix,
                    nextItemCounter: 5, nextFileNumber: 64, coverCount: 3,
                    ownedGroups: [GroupRange(first: 0, count: 2), GroupRange(first: 3, count: 1)], releasing: [32], name: Array("laptop".utf8))
    }

    static func ref(_ item: UInt64, _ number: UInt64, device: UInt16 = 0) -> PageRef {
        PageRef(firstKey: .item(item), file: FileRef(device: device, number: number), pageKey: Array(repeating: UInt8(number), count: 32))
    }

    static func valid() -> IndexRootV2 {
        IndexRootV2(generation: 9, writerDevice: 0, devices: [device()],
                    specialFiles: [.init(file: FileRef(device: 0, number: 5), role: .ownerUnlock, name: Array(0..<16))],
                    topLevel: 0, top: [ref(1, 6), ref(40, 50)], extensions: [.init(tag: 1024, value: [1])])
    }

    /// The root of an upgraded vault's pattern change in progress (§13.12): a role-3 record and
    /// extension tag 3 with two slot files.
    static func moving(slotFiles: [UInt64] = [20, 21]) -> IndexRootV2 {
        var root = valid()
        root.specialFiles.append(.init(file: FileRef(device: 0, number: 7), role: .retiredOwner, name: Array(16..<32)))
        let move = NamesMove(formerRootLocator: Array(repeating: 1, count: 32), rootLocator: Array(repeating: 2, count: 32),
                             namesKey: Array(repeating: 3, count: 32), slotFiles: slotFiles.map { FileRef(device: 0, number: $0) })
        root.extensions.insert(.init(tag: NamesMove.extensionTag, value: move.encode()), at: 0)
        return root
    }

    @Test func aNamesMoveRoundTrips() throws {
        let root = Self.moving()
        #expect(try IndexRootV2.decode(root.encode()[...]) == root)
        let move = try #require(try root.namesMove())
        #expect(move.slotFiles == [FileRef(device: 0, number: 20), FileRef(device: 0, number: 21)] && move.namesKey == Array(repeating: 3, count: 32))
        #expect(try Self.valid().namesMove() == nil)
    }

    /// The same change in a synced vault of two devices: tag 2 and tag 4 beside tag 3 (§13.5).
    static func movingSynced() -> IndexRootV2 {
        var root = moving()
        root.devices.append(device(prefix: 7, id: 9))
        let former = FormerRemoteNames(rootLocator: Array(repeating: 1, count: 32), namesKey: Array(repeating: 2, count: 32))
        root.extensions.insert(.init(tag: IndexRootV2.formerRemoteUnlockTag, value: Array(32..<48)), at: 0)
        root.extensions.insert(.init(tag: FormerRemoteNames.extensionTag, value: former.encode()), at: 2)
        return root
    }

    /// Before tag 4 a names move was refused in a root of several devices; a synced vault's is one.
    @Test func aSyncedNamesMoveRoundTrips() throws {
        let root = Self.movingSynced()
        #expect(root.extensions.map(\.tag) == [2, 3, 4, 1024])
        #expect(try IndexRootV2.decode(root.encode()[...]) == root)
        #expect(try root.formerRemoteNames() == FormerRemoteNames(rootLocator: Array(repeating: 1, count: 32), namesKey: Array(repeating: 2, count: 32)))
        #expect(try Self.moving().formerRemoteNames() == nil)
    }

    @Test func fileRefsKeepDeviceAndNumberApart() {
        let file = FileRef(device: 3, number: FileRef.numberLimit - 1)
        #expect(file.device == 3 && file.number == FileRef.numberLimit - 1 && FileRef(raw: file.raw) == file)
        #expect(file.raw == 3 << 48 | 0xffff_ffff_ffff)
    }

    @Test func rootRoundTripsAndKeepsOptionalExtensions() throws {
        let root = Self.valid()
        #expect(try IndexRootV2.decode(root.encode()[...]) == root)
        #expect(root.fileIsValid(FileRef(device: 0, number: 63)) && !root.fileIsValid(FileRef(device: 0, number: 4))
                && !root.fileIsValid(FileRef(device: 1, number: 6)) && !root.fileIsValid(FileRef(device: 0, number: 32)))
    }

    /// A pattern change in progress lists the old owner record as role 3 beside the new one (§13.12).
    @Test func aRetiredOwnerRecordIsKeptBesideTheOwner() throws {
        var root = Self.valid()
        root.specialFiles.append(.init(file: FileRef(device: 0, number: 7), role: .retiredOwner, name: Array(16..<32)))
        #expect(try IndexRootV2.decode(root.encode()[...]) == root)
        root.specialFiles.removeFirst()
        #expect(throws: FormatError.invalid("index root: owner unlock record")) { try IndexRootV2.decode(root.encode()[...]) }
    }

    enum RootRule: String, CaseIterable, Sendable {
        case generationZero, noDevice, writerBeyondDevices, sameDeviceTwice, samePrefixTwice, twoUpgradedDevices
        case noOwnerRecord, twoOwnerRecords, unknownRole, fileOfUnknownDevice, fileInCover, fileInSlot, fileOutsideGroups
        case fileTwice, levelTooDeep, emptyInteriorTop, topOutOfOrder, unknownExtension, extensionsOutOfOrder, formerRemoteNameLength
        case namesMoveLength, namesMoveWithoutChange, namesMoveSlotFileInCover, namesMoveSlotFileListed
        case namesMoveSameSlotFile, formerRemoteNamesLength, formerRemoteNamesWithoutRecord
        case deviceCovers, deviceGroupZero, deviceFileNumberNotAGroup, deviceCounterAtRoot, deviceReleasingOwned, deviceNameNotUTF8
        case bytesLeftOver, truncated
    }

    @Test(arguments: RootRule.allCases)
    func rootMustReject(_ rule: RootRule) throws {
        var root = Self.valid()
        var bytes: [UInt8]?
        let expected: FormatError
        func file(_ text: String) -> FormatError { .invalid("index root: file \(text)") }
        switch rule {
        case .generationZero: root.generation = 0; expected = .invalid("index root generation 0")
        case .noDevice: root.devices = []; expected = .invalid("index root: writer device")
        case .writerBeyondDevices: root.writerDevice = 1; expected = .invalid("index root: writer device")
        case .sameDeviceTwice: root.devices.append(Self.device(prefix: 7)); expected = .invalid("index root: two devices with one ID or item prefix")
        case .samePrefixTwice: root.devices.append(Self.device(id: 9)); expected = .invalid("index root: two devices with one ID or item prefix")
        case .twoUpgradedDevices:
            root.devices = [Self.device(prefix: 0), Self.device(prefix: 0, id: 9)]
            expected = .invalid("index root: two devices with one ID or item prefix")
        case .noOwnerRecord: root.specialFiles = []; expected = .invalid("index root: owner unlock record")
        case .twoOwnerRecords:
            root.specialFiles.append(.init(file: FileRef(device: 0, number: 7), role: .ownerUnlock, name: Array(0..<16)))
            expected = .invalid("index root: owner unlock record")
        case .unknownRole:
            bytes = root.encode()
            let at = 8 + 2 + 2 + (try deviceSize()) + 2 + 8
            bytes![at] = 5
            expected = .invalid("index root: special file role 5")
        case .fileOfUnknownDevice: root.top[1].file = FileRef(device: 1, number: 50); expected = file("1:50")
        case .fileInCover: root.top[0].file = FileRef(device: 0, number: 4); expected = file("0:4")
        case .fileInSlot: root.top[0].file = FileRef(device: 0, number: 1); expected = file("0:1")
        case .fileOutsideGroups: root.top[1].file = FileRef(device: 0, number: 32); expected = file("0:32")
        case .fileTwice: root.top[1].file = FileRef(device: 0, number: 5); expected = file("0:5")
        case .levelTooDeep: root.topLevel = 5; expected = .invalid("index root: level 5")
        case .emptyInteriorTop: root.topLevel = 1; root.top = []; expected = .invalid("index root: level 1")
        case .topOutOfOrder: root.top.swapAt(0, 1); expected = .invalid("index root: page refs out of order")
        case .unknownExtension: root.extensions = [.init(tag: 1023, value: [])]
            expected = .invalid("index root: extension 1023 is unknown (made by a newer DotSafe?)")
        case .formerRemoteNameLength: root.extensions = [.init(tag: IndexRootV2.formerRemoteUnlockTag, value: Array(0..<15))]
            expected = .invalid("index root: extension 2's length")
        case .namesMoveLength: root = Self.moving(); root.extensions[0].value.removeLast()
            expected = .invalid("index root: extension 3's length")
        case .namesMoveWithoutChange: root = Self.moving(); root.specialFiles.removeLast()
            expected = .invalid("index root: a names move outside a pattern change")
        case .formerRemoteNamesLength: root = Self.movingSynced(); root.extensions[2].value.removeLast()
            expected = .invalid("index root: extension 4's length")
        case .formerRemoteNamesWithoutRecord: root = Self.movingSynced(); root.extensions.remove(at: 0)
            expected = .invalid("index root: former remote names without a former remote record")
        case .namesMoveSlotFileInCover: root = Self.moving(slotFiles: [3, 21]); expected = .invalid("index root: names move file 0:3")
        case .namesMoveSlotFileListed: root = Self.moving(slotFiles: [20, 6]); expected = .invalid("index root: names move file 0:6")
        case .namesMoveSameSlotFile: root = Self.moving(slotFiles: [20, 20]); expected = .invalid("index root: names move file 0:20")
        case .extensionsOutOfOrder: root.extensions = [.init(tag: 2000, value: []), .init(tag: 1024, value: [])]
            expected = .invalid("index root: extension tags out of order")
        case .deviceCovers: root.devices[0].coverCount = 7; expected = .invalid("device cover count 7")
        case .deviceGroupZero: root.devices[0].ownedGroups = [GroupRange(first: 1, count: 1)]; expected = .invalid("device: group 0 not owned")
        case .deviceFileNumberNotAGroup: root.devices[0].nextFileNumber = 65; expected = .invalid("device nextFileNumber")
        case .deviceCounterAtRoot: root.devices[0].itemPrefix = 0; root.devices[0].nextItemCounter = 1; expected = .invalid("device item counter")
        case .deviceReleasingOwned: root.devices[0].releasing = [48]; expected = .invalid("device: releasing file 48")
        case .deviceNameNotUTF8: root.devices[0].name = [0xff]; expected = .invalid("device name")
        case .bytesLeftOver: bytes = root.encode() + [0]; expected = .invalid("index root: 1 bytes left over")
        case .truncated: bytes = Array(root.encode().dropLast()); expected = .truncated("index root")
        }
        let encoded = bytes ?? root.encode()
        #expect(throws: expected) { try IndexRootV2.decode(encoded[...]) }
    }

    func deviceSize() throws -> Int {
        IndexRootV2(generation: 1, writerDevice: 0, devices: [Self.device()], specialFiles: [], topLevel: 0, top: []).encode().count - 8 - 2 - 2 - 2 - 1 - 4 - 2
    }

    enum PageRule: String, CaseIterable, Sendable { case empty, otherLevel, recordsOutOfOrder, refsOutOfOrder, leftOver, truncated }

    @Test(arguments: PageRule.allCases)
    func pageMustReject(_ rule: PageRule) {
        let leaf = IndexPageV2.encode(level: 0, .leaf([(.item(1), [1]), (.item(2), [2])]))
        let interior = IndexPageV2.encode(level: 1, .interior([Self.ref(1, 6), Self.ref(40, 50)]))
        var bytes = leaf, level: UInt8 = 0
        let expected: FormatError
        switch rule {
        case .empty: bytes = [0, 0, 0, 0, 0]; expected = .invalid("empty index page")
        case .otherLevel: level = 1; expected = .invalid("index page level 0, expected 1")
        case .recordsOutOfOrder: bytes = IndexPageV2.encode(level: 0, .leaf([(.item(2), [2]), (.item(1), [1])]))
            expected = .invalid("index page: record 1.0 out of order")
        case .refsOutOfOrder: bytes = IndexPageV2.encode(level: 2, .interior([Self.ref(40, 50), Self.ref(1, 6)])); level = 2
            expected = .invalid("index page: page refs out of order")
        case .leftOver: bytes = interior + [0]; level = 1; expected = .invalid("index page: 1 bytes left over")
        case .truncated: bytes = Array(interior.dropLast()); level = 1; expected = .truncated("index page")
        }
        #expect(throws: expected) { try IndexPageV2.decode(bytes[...], level: level) }
    }

    enum UnlockRule: String, CaseIterable, Sendable { case grantRole, missingVaultKey, shortKey, unknownTag, tagsOutOfOrder, leftOver }

    @Test func unlockRecordRoundTripsAndSkipsOptionalTags() throws {
        let record = UnlockRecord(vaultKey: Array(repeating: 1, count: 32), rootLocator: Array(repeating: 2, count: 32),
                                  ownFile: FileRef(device: 0, number: 5), optional: [.init(tag: 4000, value: [9, 9])])
        #expect(try UnlockRecord.decode(record.encode()[...]) == record)
    }

    @Test(arguments: UnlockRule.allCases)
    func unlockRecordMustReject(_ rule: UnlockRule) {
        func body(role: UInt8 = 1, _ tags: [(UInt16, [UInt8])]) -> [UInt8] {
            var writer = ByteWriter()
            writer.u8(role)
            writer.u16(UInt16(tags.count))
            for (tag, value) in tags { writer.u16(tag); writer.lp32(value) }
            return writer.bytes
        }
        let key = [UInt8](repeating: 1, count: 32), file = [UInt8](repeating: 0, count: 8)
        var bytes: [UInt8]
        let expected: FormatError
        switch rule {
        case .grantRole: bytes = body(role: 2, [(1, key), (2, key), (3, file)]); expected = .invalid("unlock record role 2")
        case .missingVaultKey: bytes = body([(2, key), (3, file)]); expected = .invalid("unlock record: a required tag is missing")
        case .shortKey: bytes = body([(1, Array(key.dropLast())), (2, key), (3, file)]); expected = .invalid("unlock record: tag 1 length")
        case .unknownTag: bytes = body([(1, key), (2, key), (3, file), (17, [])])
            expected = .invalid("unlock record: tag 17 is unknown (made by a newer DotSafe?)")
        case .tagsOutOfOrder: bytes = body([(2, key), (1, key), (3, file)]); expected = .invalid("unlock record: tags out of order")
        case .leftOver: bytes = body([(1, key), (2, key), (3, file)]) + [0]; expected = .invalid("unlock record: 1 bytes left over")
        }
        #expect(throws: expected) { try UnlockRecord.decode(bytes[...]) }
    }

    enum RecordRule: String, CaseIterable, Sendable { case unknownFlag, formatOneMemberWithoutKey, memberTooShort, newerVersion, segmentScheme }

    @Test(arguments: RecordRule.allCases)
    func recordMustReject(_ rule: RecordRule) throws {
        var record = ItemRecord(type: .file, mode: 0o644, uid: 0, gid: 0, atime: 0, mtime: 0, ctime: 0, size: 100, links: [.init(parentID: 1, name: [0x61])],
                                layout: .packed(.init(file: FileRef(device: 0, number: 40), offset: 0, sealedLength: 140, key: Array(repeating: 3, count: 32))))
        record.recordVersion = 2
        var bytes = record.encode()
        #expect(try ItemRecord.decode(bytes) == record)
        let flagsAt = bytes.count - 1 - 8 - 4 - 4 - 32 - 1
        #expect(bytes[flagsAt] == 0)
        let expected: FormatError
        switch rule {
        case .unknownFlag: bytes[flagsAt] = 2; expected = .invalid("item record flags 2")
        case .formatOneMemberWithoutKey:
            record.layout = .packed(.init(fileNumber: 40, offset: 0, sealedLength: 116, nonce: Array(repeating: 4, count: 24)))
            bytes = record.encode(); expected = .invalid("packed member of format 1 without an item key")
        case .memberTooShort:
            record.layout = .packed(.init(file: FileRef(device: 0, number: 40), offset: 0, sealedLength: 40, key: Array(repeating: 3, count: 32)))
            bytes = record.encode(); expected = .invalid("packed member")
        case .newerVersion: bytes[0] = 3; expected = .newerVersion(found: 3)
        case .segmentScheme:
            var segment = ChunkSegmentV2.encode([.init(indexInSegment: 0, file: FileRef(device: 0, number: 40), seal: .key(Array(repeating: 5, count: 32)))])
            segment[4] = 3
            #expect(throws: FormatError.invalid("chunk segment scheme 3")) { try ChunkSegmentV2.decode(segment) }
            return
        }
        #expect(throws: expected) { try ItemRecord.decode(bytes) }
    }
}
