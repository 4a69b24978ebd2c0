import VaultCrypto
import VaultFormat
import VaultStore

/// Sharing, as the layers above see it (docs/FORMAT.md §14.7): a vault's contact code, granting
/// it to another vault's code, and opening the vault another code shared with this one.
extension Vault {
    /// Opens the vault that the holder of `sharedBy` shared with the vault `secrets` open.
    /// Throws `SharingError.noGrant` when there is no such grant (as for anyone nobody shared
    /// with), `GrantSeal.Failure` when a grant is there but does not open; writes nothing then.
    public static func open(storage: any StorageFolder, secrets: VaultSecrets, sharedBy sender: ContactCode, options: Options = Options(),
                            random: any RandomSource = SystemRandom(), clock: any VaultClock = SystemClock()) throws -> Vault {
        do {
            var state = try VaultState.openShared(storage: storage, secrets: secrets, sender: sender.publicKey, random: random, clock: clock,
                                                  options: .init(readOnly: options.readOnly, cacheBytes: options.cacheBytes, owner: options.owner,
                                                                 indexThree: options.indexThree))
            state.readsIndexThree = options.indexThree
            // The state's storage: a read-only open may read staged downloads where they lie.
            let reading = state.storage
            return Vault(state, storage: reading, writeBehind: options.writeBehind)
        } catch {
            throw Self.sharingFailure(error)
        }
    }

    /// Whether this vault was opened through a grant (`open(storage:secrets:sharedBy:)`).
    public var isShared: Bool { state.withLock { $0.sharing.received != nil } }

    /// The open vault's contact code; for a vault shared with you, your own vault's
    /// (`sharedWithYou`). A new vault is committed first, so that the key behind the code is
    /// in the storage before anyone holds the code.
    public func contactCode() throws -> (code: ContactCode, sharedWithYou: Bool) {
        try whenIdle { try $0.contactCode() }
    }

    /// Writes a grant of this vault to the holder of `recipient` and commits.
    public func share(with recipient: ContactCode) throws {
        try whenIdle { try $0.share(with: recipient.publicKey) }
    }

    /// Withdraws the grant to the holder of `recipient` (§14.8): the vault gets new keys, its
    /// other grants are sealed again to them, and what is written afterwards is not readable
    /// with the withdrawn grant.
    public func unshare(with recipient: ContactCode) throws {
        try whenIdle { try $0.unshare(with: recipient.publicKey) }
    }

    /// Runs `body` under the lock once no write-behind is in flight (it may commit), with the
    /// sharing errors passed through as they are.
    private func whenIdle<R>(_ body: (inout VaultState) throws -> R) throws -> R {
        while true {
            try commit()  // waits for the write-behinds
            var result: R?
            try state.withLock { state in
                guard !state.isLocked else { throw VaultError.locked }
                guard !state.writingBehind else { return }
                // A withdrawal moves the names and seals the root again: the pins first.
                do { try state.readWholeVault(); result = try body(&state) } catch { throw Self.sharingFailure(error) }
            }
            if let result { return result }
        }
    }

    private static func sharingFailure(_ error: any Error) -> any Error {
        switch error {
        case is SharingError, is GrantSeal.Failure, is ContactCode.Failure: error
        default: VaultError.wrap(error)
        }
    }
}
