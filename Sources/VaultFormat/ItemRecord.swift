/// An item's record (docs/FORMAT.md §6.1, and §13.8 for record version 2): one file, folder,
/// link, FIFO, device or socket.
/// Decoding applies every rule that needs only the record; rules across records (duplicate
/// names, reachability, file numbers used twice) belong to whoever holds the whole index.
public struct ItemRecord: Equatable, Sendable {
    public enum ItemType: UInt8, Sendable { case file = 1, folder, symlink, fifo, characterDevice, blockDevice, socket }

    public struct Link: Hashable, Sendable {
        public var parentID: UInt64
        public var name: [UInt8]
        public init(parentID: UInt64, name: [UInt8]) { self.parentID = parentID; self.name = name }
    }

    public struct Member: Equatable, Sendable {
        public var fileNumber: UInt64
        public var offset: UInt32
        public var sealedLength: UInt32
        /// Format 1 (and layout 3 of format 2): the seal nonce; the member is opened with the ITK.
        public var nonce: [UInt8]
        /// Format 2: the member's own key; its nonce is in the pack, in front of the ciphertext.
        public var key: [UInt8]
        public init(fileNumber: UInt64, offset: UInt32, sealedLength: UInt32, nonce: [UInt8]) {
            self.fileNumber = fileNumber; self.offset = offset; self.sealedLength = sealedLength; self.nonce = nonce; key = []
        }
        /// A format-2 member: `fileNumber` is a FileRef's raw value.
        public init(file: FileRef, offset: UInt32, sealedLength: UInt32, key: [UInt8]) {
            fileNumber = file.raw; self.offset = offset; self.sealedLength = sealedLength; nonce = []; self.key = key
        }
        /// Bytes of content it holds.
        public var contentLength: Int { Int(sealedLength) - Format.tagSize - (key.isEmpty ? 0 : Format.sealNonceSize) }
    }

    public enum Layout: Equatable, Sendable {
        /// Nothing stored: every byte reads as zero.
        case empty
        case packed(Member)
        /// Chunks are listed in the item's segment records.
        case chunked
    }

    /// 1 or 2: the layout `encode` writes and `decode` found.
    public var recordVersion: UInt8 = Format.version
    public var type: ItemType
    public var mode: UInt32
    public var uid: UInt32
    public var gid: UInt32
    public var rdev: UInt64
    public var atime: Int64
    public var mtime: Int64
    public var ctime: Int64
    public var size: UInt64
    /// Record version 2: +1 at every commit that changes the item, and the device that did.
    public var version: UInt64 = 0
    public var changedBy: UInt16 = 0
    public var links: [Link]
    public var xattrs: [(name: [UInt8], value: [UInt8])]
    /// Regular files only: the item key (wiped by the owner once it is in locked memory).
    public var itemKey: [UInt8]
    public var layout: Layout
    /// Symbolic links only.
    public var target: [UInt8]

    public init(type: ItemType, mode: UInt32, uid: UInt32, gid: UInt32, rdev: UInt64 = 0,
                atime: Int64, mtime: Int64, ctime: Int64, size: UInt64 = 0, links: [Link] = [],
                xattrs: [(name: [UInt8], value: [UInt8])] = [], itemKey: [UInt8] = [],
                layout: Layout = .empty, target: [UInt8] = []) {
        self.type = type; self.mode = mode; self.uid = uid; self.gid = gid; self.rdev = rdev
        self.atime = atime; self.mtime = mtime; self.ctime = ctime; self.size = size
        self.links = links; self.xattrs = xattrs; self.itemKey = itemKey; self.layout = layout; self.target = target
    }

    public static func == (a: ItemRecord, b: ItemRecord) -> Bool {
        a.recordVersion == b.recordVersion && a.version == b.version && a.changedBy == b.changedBy && a.type == b.type && a.mode == b.mode && a.uid == b.uid && a.gid == b.gid && a.rdev == b.rdev
            && a.atime == b.atime && a.mtime == b.mtime && a.ctime == b.ctime && a.size == b.size
            && a.links == b.links && a.itemKey == b.itemKey && a.layout == b.layout && a.target == b.target
            && a.xattrs.map(\.name) == b.xattrs.map(\.name) && a.xattrs.map(\.value) == b.xattrs.map(\.value)
    }

