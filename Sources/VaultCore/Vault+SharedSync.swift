import VaultCrypto
import VaultFormat
import VaultStore

extension Vault {
    /// The vault that the holder of `sharedBy` shared with the vault `secrets` open, for a sync
    /// (docs/FORMAT.md §14.9): the one this storage holds, or a new one that the sync joins
    /// through the grant it finds on the remote. Without an identity (no vault of the pattern
    /// here), no grant can exist: `SharingError.noGrantOnRemote`. Writes nothing.
    public static func openForSync(storage: any StorageFolder, secrets: VaultSecrets, sharedBy sender: ContactCode,
                                   options: Options = Options(), random: any RandomSource = SystemRandom(),
                                   clock: any VaultClock = SystemClock()) throws -> Vault {
        do {
            var state = try VaultState.openSharedForSync(storage: storage, secrets: secrets, sender: sender.publicKey, random: random,
                                                         clock: clock, options: .init(cacheBytes: options.cacheBytes, owner: options.owner,
                                                                                      indexThree: options.indexThree))
            state.readsIndexThree = options.indexThree
            // The state's storage: a read-only open may read staged downloads where they lie.
            let reading = state.storage
            return Vault(state, storage: reading, writeBehind: options.writeBehind)
        } catch {
            switch error {
            case is SharingError, is GrantSeal.Failure: throw error
            default: throw VaultError.wrap(error)
            }
        }
    }
}
