import VaultCrypto

/// What one unlock of a vault is given and keeps for its whole life, apart from the vault's own
/// state: the pattern's secrets and the arena of item keys (both in locked memory, erased at
/// lock), where randomness and time come from (tests give their own), and whether it may write.
struct VaultSession {
    let patternSecrets: VaultSecrets
    let arena: SecretArena
    let random: any RandomSource
    let clock: any VaultClock
    let readOnly: Bool

    func wipe() {
        arena.wipeAll()
        patternSecrets.wipe()
    }
}

/// What opening a format-2 vault found that its user is told once: `mount` says it, `fsck`
/// counts the first as damage.
struct OpenNotices {
    /// A committed root the slots should hold is missing, damaged or older (design §E).
    var rollbackWarning: String?
    /// The record that opened the vault was its owner's before a pattern change (role 3,
    /// docs/FORMAT.md §13.12): this pattern opens nothing once the change is finished.
    var openedThroughFormerPattern = false
    /// Files of groups the committed root was still releasing (a session cut between its
    /// commit point and their removal): the next writing open removes them (fsck says so).
    var releasedFilesLeft: Set<UInt64> = []
}
