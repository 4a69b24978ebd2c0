import VaultFormat

/// Index version 3 as a vault's user sees it (docs/FORMAT.md §15.1): which index the storage
/// holds, what keeps the conversion from happening by itself, and the conversion that `dotsafe
/// upgrade` asks for.
extension Vault {
    /// What holds a vault at index 2 (§15.1): another device or a grantee may run a release
    /// without index 3, which could no longer open it. None: it converts at its first commit
    /// that writes (with `Options.indexThree`).
    public struct IndexThreeHold: Equatable, Sendable {
        /// Devices the root lists (this one included).
        public var devices: Int
        /// Grants, in use or withdrawn (roles 2 and 4, §14).
        public var grants: Int
        /// Whether the vault has synced (its root records a sync base, §13.11).
        public var synced: Bool

        public init(devices: Int, grants: Int, synced: Bool) {
            self.devices = devices; self.grants = grants; self.synced = synced
        }

        public var isEmpty: Bool { devices <= 1 && grants == 0 && !synced }
    }

    /// 1 (format 1, §13.9: converted together with its upgrade), 2 or 3: the index the storage
    /// holds as of the last commit.
    public var indexVersion: Int {
        state.withLock { state in
            if state.committer.storedFormat == .one { return 1 }
            return state.committer.indexThree == nil || state.committer.isNew ? 2 : 3
        }
    }

    /// What holds this vault at index 2; empty for format 1.
    public var indexThreeHold: IndexThreeHold {
        state.withLock { $0.committer.formatTwo?.indexThreeHold ?? IndexThreeHold(devices: 1, grants: 0, synced: false) }
    }

    /// Converts the vault to index 3 by one commit whatever holds it (§15.1): `dotsafe upgrade`,
    /// once its user agreed. A format-1 vault is upgraded by the same commit. Returns false, and
    /// writes nothing, for a vault already of index 3; throws `VaultError.notFound` for a vault
    /// with nothing on disk (there is nothing to convert, and no empty vault is made).
    @discardableResult
    public func convertToIndexThree() throws -> Bool {
        var converted = false
        try afterWritesBehind { state in
            guard !state.isLocked else { throw VaultError.locked }
            try state.checkWritable()
            try state.loadWholeIndex()
            guard !state.isNew else { throw VaultError.notFound }
            guard state.committer.indexThree == nil else { return }
            try state.requestConversion()
            try state.commit()
            converted = true
        }
        return converted
    }
}

extension FormatTwoRoot {
    /// §15.1's policy from the root as read: its device table, grants and sync base.
    var indexThreeHold: Vault.IndexThreeHold {
        Vault.IndexThreeHold(devices: max(devices.count, 1), grants: specialFiles.filter(\.isGrantFile).count,
                             synced: extensions.contains { $0.tag == SyncBase.extensionTag })
    }
}
