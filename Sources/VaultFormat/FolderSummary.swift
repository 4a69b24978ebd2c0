/// A folder's summary record of index version 3 (docs/FORMAT.md §15.3): how many entries the
/// folder has and how many of them are folders, so that `stat` and `rmdir` read no entry.
public struct FolderSummary: Equatable, Sendable {
    public static let size = 16

    public var entryCount: UInt64
    public var subfolderCount: UInt64

    public init(entryCount: UInt64, subfolderCount: UInt64) { self.entryCount = entryCount; self.subfolderCount = subfolderCount }

    public func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: Self.size)
        writer.u64(entryCount)
        writer.u64(subfolderCount)
        return writer.bytes
    }

    public static func decode(_ bytes: [UInt8]) throws -> FolderSummary {
        var reader = ByteReader(bytes, context: "folder summary")
        let summary = FolderSummary(entryCount: try reader.u64(), subfolderCount: try reader.u64())
        try reader.expectEnd()
        // The subfolders are among the entries.
        guard summary.subfolderCount <= summary.entryCount else { throw FormatError.invalid("folder summary: more subfolders than entries") }
        return summary
    }
}
