/// An unlock record (docs/FORMAT.md §13.3): carries the vault key VK and the root locator RL to
/// one holder. The owner's is sealed with the pattern's index key IK; a grant (role 2, §14) is
/// sealed to another vault's identity and never holds an identity key. An ended grant (role 3,
/// §14.8) is what a revoked recipient finds in its place: the record of its file and nothing else.
public struct UnlockRecord: Equatable, Sendable {
    public enum Role: UInt8, Sendable { case owner = 1, grant = 2, ended = 3 }

    public enum Tag {
        public static let vaultKey: UInt16 = 1
        public static let rootLocator: UInt16 = 2
        public static let ownFile: UInt16 = 3
        public static let identityKey: UInt16 = 16
        /// The owner's record only (§14.8), optional tags: a rotation under way (VK' || RL'),
        /// the public keys of the codes the vault was shared with, and the RL whose slots go.
        public static let rotation: UInt16 = 1024
        public static let recipients: UInt16 = 1025
        public static let retiring: UInt16 = 1026
        /// The owner's record only (§14.8): VK || RL from before the withdrawals since the
        /// vault's last sync, which the remote still holds until the next sync moves it.
        public static let rotatedFrom: UInt16 = 1027
    }

    public var role: Role
    /// VK and RL (wiped by the owner after use).
    public var vaultKey: [UInt8]
    public var rootLocator: [UInt8]
    /// The vault's file that holds this record.
    public var ownFile: FileRef
    /// The vault's X25519 identity private key (owner only; empty when not made yet).
    public var identityKey: [UInt8]
    /// Tags from 1024 up, kept as they are.
    public var optional: [IndexRootV2.Extension]

    public init(role: Role = .owner, vaultKey: [UInt8], rootLocator: [UInt8], ownFile: FileRef, identityKey: [UInt8] = [],
                optional: [IndexRootV2.Extension] = []) {
        self.role = role; self.vaultKey = vaultKey; self.rootLocator = rootLocator; self.ownFile = ownFile
        self.identityKey = identityKey; self.optional = optional
    }

    public func encode() -> [UInt8] {
        var entries: [IndexRootV2.Extension] = role == .ended ? []
            : [.init(tag: Tag.vaultKey, value: vaultKey), .init(tag: Tag.rootLocator, value: rootLocator)]
        var file = ByteWriter(capacity: 8)
        file.u64(ownFile.raw)
        entries.append(.init(tag: Tag.ownFile, value: file.bytes))
        if !identityKey.isEmpty { entries.append(.init(tag: Tag.identityKey, value: identityKey)) }
        entries += optional
        var writer = ByteWriter(capacity: 160)
        writer.u8(role.rawValue)
        writer.u16(UInt16(entries.count))
        for entry in entries { writer.u16(entry.tag); writer.lp32(entry.value) }
        return writer.bytes
    }

    /// Decodes a record of the role the caller expects: an owner record where a grant is found
    /// (or the reverse) is refused, so a grant can never stand in for the pattern's record.
    /// Where a grant is expected, an ended grant (role 3) is one too: it holds tag 3 only.
    public static func decode(_ body: ArraySlice<UInt8>, role expected: Role = .owner) throws -> UnlockRecord {
        var reader = ByteReader(body, context: "unlock record")
        let rawRole = try reader.u8()
        guard rawRole == expected.rawValue || (expected == .grant && rawRole == Role.ended.rawValue) else {
            throw FormatError.invalid("unlock record role \(rawRole)")
        }
        let role = Role(rawValue: rawRole)!
        let count = Int(try reader.u16())
        var values: [UInt16: [UInt8]] = [:], optional: [IndexRootV2.Extension] = []
        var last: UInt16?
        for _ in 0..<count {
            let tag = try reader.u16()
            if let last, tag <= last { throw FormatError.invalid("unlock record: tags out of order") }
            last = tag
            let value = try reader.lp32()
            switch tag {
            case Tag.vaultKey, Tag.rootLocator, Tag.identityKey:
                guard value.count == Format.keySize else { throw FormatError.invalid("unlock record: tag \(tag) length") }
                values[tag] = value
            case Tag.ownFile:
                guard value.count == 8 else { throw FormatError.invalid("unlock record: tag \(tag) length") }
                values[tag] = value
            case IndexRootV2.firstOptionalTag...: optional.append(.init(tag: tag, value: value))
            default: throw FormatError.invalid("unlock record: tag \(tag) is unknown (made by a newer DotSafe?)")
            }
        }
        try reader.expectEnd()
        // A grant never carries the sharer's identity (R-SHR-1).
        if expected == .grant, values[Tag.identityKey] != nil { throw FormatError.invalid("unlock record: a grant holds an identity key") }
        if role == .ended {
            guard let file = values[Tag.ownFile], values.count == 1, optional.isEmpty else {
                throw FormatError.invalid("unlock record: an ended grant holds its file only")
            }
            var fileReader = ByteReader(file, context: "unlock record")
            return UnlockRecord(role: .ended, vaultKey: [], rootLocator: [], ownFile: FileRef(raw: try fileReader.u64()))
        }
        guard let vaultKey = values[Tag.vaultKey], let rootLocator = values[Tag.rootLocator], let file = values[Tag.ownFile] else {
            throw FormatError.invalid("unlock record: a required tag is missing")
        }
        var fileReader = ByteReader(file, context: "unlock record")
        return UnlockRecord(role: role, vaultKey: vaultKey, rootLocator: rootLocator, ownFile: FileRef(raw: try fileReader.u64()),
                            identityKey: values[Tag.identityKey] ?? [], optional: optional)
    }
}
