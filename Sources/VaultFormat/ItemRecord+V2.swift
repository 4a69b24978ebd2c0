/// The content of a regular file in record version 2 (docs/FORMAT.md §13.8): flags, the
/// format-1 item key only while format-1 seals of the item are in use, then the layout.
extension ItemRecord {
    /// Layout 3: a member sealed in format 1, opened with the item's ITK.
    static let formatOnePackedLayout: UInt8 = 3

    func encodeFileContentV2(into writer: inout ByteWriter) {
        writer.u8(itemKey.isEmpty ? 0 : 1)
        writer.raw(itemKey)
        switch layout {
        case .empty: writer.u8(0)
        case .chunked: writer.u8(2)
        case .packed(let member):
            writer.u8(member.key.isEmpty ? Self.formatOnePackedLayout : 1)
            writer.u64(member.fileNumber)
            writer.u32(member.offset)
            writer.u32(member.sealedLength)
            writer.raw(member.key.isEmpty ? member.nonce : member.key)
        }
    }

    mutating func decodeFileContentV2(from reader: inout ByteReader) throws {
        let flags = try reader.u8()
        guard flags & ~1 == 0 else { throw FormatError.invalid("item record flags \(flags)") }
        if flags & 1 != 0 { itemKey = try reader.raw(Format.keySize) }
        let layout = try reader.u8()
        switch layout {
        case 0: self.layout = .empty
        case 2: self.layout = .chunked
        case 1, Self.formatOnePackedLayout:
            let file = FileRef(raw: try reader.u64()), offset = try reader.u32(), sealedLength = try reader.u32()
            let member: Member
            if layout == 1 {
                member = Member(file: file, offset: offset, sealedLength: sealedLength, key: try reader.raw(Format.keySize))
            } else {
                guard !itemKey.isEmpty else { throw FormatError.invalid("packed member of format 1 without an item key") }
                member = Member(fileNumber: file.raw, offset: offset, sealedLength: sealedLength, nonce: try reader.raw(Format.sealNonceSize))
            }
            try checkMember(member)
            self.layout = .packed(member)
        default: throw FormatError.invalid("file layout \(layout)")
        }
    }

    /// A member holds 1 … size bytes of a file smaller than P and lies inside its pack.
    func checkMember(_ member: Member) throws {
        let content = member.contentLength
        guard content >= 1, UInt64(content) <= size, size < UInt64(Format.payloadSize),
              Int(member.offset) + Int(member.sealedLength) <= Format.fileSize else {
            throw FormatError.invalid("packed member")
        }
    }
}
