import VaultCrypto
import VaultFormat
import VaultStore

/// Withdrawing a grant (docs/FORMAT.md §14.8): the owner's side of `VaultRotation`, then the
/// vault opened again under its new keys.
extension VaultState {
    /// Withdraws the grant to `recipient`: the session is committed, the vault rotated to a new
    /// VK and RL (its other grants sealed again to them, this one ended), and the state read
    /// again from the storage. Refuses, writing nothing, what `share` refuses, a code the root
    /// lists no grant for, and a vault with a grant whose recipient its record does not list.
    mutating func unshare(with recipient: [UInt8]) throws {
        try checkWritable()
        guard committer.format == .two, committer.upgrade == nil else { throw SharingError.formatOne }
        guard sharing.received == nil else { throw SharingError.sharedWithYou }
        guard let identity = sharing.identity, let root = committer.formatTwo else { throw SharingError.notShared }
        let revoked = try GrantSeal.nameBytes(sharing: identity, with: recipient, location: Label.localLocation)
        guard root.specialFiles.contains(where: { $0.role == .grant && $0.name == revoked }) else { throw SharingError.notShared }
        let recipients = VaultRotation.recipients(sharing.ownerOptional)
        let known = try Set(recipients.map { try GrantSeal.nameBytes(sharing: identity, with: $0, location: Label.localLocation) })
        guard root.specialFiles.allSatisfy({ $0.role == .ownerUnlock || known.contains($0.name) }) else {
            throw SharingError.unknownRecipient
        }

        // The two free files the new root's slots take (FORMAT.md §14.8, "The file count of a
        // withdrawal"), chosen before the commit hands any out: free in the committed root, or,
        // when it has fewer, of a group made now, which this commit (under the old keys) owns.
        var lent = try writer.takeLendableFiles(Int(Format.indexSlotCount))
        lent += try writer.makeGroupToLend(Int(Format.indexSlotCount) - lent.count)
        // What the session wrote goes into the root the rotation carries over.
        try commit()
        guard let own = committer.formatTwo?.specialFiles.first(where: { $0.role == .ownerUnlock }),
              let current = try VaultRotation.newestRoot(storage: storage, rootLocator: secrets.locator, rootKey: root.rootKey,
                                                              readsIndexThree: readsIndexThree),
              current.generation == committer.generation else {
            throw VaultError.damagedIndex("the vault's root is not the one it committed")
        }
        defer { current.wipeKeys() }
        let owner = UnlockRecord(vaultKey: committer.vaultKey.copyBytes(), rootLocator: secrets.locator.copyBytes(), ownFile: own.file,
                                 identityKey: identity.rawRepresentation.copyBytes(), optional: sharing.ownerOptional)
        let pending = try VaultRotation.start(storage: storage, patternSecrets: session.patternSecrets, owner: owner, current: current,
                                              revoked: revoked, lent: try lent.map(name), random: session.random)
        // `pending` shares the owner record's arrays: they are wiped once the rotation is done.
        let done = try VaultRotation.resume(pending, storage: storage, patternSecrets: session.patternSecrets, readOnly: false,
                                              readsIndexThree: readsIndexThree, random: session.random)
        for record in [owner, done] {
            record.vaultKey.wipeStorage()
            record.rootLocator.wipeStorage()
            record.identityKey.wipeStorage()
        }
        // The open moves the old slots into the numbers lent (the root names them).
        try reopen()
    }

    /// The state read again from the storage (after a rotation: new keys, the same items). The
    /// pattern's secrets are the ones kept; everything else of the old state is wiped.
    private mutating func reopen() throws {
        var fresh = try VaultState.open(storage: storage, secrets: session.patternSecrets, random: session.random, clock: session.clock,
                                        options: OpenOptions(readOnly: false, cacheBytes: chunks.cache.limit, indexThree: readsIndexThree))
        // A read may be sending a reply from a chunk's memory: its block is zeroed when the
        // reply lets it go.
        chunks.removeAll(sparingLent: true)
        packs.wipe()
        session.arena.wipeAll()  // not the pattern's secrets: the new state keeps them
        committer.wipe()
        sharing.wipe()
        secrets.wipe()
        fresh.indexFanOut = indexFanOut
        fresh.readsIndexThree = readsIndexThree
        self = fresh
    }
}
