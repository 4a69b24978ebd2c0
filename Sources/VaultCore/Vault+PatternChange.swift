import VaultFormat
import VaultStore

/// Changing a vault's pattern (docs/FORMAT.md §13.12): `dotsafe repattern`.
extension Vault {
    /// What a pattern's names hold in a storage (nothing is opened or derived beyond names).
    public enum PatternUse: Equatable, Sendable {
        /// Nothing: the pattern opens a new, empty vault.
        case none
        /// An index slot of a format-1 vault.
        case formatOne
        /// An owner unlock record of a format-2 vault.
        case formatTwo
    }

    /// What `secrets`' names hold in `storage`: a cheap look before a vault is opened.
    public static func patternUse(_ secrets: VaultSecrets, in storage: any StorageFolder) throws -> PatternUse {
        do { return try FormatTwoVault.use(of: secrets, in: storage) } catch { throw VaultError.wrap(error) }
    }

    /// The pattern that opened this vault no longer owns it: a pattern change that was
    /// interrupted listed its record as the former owner's, and this open finished the change.
    public var openedThroughFormerPattern: Bool { state.withLock { $0.notices.openedThroughFormerPattern } }

    /// Whether `secrets`' pattern is the one the vault's root lists as its owner (format 2).
    public func isOwned(by secrets: VaultSecrets) throws -> Bool {
        let name = try FormatTwoKeys.unlockNameBytes(locator: secrets.locator)
        return state.withLock { state in
            state.committer.formatTwo?.specialFiles.contains { $0.role == .ownerUnlock && $0.name == name } ?? false
        }
    }

    /// Gives the vault `newPattern`: afterwards it opens the vault and the pattern that opened it
    /// opens nothing. `progress` is told each of the `patternChangeSteps` steps done. Throws
    /// `PatternChangeError` for a vault that cannot change (nothing written then).
    public func changePattern(to newPattern: VaultSecrets, progress: (Int) -> Void = { _ in }) throws {
        try state.withLock { state in
            guard !state.isLocked else { throw VaultError.locked }
            do {
                try state.readWholeVault()
                try state.changePattern(to: newPattern, progress: progress)
            } catch let error as PatternChangeError {
                throw error
            } catch {
                throw VaultError.wrap(error)
            }
        }
    }

    /// The steps `changePattern` reports: the new record committed, the old one a cover, the
    /// root without it.
    public static let patternChangeSteps = 3
}
