import Testing
import VaultFormat

/// docs/FORMAT.md §6.1: item records of every type and layout round-trip, and each MUST-reject
/// rule that needs only the record is refused with its own error (the rules across records are
/// in IndexCheckFormatTests).
@Suite struct ItemRecordFormatTests {
    static let key = Array(UInt8(0)..<32)
    static let nonce = [UInt8](repeating: 0xab, count: 24)

    static func file(size: UInt64 = 100, layout: ItemRecord.Layout = .empty, links: [ItemRecord.Link] = [.init(parentID: 1, name: [0x61])]) -> ItemRecord {
        ItemRecord(type: .file, mode: 0o644, uid: 1, gid: 2, atime: -5, mtime: 6, ctime: 7, size: size, links: links,
                   xattrs: [(Array("user.a".utf8), [1, 2]), (Array("user.b".utf8), [])], itemKey: key, layout: layout)
    }

    static let examples: [ItemRecord] = [
        ItemRecord(type: .folder, mode: 0o755, uid: 0, gid: 0, atime: 1, mtime: 2, ctime: 3),
        file(),
        file(size: 4000, layout: .packed(.init(fileNumber: 40, offset: 0, sealedLength: 4016, nonce: nonce))),
        file(size: 10_000_000, layout: .chunked, links: [.init(parentID: 1, name: [0x61]), .init(parentID: 7, name: [0x61])]),
        ItemRecord(type: .symlink, mode: 0o777, uid: 0, gid: 0, atime: 0, mtime: 0, ctime: 0, size: 4095,
                   links: [.init(parentID: 1, name: [0x6c])], target: Array(repeating: 0x78, count: 4095)),
        ItemRecord(type: .fifo, mode: 0o7777, uid: .max, gid: .max, atime: .min, mtime: .max, ctime: 0, links: [.init(parentID: 1, name: Array(repeating: 0x66, count: 255))]),
        ItemRecord(type: .characterDevice, mode: 0o666, uid: 0, gid: 0, rdev: 0x0103, atime: 0, mtime: 0, ctime: 0, links: [.init(parentID: 1, name: [0x63])]),
        ItemRecord(type: .blockDevice, mode: 0o660, uid: 0, gid: 6, rdev: .max, atime: 0, mtime: 0, ctime: 0, links: [.init(parentID: 1, name: [0x62])]),
        ItemRecord(type: .socket, mode: 0o755, uid: 0, gid: 0, atime: 0, mtime: 0, ctime: 0, links: [.init(parentID: 1, name: [0x73])]),
    ]

    @Test(arguments: examples)
    func roundTrips(record: ItemRecord) throws {
        #expect(try ItemRecord.decode(record.encode()) == record)
    }

    enum Rule: String, CaseIterable, Sendable {
        case emptyName, nameTooLong, nameWithSlash, nameWithNUL, nameDot, nameDotDot, linkTwice, unknownType, typeZero
        case unknownLayout, modeAboveMask, memberBeyondFile, memberEmpty, memberLongerThanSize, packedSizeOfAChunk
        case newerVersion, olderVersion, emptyTarget, targetTooLong, targetWithNUL, xattrUnnamed, xattrTwice, bytesLeftOver, cut
    }

    @Test(arguments: Rule.allCases)
    func mustReject(_ rule: Rule) throws {
        var record = Self.file()
        var symlink = Self.examples[4]
        var bytes: [UInt8]?
        var expected = FormatError.invalid("item name")
        func member(offset: UInt32 = 0, sealed: UInt32) -> ItemRecord.Layout {
            .packed(.init(fileNumber: 40, offset: offset, sealedLength: sealed, nonce: Self.nonce))
        }
        switch rule {
        case .emptyName: record.links[0].name = []
        case .nameTooLong:
            // lp8 cannot carry 256 bytes, so no record holds such a name; the rule guards every
            // name the layers above accept.
            #expect(throws: expected) { try ItemRecord.validateName(Array(repeating: 0x61, count: 256)) }
            try ItemRecord.validateName(Array(repeating: 0x61, count: 255))
            return
        case .nameWithSlash: record.links[0].name = Array("a/b".utf8)
        case .nameWithNUL: record.links[0].name = [0x61, 0]
        case .nameDot: record.links[0].name = [0x2e]
        case .nameDotDot: record.links[0].name = [0x2e, 0x2e]
        case .linkTwice: record.links.append(record.links[0]); expected = .invalid("item record: link named twice")
        case .unknownType: bytes = record.encode(); bytes![1] = 8; expected = .invalid("item type 8")
        case .typeZero: bytes = record.encode(); bytes![1] = 0; expected = .invalid("item type 0")
        case .unknownLayout: bytes = record.encode(); bytes![bytes!.count - 1] = 3; expected = .invalid("file layout 3")
        case .modeAboveMask: record.mode = 0o10000; expected = .invalid("item mode 10000")
        case .memberBeyondFile: record.layout = member(offset: UInt32(Format.fileSize - 50), sealed: 51); expected = .invalid("packed member")
        case .memberEmpty: record.layout = member(sealed: 16); expected = .invalid("packed member")
        case .memberLongerThanSize: record.layout = member(sealed: 117); expected = .invalid("packed member")
        case .packedSizeOfAChunk: record.size = UInt64(Format.payloadSize); record.layout = member(sealed: 116); expected = .invalid("packed member")
        case .newerVersion: bytes = record.encode(); bytes![0] = 3; expected = .newerVersion(found: 3)
        case .olderVersion: bytes = record.encode(); bytes![0] = 0; expected = .invalid("item record version 0")
        case .emptyTarget: symlink.target = []; bytes = symlink.encode(); expected = .invalid("symbolic link target")
        case .targetTooLong: symlink.target = Array(repeating: 0x78, count: 4096); bytes = symlink.encode(); expected = .invalid("symbolic link target")
        case .targetWithNUL: symlink.target = [0x61, 0]; bytes = symlink.encode(); expected = .invalid("symbolic link target")
        case .xattrUnnamed: record.xattrs[0].name = []; expected = .invalid("extended attribute name")
        case .xattrTwice: record.xattrs[1].name = record.xattrs[0].name; expected = .invalid("extended attribute named twice")
        case .bytesLeftOver: bytes = record.encode() + [0]; expected = .invalid("item record: 1 bytes left over")
        case .cut: bytes = record.encode().dropLast(); expected = .truncated("item record")
        }
        let input = bytes ?? record.encode()
        #expect(throws: expected) { try ItemRecord.decode(input) }
    }
}
