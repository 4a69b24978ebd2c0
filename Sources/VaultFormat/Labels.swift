/// Every HKDF info string and every seal label of docs/FORMAT.md §2, as bytes, in one place.
/// One purpose per key (R-SEC-1): never reuse a label for something new; add one.
public enum Label {
    public static let locator = bytes("DotSafe v1 locator")
    public static let indexKey = bytes("DotSafe v1 index key")
    public static let namesKey = bytes("DotSafe v1 file names")
    public static let pageKey = bytes("DotSafe v1 index page key")
    public static let subkey = bytes("DotSafe v1 subkey")
    public static let indexName = bytes("DotSafe v1 index name")
    public static let fileName = bytes("DotSafe v1 file name")
    /// Names the abstract socket that keeps a vault from being mounted twice (never on disk).
    public static let mountGuard = bytes("DotSafe v1 mount guard")
    /// Location of the storage on this device; a remote copy uses another (R-SYN).
    public static let localLocation = bytes("local")
    /// Location of a remote copy of the storage (§13.11): its unlock record and slots.
    public static let remoteLocation = bytes("remote")

    public static let sealIndexRoot = bytes("DotSafe v1 index root")
    public static let sealIndexPage = bytes("DotSafe v1 index page")
    public static let sealChunk = bytes("DotSafe v1 chunk")
    public static let sealMember = bytes("DotSafe v1 member")
    public static let sealKeyringExport = bytes("DotSafe v1 keyring export")

    // Format 2 (§13.1). The subkey, index-name and file-name derivations keep their format-1
    // labels: same purpose, and an upgraded vault's files keep their names.
    public static let unlockName = bytes("DotSafe v2 unlock name")
    public static let rootKey = bytes("DotSafe v2 root key")
    public static let sealUnlock = bytes("DotSafe v2 unlock")
    public static let sealIndexRootV2 = bytes("DotSafe v2 index root")
    public static let sealIndexPageV2 = bytes("DotSafe v2 index page")
    public static let sealChunkV2 = bytes("DotSafe v2 chunk")
    public static let sealMemberV2 = bytes("DotSafe v2 member")
    /// The names key NKd of the device that creates a vault, from its vault key: a crash before
    /// the first root leaves files that the next open must still recognise (§13.4). Readers
    /// take NKd from the root and never derive it.
    public static let firstDeviceNames = bytes("DotSafe v2 first device names")

    // Grants (§14): HPKE's info, the grant's name and mask, and the exporter context of its
    // key commitment.
    public static let grantInfo = bytes("DotSafe v2 grant")
    public static let grantName = bytes("DotSafe v2 grant name")
    public static let grantMask = bytes("DotSafe v2 grant mask")
    public static let grantCommitment = bytes("DotSafe v2 grant commitment")
    /// The second half of a grantee's device ID (§14.9): binds the device to the pair S, R.
    public static let granteeDevice = bytes("DotSafe v2 grantee device")

    /// Sync (§13.11): the pieces of the sync base.
    public static let sealSyncBase = bytes("DotSafe v2 sync base")

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
}
