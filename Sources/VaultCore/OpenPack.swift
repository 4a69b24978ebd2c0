import VaultFormat

/// The pack that takes new members. A pack made in this session is a whole image in memory,
/// created at the commit; a pack that exists on disk gets its new members written into its free
/// tail, which no committed record references (docs/FORMAT.md §7.2).
struct OpenPack {
    let fileNumber: UInt64
    /// The whole file for a pack not yet on disk: random bytes with members written in.
    private(set) var image: [UInt8]?
    /// New members of a pack on disk, written at the commit.
    private(set) var pending: [(offset: Int, bytes: [UInt8])] = []
    private(set) var end: Int

    init(newFile number: UInt64, randomImage: [UInt8]) {
        fileNumber = number
        image = randomImage
        end = 0
    }

    init(existing number: UInt64, reservedEnd: Int) {
        fileNumber = number
        end = reservedEnd
    }

    var isNew: Bool { image != nil }
    var hasPendingWrites: Bool { image != nil || !pending.isEmpty }
    func fits(_ count: Int) -> Bool { end + count <= Format.fileSize }

    /// Places sealed member bytes; returns their offset.
    mutating func append(_ bytes: [UInt8]) -> Int {
        precondition(fits(bytes.count), "member does not fit the open pack")
        let offset = end
        if image != nil {
            image!.replaceSubrange(offset..<offset + bytes.count, with: bytes)
        } else {
            pending.append((offset, bytes))
        }
        end += bytes.count
        return offset
    }

    /// Bytes of a member that is not on disk yet, for a read before the commit.
    func unwrittenBytes(offset: Int, count: Int) -> [UInt8]? {
        if let image { return Array(image[offset..<offset + count]) }
        return pending.first { $0.offset == offset && $0.bytes.count == count }?.bytes
    }

    /// After the pack was written: it now exists on disk with nothing pending.
    mutating func didWrite() {
        image = nil
        pending = []
    }

    mutating func wipe() {
        image = nil
        pending = []
    }
}
