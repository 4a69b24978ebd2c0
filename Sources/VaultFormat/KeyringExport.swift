/// The passphrase-protected export of a keyring (docs/FORMAT.md §8.2). The sealing itself is
/// done by the caller; this is the byte layout around it.
public struct KeyringExport: Sendable {
    public static let magic = Array("DSKREXPT".utf8)
    public static let saltSize = 32

    public var rounds: UInt32
    public var salt: [UInt8]
    public var nonce: [UInt8]
    public var sealed: [UInt8]

    public init(rounds: UInt32, salt: [UInt8], nonce: [UInt8], sealed: [UInt8]) {
        self.rounds = rounds; self.salt = salt; self.nonce = nonce; self.sealed = sealed
    }

    public func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: 80 + sealed.count)
        writer.raw(Self.magic)
        writer.u8(Format.version)
        writer.u32(rounds)
        writer.raw(salt)
        writer.raw(nonce)
        writer.raw(sealed)
        return writer.bytes
    }

    public static func decode(_ bytes: [UInt8]) throws -> KeyringExport {
        var reader = ByteReader(bytes, context: "keyring export")
        guard try reader.raw(magic.count) == magic else { throw FormatError.invalid("not a DotSafe keyring export") }
        let version = try reader.u8()
        if version > Format.version { throw FormatError.newerVersion(found: version) }
        guard version == Format.version else { throw FormatError.invalid("keyring export version \(version)") }
        let export = KeyringExport(rounds: try reader.u32(), salt: try reader.raw(saltSize),
                                   nonce: try reader.raw(Format.sealNonceSize), sealed: try reader.raw(reader.remaining))
        guard export.sealed.count > Format.tagSize else { throw FormatError.truncated("keyring export") }
        return export
    }
}
