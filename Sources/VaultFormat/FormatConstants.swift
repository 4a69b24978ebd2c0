/// Sizes fixed by docs/FORMAT.md. Everything that depends on them is derived here, so the
/// arithmetic of the format lives in one place (gocryptfs keeps its offsets the same way).
public enum Format {
    /// The format version written into every envelope and record.
    public static let version: UInt8 = 1
    /// Format 2 (§13): keys per seal, unlock records, devices. Its envelopes and records carry 2.
    public static let versionTwo: UInt8 = 2
    /// The newest version this DotSafe reads; anything above is "made by a newer DotSafe".
    public static let newestVersion: UInt8 = versionTwo
    /// Plaintext payload of one storage file: one chunk of an item.
    public static let payloadSize = 262_144
    /// The seal nonce: 12 bytes pick the one-time subkey, 12 are the GCM nonce.
    public static let sealNonceSize = 24
    public static let tagSize = 16
    /// version, kind, reserved, length.
    public static let innerHeaderSize = 8
    public static let innerBlockSize = innerHeaderSize + payloadSize
    /// Every file in a storage has exactly this size.
    public static let fileSize = sealNonceSize + innerBlockSize + tagSize
    /// Files a vault owns come in groups of this many, so the file count moves in such steps.
    public static let groupSize = 16
    public static let minimumStorageFiles = 64
    /// Raw bytes behind a 26-character base32 file name.
    public static let nameBytes = 16
    public static let nameLength = 26
    public static let keySize = 32
    /// Chunk-map entries per segment record.
    public static let chunksPerSegment = 1024
    /// Item 1 is the vault's root folder.
    public static let rootItemID: UInt64 = 1
    /// Index slots are file numbers 0 and 1; covers follow from 2.
    public static let indexSlotCount: UInt64 = 2
    public static let coverRange: ClosedRange<Int> = 2...6
    public static let maxNameLength = 255
    public static let maxSymlinkLength = 4095
    public static let minimumKDFRounds = 600_000

    /// Offset of the inner block (the ciphertext) in an envelope file.
    public static let ciphertextOffset = sealNonceSize
    public static let tagOffset = sealNonceSize + innerBlockSize
}
