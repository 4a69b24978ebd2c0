import VaultCrypto
import VaultFormat

/// Where a sealed file of the index lies (a page, a chunk) and what opens it. Format 1 records
/// the seal's nonce and opens it with the page or item key; format 2 records the seal's own
/// random key, kept here as a slot of the vault's arena (docs/FORMAT.md §13.1).
struct StoredRef: Hashable, Sendable {
    /// A file number of format 1, or a FileRef's raw value of format 2 (the same for device 0).
    var fileNumber: UInt64
    /// Format 1: the recorded seal nonce. Empty in format 2, whose nonce is read from the file.
    var nonce: [UInt8]
    /// Format 2: the seal's key.
    var key: SecretArena.Slot?

    init(fileNumber: UInt64, nonce: [UInt8]) {
        precondition(nonce.count == Format.sealNonceSize, "seal nonces are 24 bytes")
        self.fileNumber = fileNumber
        self.nonce = nonce
    }

    init(fileNumber: UInt64, key: SecretArena.Slot) {
        self.fileNumber = fileNumber
        nonce = []
        self.key = key
    }

    init(_ sealed: SealedRef) { self.init(fileNumber: sealed.fileNumber, nonce: sealed.nonce) }

    /// The format-1 reference, as a format-1 index records it.
    var sealed: SealedRef { SealedRef(fileNumber: fileNumber, nonce: nonce) }
}
