/// The label and context of each kind of seal (docs/FORMAT.md §2.3 table): what binds sealed
/// bytes to their use, their item and their position. The one place they are built.
public struct SealContext: Sendable {
    public let label: [UInt8]
    public let context: [UInt8]

    public init(label: [UInt8], context: [UInt8]) { self.label = label; self.context = context }

    /// The additional authenticated data of the seal: label || context.
    public var associatedData: [UInt8] { label + context }

    /// An index root in slot `slot` (§5.1): context `u8 slot`.
    public static func indexRoot(slot: UInt64) -> SealContext { SealContext(label: Label.sealIndexRoot, context: [UInt8(slot)]) }

    /// An index page (§5.2): no context.
    public static let indexPage = SealContext(label: Label.sealIndexPage, context: [])

    /// Chunk `index` of item `item` (§7.1): context `u64 item || u64 index`.
    public static func chunk(item: UInt64, index: Int) -> SealContext {
        var writer = ByteWriter(capacity: 16)
        writer.u64(item)
        writer.u64(UInt64(index))
        return SealContext(label: Label.sealChunk, context: writer.bytes)
    }

    /// The pack member of item `item` (§7.2): context `u64 item`.
    public static func member(item: UInt64) -> SealContext {
        var writer = ByteWriter(capacity: 8)
        writer.u64(item)
        return SealContext(label: Label.sealMember, context: writer.bytes)
    }

    /// Format 2 (§13.2): the owner's unlock record at `location`, context `lp8(location)`.
    public static func unlock(location: [UInt8]) -> SealContext {
        SealContext(label: Label.sealUnlock, context: [UInt8(location.count)] + location)
    }

    /// Format 2: a root in slot `slot`, sealed with RK.
    public static func indexRootV2(slot: UInt64) -> SealContext { SealContext(label: Label.sealIndexRootV2, context: [UInt8(slot)]) }

    /// Format 2: a page of level `level`, sealed with its own page key.
    public static func indexPageV2(level: UInt8) -> SealContext { SealContext(label: Label.sealIndexPageV2, context: [level]) }

    /// Format 2: chunk `index`, sealed with its own chunk key (no item ID: §13.4).
    public static func chunkV2(index: Int) -> SealContext {
        var writer = ByteWriter(capacity: 8)
        writer.u64(UInt64(index))
        return SealContext(label: Label.sealChunkV2, context: writer.bytes)
    }

    /// Format 2: a pack member, sealed with its own member key; no context.
    public static let memberV2 = SealContext(label: Label.sealMemberV2, context: [])

    /// Sync (§13.11): piece `index` of the sync base, sealed with its own key.
    public static func syncBase(piece index: Int) -> SealContext {
        var writer = ByteWriter(capacity: 4)
        writer.u32(UInt32(index))
        return SealContext(label: Label.sealSyncBase, context: writer.bytes)
    }

    /// A keyring export (§8.2): no context.
    public static let keyringExport = SealContext(label: Label.sealKeyringExport, context: [])
}
