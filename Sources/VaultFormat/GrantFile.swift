/// The layout of a grant (docs/FORMAT.md §14.3): an F-byte storage file that carries a role-2
/// unlock record, HPKE-sealed from the sharing vault's identity to the recipient's, with a masked
/// `enc` and a key commitment in front and random bytes behind, so that it reads as a cover to
/// anyone else. This type only places and checks bytes; the sealing is `VaultCore.GrantSeal`'s.
public enum GrantFile {
    public static let saltSize = 16
    public static let encOffset = 16
    public static let encSize = 32
    public static let commitmentOffset = 48
    public static let commitmentSize = 32
    /// Bytes 0 ..< 80 (salt, masked enc, commitment) are the AEAD's associated data.
    public static let headerSize = 80
    public static let blockSize = 1024
    public static let blockHeaderSize = 8
    public static let maxBodySize = blockSize - blockHeaderSize
    public static let sealedSize = blockSize + Format.tagSize
    public static let paddingOffset = headerSize + sealedSize
    public static let paddingSize = Format.fileSize - paddingOffset
    /// The kind of a grant block (after §4's 1, 2, 3 and §13's 4).
    public static let kind: UInt8 = 5

    /// The 1,024-byte block that is sealed: version 2, kind 5, reserved, length, body, zeros.
    public static func block(body: [UInt8]) -> [UInt8] {
        precondition(body.count <= maxBodySize, "a grant body holds at most \(maxBodySize) bytes")
        var writer = ByteWriter(capacity: blockSize)
        writer.u8(Format.versionTwo)
        writer.u8(kind)
        writer.u16(0)
        writer.u32(UInt32(body.count))
        writer.raw(body)
        return writer.bytes + [UInt8](repeating: 0, count: maxBodySize - body.count)
    }

    /// The body of an opened block, after every check of §14.4.
    public static func body(ofBlock block: [UInt8]) throws -> ArraySlice<UInt8> {
        guard block.count == blockSize else { throw FormatError.truncated("grant block") }
        let version = block[0]
        if version > Format.versionTwo { throw FormatError.newerVersion(found: version) }
        guard version == Format.versionTwo else { throw FormatError.invalid("grant block version \(version)") }
        guard block[1] == kind else { throw FormatError.invalid("grant block kind \(block[1])") }
        guard block[2] == 0, block[3] == 0 else { throw FormatError.invalid("grant block reserved bytes") }
        let length = Int(block[4]) | Int(block[5]) << 8 | Int(block[6]) << 16 | Int(block[7]) << 24
        guard length <= maxBodySize else { throw FormatError.invalid("grant block length \(length)") }
        let end = blockHeaderSize + length
        guard block[end...].allSatisfy({ $0 == 0 }) else { throw FormatError.invalid("grant block padding") }
        return block[blockHeaderSize ..< end]
    }

    /// The whole file from its parts.
    public static func assemble(salt: [UInt8], maskedEnc: [UInt8], commitment: [UInt8], sealed: [UInt8], padding: [UInt8]) -> [UInt8] {
        precondition(salt.count == saltSize && maskedEnc.count == encSize && commitment.count == commitmentSize
                     && sealed.count == sealedSize && padding.count == paddingSize, "grant parts of the wrong size")
        return salt + maskedEnc + commitment + sealed + padding
    }

    /// HKDF info of the grant's name: the label, pkS, pkR, lp8(location).
    public static func nameInfo(sender: [UInt8], recipient: [UInt8], location: [UInt8]) -> [UInt8] {
        Label.grantName + sender + recipient + [UInt8(location.count)] + location
    }

    /// HKDF info of a grantee device ID's tag: the label, pkS, pkR, the ID's first half.
    public static func deviceInfo(sender: [UInt8], recipient: [UInt8], salt: [UInt8]) -> [UInt8] {
        Label.granteeDevice + sender + recipient + salt
    }

    /// HKDF info of the mask over enc: the label, pkS, pkR, the file's salt.
    public static func maskInfo(sender: [UInt8], recipient: [UInt8], salt: [UInt8]) -> [UInt8] {
        Label.grantMask + sender + recipient + salt
    }
}