    public func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: 96 + links.reduce(0) { $0 + $1.name.count + 9 })
        writer.u8(recordVersion)
        writer.u8(type.rawValue)
        writer.u32(mode)
        writer.u32(uid)
        writer.u32(gid)
        writer.u64(rdev)
        writer.i64(atime)
        writer.i64(mtime)
        writer.i64(ctime)
        writer.u64(size)
        if recordVersion >= 2 { writer.u64(version); writer.u16(changedBy) }
        writer.u16(UInt16(links.count))
        for link in links { writer.u64(link.parentID); writer.lp8(link.name) }
        writer.u16(UInt16(xattrs.count))
        for xattr in xattrs { writer.lp8(xattr.name); writer.lp32(xattr.value) }
        switch type {
        case .file where recordVersion >= 2: encodeFileContentV2(into: &writer)
        case .file:
            writer.raw(itemKey)
            switch layout {
            case .empty: writer.u8(0)
            case .packed(let member):
                writer.u8(1)
                writer.u64(member.fileNumber)
                writer.u32(member.offset)
                writer.u32(member.sealedLength)
                writer.raw(member.nonce)
            case .chunked: writer.u8(2)
            }
        case .symlink: writer.lp32(target)
        default: break
        }
        return writer.bytes
    }

    public static func decode(_ bytes: [UInt8]) throws -> ItemRecord {
        var reader = ByteReader(bytes, context: "item record")
        let version = try reader.u8()
        if version > Format.newestVersion { throw FormatError.newerVersion(found: version) }
        guard version >= Format.version else { throw FormatError.invalid("item record version \(version)") }
        let rawType = try reader.u8()
        guard let type = ItemType(rawValue: rawType) else { throw FormatError.invalid("item type \(rawType)") }
        let mode = try reader.u32()
        guard mode <= 0o7777 else { throw FormatError.invalid("item mode \(String(mode, radix: 8))") }
        var record = ItemRecord(type: type, mode: mode, uid: try reader.u32(), gid: try reader.u32(),
                                rdev: try reader.u64(), atime: try reader.i64(), mtime: try reader.i64(),
                                ctime: try reader.i64(), size: try reader.u64())
        record.recordVersion = version
        if version >= 2 { record.version = try reader.u64(); record.changedBy = try reader.u16() }
        // Duplicates are found with sets: a linear search per entry made a page of 65,535 tiny
        // entries cost billions of comparisons. Almost every item has one link, and a set for it
        // was a fifth of an index's decoding: a few are compared directly.
        let linkCount = Int(try reader.u16())
        var seenLinks = Set<Link>()
        record.links.reserveCapacity(linkCount)
        for _ in 0..<linkCount {
            let link = Link(parentID: try reader.u64(), name: try reader.lp8())
            try validateName(link.name)
            let repeated = linkCount <= 8 ? record.links.contains(link) : !seenLinks.insert(link).inserted
            guard !repeated else { throw FormatError.invalid("item record: link named twice") }
            record.links.append(link)
        }
        let xattrCount = Int(try reader.u16())
        var seenNames = Set<[UInt8]>()
        for _ in 0..<xattrCount {
            let name = try reader.lp8()
            guard !name.isEmpty, !name.contains(0) else { throw FormatError.invalid("extended attribute name") }
            guard seenNames.insert(name).inserted else { throw FormatError.invalid("extended attribute named twice") }
            record.xattrs.append((name, try reader.lp32()))
        }
        switch type {
        case .file where version >= 2: try record.decodeFileContentV2(from: &reader)
        case .file:
            record.itemKey = try reader.raw(Format.keySize)
            let layout = try reader.u8()
            switch layout {
            case 0: record.layout = .empty
            case 1:
                let member = Member(fileNumber: try reader.u64(), offset: try reader.u32(),
                                    sealedLength: try reader.u32(), nonce: try reader.raw(Format.sealNonceSize))
                try record.checkMember(member)
                record.layout = .packed(member)
            case 2: record.layout = .chunked
            default: throw FormatError.invalid("file layout \(layout)")
            }
        case .symlink:
            record.target = try reader.lp32()
            guard (1...Format.maxSymlinkLength).contains(record.target.count), !record.target.contains(0) else {
                throw FormatError.invalid("symbolic link target")
            }
        case .folder, .fifo, .characterDevice, .blockDevice, .socket: break
        }
        try reader.expectEnd()
        return record
    }

    /// R-SEC-3: a name from an index must not be able to escape its folder.
    public static func validateName(_ name: [UInt8]) throws {
        guard !name.isEmpty, name.count <= Format.maxNameLength, !name.contains(0x2f), !name.contains(0),
              name != [0x2e], name != [0x2e, 0x2e] else {
            throw FormatError.invalid("item name")
        }
    }
}
