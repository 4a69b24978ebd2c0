/// Where a sealed structure lies: the file it is in and the seal nonce its reader must use.
public struct SealedRef: Hashable, Sendable {
    public var fileNumber: UInt64
    public var nonce: [UInt8]

    public init(fileNumber: UInt64, nonce: [UInt8]) {
        precondition(nonce.count == Format.sealNonceSize, "seal nonces are 24 bytes")
        self.fileNumber = fileNumber
        self.nonce = nonce
    }
}

/// A run of owned groups: group g is file numbers 16g … 16g+15.
public struct GroupRange: Hashable, Sendable {
    public var first: UInt64
    public var count: UInt64
    public init(first: UInt64, count: UInt64) { self.first = first; self.count = count }
    public var end: UInt64 { first + count }
    /// The file numbers these groups hold: group g holds 16g ..< 16g + 16.
    public var fileNumbers: Range<UInt64> { first * UInt64(Format.groupSize)..<end * UInt64(Format.groupSize) }

    /// §5.1's rules for owned groups (format 2's device entries share them): group 0 owned,
    /// sorted, disjoint, not adjacent, all below `nextFileNumber`.
    public static func validate(_ groups: [GroupRange], below nextFileNumber: UInt64, context: String) throws {
        guard let first = groups.first, first.first == 0 else { throw FormatError.invalid("\(context): group 0 not owned") }
        var end: UInt64 = 0
        for (i, range) in groups.enumerated() {
            // first ≤ max/16 before the subtraction: a hostile first would overflow it (fuzz finding).
            guard range.count > 0, range.first <= UInt64.max / 16, range.count <= UInt64.max / 16 - range.first,
                  i == 0 || range.first > end else { throw FormatError.invalid("\(context) owned groups") }
            end = range.end
        }
        guard end <= nextFileNumber / UInt64(Format.groupSize) else { throw FormatError.invalid("\(context): groups beyond nextFileNumber") }
    }
}

extension [GroupRange] {
    /// Every file number of device `index`'s owned groups but device 0's index slots (numbers
    /// 0 and 1 of its group 0, FORMAT.md §3), which hold roots, not group files.
    public func fileNumbers(ofDevice index: Int) -> some Sequence<UInt64> {
        lazy.flatMap(\.fileNumbers).filter { index != 0 || $0 >= Format.indexSlotCount }
    }

    public func holds(_ number: UInt64) -> Bool { contains { $0.fileNumbers.contains(number) } }
}

/// The index root of a vault (docs/FORMAT.md §5.1). It holds the vault key; callers wipe the
/// encoded bytes after sealing them.
public struct IndexRoot: Sendable {
    public var generation: UInt64
    public var vaultKey: [UInt8]
    public var nextFileNumber: UInt64
    public var nextItemID: UInt64
    public var coverCount: UInt8
    public var ownedGroups: [GroupRange]
    public var releasing: [UInt64]
    public var pages: [SealedRef]

    public init(generation: UInt64, vaultKey: [UInt8], nextFileNumber: UInt64, nextItemID: UInt64,
                coverCount: UInt8, ownedGroups: [GroupRange], releasing: [UInt64], pages: [SealedRef]) {
        self.generation = generation
        self.vaultKey = vaultKey
        self.nextFileNumber = nextFileNumber
        self.nextItemID = nextItemID
        self.coverCount = coverCount
        self.ownedGroups = ownedGroups
        self.releasing = releasing
        self.pages = pages
    }

    /// Bytes of root body per page reference: how many pages a root can list.
    public static let pageRefSize = 8 + Format.sealNonceSize

    public func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: 128 + pages.count * Self.pageRefSize)
        writer.u64(generation)
        writer.raw(vaultKey)
        writer.u64(nextFileNumber)
        writer.u64(nextItemID)
        writer.u8(coverCount)
        writer.u32(UInt32(ownedGroups.count))
        for range in ownedGroups { writer.u64(range.first); writer.u64(range.count) }
        writer.u32(UInt32(releasing.count))
        for number in releasing { writer.u64(number) }
        writer.u32(UInt32(pages.count))
        for page in pages { writer.u64(page.fileNumber); writer.raw(page.nonce) }
        return writer.bytes
    }

    public static func decode(_ body: ArraySlice<UInt8>) throws -> IndexRoot {
        var reader = ByteReader(body, context: "index root")
        let generation = try reader.u64()
        let vaultKey = try reader.raw(Format.keySize)
        let nextFileNumber = try reader.u64()
        let nextItemID = try reader.u64()
        let coverCount = try reader.u8()
        let groupCount = Int(try reader.u32())
        guard groupCount <= reader.remaining / 16 else { throw FormatError.truncated("index root groups") }
        var groups: [GroupRange] = []
        for _ in 0..<groupCount { groups.append(GroupRange(first: try reader.u64(), count: try reader.u64())) }
        let releasingCount = Int(try reader.u32())
        guard releasingCount <= reader.remaining / 8 else { throw FormatError.truncated("index root releasing") }
        var releasing: [UInt64] = []
        for _ in 0..<releasingCount { releasing.append(try reader.u64()) }
        let pageCount = Int(try reader.u32())
        guard pageCount <= reader.remaining / pageRefSize else { throw FormatError.truncated("index root pages") }
        var pages: [SealedRef] = []
        for _ in 0..<pageCount { pages.append(SealedRef(fileNumber: try reader.u64(), nonce: try reader.raw(Format.sealNonceSize))) }
        try reader.expectEnd()
        let root = IndexRoot(generation: generation, vaultKey: vaultKey, nextFileNumber: nextFileNumber,
                             nextItemID: nextItemID, coverCount: coverCount, ownedGroups: groups,
                             releasing: releasing, pages: pages)
        try root.validate()
        return root
    }

    /// The MUST-reject rules of §5.1 that need nothing but the root itself.
    public func validate() throws {
        guard generation >= 1 else { throw FormatError.invalid("index root generation 0") }
        guard nextFileNumber % UInt64(Format.groupSize) == 0 else { throw FormatError.invalid("index root nextFileNumber") }
        guard nextItemID > Format.rootItemID else { throw FormatError.invalid("index root nextItemID") }
        guard Format.coverRange.contains(Int(coverCount)) else { throw FormatError.invalid("index root cover count \(coverCount)") }
        try GroupRange.validate(ownedGroups, below: nextFileNumber, context: "index root")
        let reserved = Format.indexSlotCount + UInt64(coverCount)
        var seen = Set<UInt64>()
        for page in pages {
            guard page.fileNumber >= reserved, owns(page.fileNumber), seen.insert(page.fileNumber).inserted else {
                throw FormatError.invalid("index root: page in file \(page.fileNumber)")
            }
        }
        for number in releasing where owns(number) || number < reserved {
            throw FormatError.invalid("index root: releasing owned file \(number)")
        }
    }

    /// True when the vault owns file `number`.
    public func owns(_ number: UInt64) -> Bool {
        let group = number / UInt64(Format.groupSize)
        return ownedGroups.contains { $0.first <= group && group < $0.end }
    }
}
