/// Root extension tag 1025 (docs/FORMAT.md §13.5, §13.11 "Downloads are staged"): files of other
/// devices that a sync downloaded into free files of this device, because the commit before it
/// still referenced their names under older bytes. For this root, each target's bytes are its
/// staged file's while the staged file's digest matches; a writing open puts them in place.
public struct StagedDownloads: Equatable, Sendable {
    public static let extensionTag: UInt16 = 1025
    public static let entrySize = 8 + 8 + digestSize
    /// `SHA-256(staged file)[0..16]`.
    public static let digestSize = 16

    public struct Entry: Equatable, Sendable {
        /// Another device's file that the root references.
        public var target: FileRef
        /// A data file of the writing device that holds the target's bytes.
        public var staged: FileRef
        public var digest: [UInt8]

        public init(target: FileRef, staged: FileRef, digest: [UInt8]) {
            self.target = target
            self.staged = staged
            self.digest = digest
        }
    }

    public var entries: [Entry]

    public init(entries: [Entry]) { self.entries = entries }

    public func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: entries.count * Self.entrySize)
        for entry in entries {
            writer.u64(entry.target.raw)
            writer.u64(entry.staged.raw)
            writer.raw(entry.digest)
        }
        return writer.bytes
    }

    /// Nil for a value of another length, or no entry: an optional tag that breaks its rules is
    /// ignored (§13.5: tags from 1024 up may be skipped).
    public static func decode(_ value: [UInt8]) -> StagedDownloads? {
        guard !value.isEmpty, value.count % entrySize == 0 else { return nil }
        var reader = ByteReader(value, context: "staged downloads")
        var entries: [Entry] = []
        while !reader.isAtEnd {
            guard let target = try? reader.u64(), let staged = try? reader.u64(), let digest = try? reader.raw(digestSize) else { return nil }
            entries.append(Entry(target: FileRef(raw: target), staged: FileRef(raw: staged), digest: digest))
        }
        return StagedDownloads(entries: entries)
    }
}
