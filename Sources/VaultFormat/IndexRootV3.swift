/// The root of index version 3 (docs/FORMAT.md §15.5): §13.5's body, sealed in an envelope of
/// version 3, with the entry hash key in extension tag 5 and device numbers below 2^44 (the
/// member-list keys of §15.2 reach no further). No release writes it yet (issue 17).
public struct IndexRootV3: Equatable, Sendable {
    /// The inner-block version of its envelopes and of its pages' (§15.1): a release of format 2
    /// stops at it as "made by a newer DotSafe" after the tag verifies.
    public static let envelopeVersion: UInt8 = 3
    /// Extension tag 5: the entry hash key EHK, 32 bytes, required.
    public static let entryHashKeyTag: UInt16 = 5
    /// A device's nextFileNumber above this MUST be rejected.
    public static let fileNumberLimit: UInt64 = IndexKeyV3.packRangeLimit << 32

    /// The body's fields; tag 5 is among its extensions.
    public var root: IndexRootV2

    /// Checks what version 3 adds to §13.5's rules.
    public init(_ root: IndexRootV2) throws {
        let keys = root.extensions.filter { $0.tag == Self.entryHashKeyTag }
        guard keys.count == 1 else { throw FormatError.invalid("index root: no entry hash key (extension 5)") }
        guard keys[0].value.count == Format.keySize else { throw FormatError.invalid("index root: extension 5's length") }
        for device in root.devices where device.nextFileNumber > Self.fileNumberLimit {
            throw FormatError.invalid("index root: next file number \(device.nextFileNumber) above 2^44")
        }
        self.root = root
    }

    /// EHK (§15.3); wiped with the root's other keys by its owner.
    public var entryHashKey: [UInt8] { root.extensions.first { $0.tag == Self.entryHashKeyTag }!.value }

    public func encode() -> [UInt8] { root.encode() }

    public static func decode(_ body: ArraySlice<UInt8>) throws -> IndexRootV3 {
        try IndexRootV3(IndexRootV2.decode(body, formatTags: [entryHashKeyTag]))
    }
}
