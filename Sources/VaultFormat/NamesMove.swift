/// Root extension tag 3 (docs/FORMAT.md §13.5, §13.12): the pattern change of a vault upgraded
/// from format 1 is moving its root slots from the names of `formerRootLocator` to those of
/// `rootLocator`, and device 0's files from the names of its entry's NKd to those of `namesKey`;
/// `slotFiles` are the two files of device 0 that hold, or held, the copies of the root that
/// become the new slots. It holds keys: the owner wipes them (VaultCore).
public struct NamesMove: Equatable, Sendable {
    public static let extensionTag: UInt16 = 3
    public static let size = 3 * Format.keySize + 2 * 8

    public var formerRootLocator: [UInt8]
    public var rootLocator: [UInt8]
    public var namesKey: [UInt8]
    public var slotFiles: [FileRef]

    public init(formerRootLocator: [UInt8], rootLocator: [UInt8], namesKey: [UInt8], slotFiles: [FileRef]) {
        precondition(slotFiles.count == 2, "one file per slot")
        self.formerRootLocator = formerRootLocator; self.rootLocator = rootLocator
        self.namesKey = namesKey; self.slotFiles = slotFiles
    }

    public func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: Self.size)
        writer.raw(formerRootLocator)
        writer.raw(rootLocator)
        writer.raw(namesKey)
        for file in slotFiles { writer.u64(file.raw) }
        return writer.bytes
    }

    public static func decode(_ value: [UInt8]) throws -> NamesMove {
        guard value.count == size else { throw FormatError.invalid("index root: extension 3's length") }
        var reader = ByteReader(value, context: "names move")
        let former = try reader.raw(Format.keySize), locator = try reader.raw(Format.keySize), key = try reader.raw(Format.keySize)
        let files = [FileRef(raw: try reader.u64()), FileRef(raw: try reader.u64())]
        try reader.expectEnd()
        return NamesMove(formerRootLocator: former, rootLocator: locator, namesKey: key, slotFiles: files)
    }

}
