/// The encrypted inner block of an envelope (docs/FORMAT.md §4): a small header, then `length`
/// bytes of body and random padding up to `Format.payloadSize`.
public struct InnerBlock: Sendable {
    public enum Kind: UInt8, Sendable { case indexRoot = 1, indexPage = 2, chunk = 3, unlockRecord = 4, syncBase = 5 }

    /// Builds the plaintext of an inner block. `padding` supplies the random bytes after the body.
    public static func encode(kind: Kind, version: UInt8 = Format.version, body: ArraySlice<UInt8>,
                              padding: (Int) throws -> [UInt8]) rethrows -> [UInt8] {
        precondition(body.count <= Format.payloadSize, "inner block body too large")
        var bytes = header(kind: kind, version: version, length: body.count)
        bytes.reserveCapacity(Format.innerBlockSize)
        bytes.append(contentsOf: body)
        let fill = Format.payloadSize - body.count
        if fill > 0 { bytes.append(contentsOf: try padding(fill)) }
        return bytes
    }

    /// Checks the header of an opened inner block and returns its body. Format 1 and format 2
    /// envelopes differ only in this version byte (§13.2).
    public static func decode(_ plaintext: [UInt8], expecting kind: Kind, version expected: UInt8 = Format.version) throws -> ArraySlice<UInt8> {
        guard plaintext.count == Format.innerBlockSize else { throw FormatError.truncated("inner block") }
        let length = try bodyLength(header: plaintext[..<Format.innerHeaderSize], expecting: kind, version: expected)
        return plaintext[Format.innerHeaderSize..<Format.innerHeaderSize + length]
    }

    /// The header alone (version, kind, reserved, body length): what precedes the body, for a
    /// seal that reads the body from elsewhere (the chunk cache's memory).
    public static func header(kind: Kind, version: UInt8 = Format.version, length: Int) -> [UInt8] {
        precondition(length <= Format.payloadSize, "inner block body too large")
        var writer = ByteWriter(capacity: Format.innerHeaderSize)
        writer.u8(version)
        writer.u8(kind.rawValue)
        writer.u16(0)
        writer.u32(UInt32(length))
        return writer.bytes
    }

    /// Checks a header opened apart from its body (which went into the chunk cache's memory)
    /// and returns the body's length: `decode`'s checks, without the body.
    public static func bodyLength(header: ArraySlice<UInt8>, expecting kind: Kind, version expected: UInt8 = Format.version) throws -> Int {
        guard header.count == Format.innerHeaderSize else { throw FormatError.truncated("inner block") }
        var reader = ByteReader(header, context: "inner block")
        let version = try reader.u8()
        // A caller that reads index 3 asks for version 3 (docs/FORMAT.md §15.1); every other is refused as newer.
        if version > Format.newestVersion && version != expected { throw FormatError.newerVersion(found: version) }
        guard version == expected else { throw FormatError.invalid("inner block version \(version)") }
        let found = try reader.u8()
        guard found == kind.rawValue else { throw FormatError.invalid("inner block kind \(found), expected \(kind.rawValue)") }
        guard try reader.u16() == 0 else { throw FormatError.invalid("inner block reserved bytes") }
        let length = Int(try reader.u32())
        guard length <= Format.payloadSize else { throw FormatError.invalid("inner block length \(length)") }
        return length
    }
}
