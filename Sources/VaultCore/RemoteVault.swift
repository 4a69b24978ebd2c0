import VaultCrypto
import VaultFormat

/// What a sync learned of the vault on a remote (docs/FORMAT.md §13.11): its keys (from the
/// remote unlock record, or this device's own when the remote holds nothing yet), the newest
/// remote root, and that root's records once read. Its keys live in locked memory and in the
/// vault's arena, and are erased with the vault; `Vault`'s sync calls fill and read it.
public final class RemoteVault: @unchecked Sendable {
    // @unchecked: only a `Vault`'s sync calls touch it, each under that vault's lock.

    /// The remote's unlock record body (nil: the remote holds no record for this vault yet).
    var record: UnlockRecord?
    let vaultKey: SecretBytes
    let rootLocator: SecretBytes
    let rootKey: SecretBytes
    /// The local vault has never been committed: it takes the remote's keys and joins.
    let joins: Bool
    /// For a vault shared with this one (FORMAT.md §14.9): the grant's bytes as the remote holds
    /// them, which a joining device keeps as its own record (`record` is the grant's body).
    var grantFile: [UInt8]?
    /// The remote holds the vault under keys a withdrawal replaced (§14.8): for the owner, the
    /// keys of the former record; for a grantee, the grant on the remote names new keys. This
    /// sync moves the remote (owner) or this storage (grantee) to the new keys.
    public internal(set) var rotated = false
    /// This device takes the new keys (a grantee's, or a device of the owner after a withdrawal
    /// made on another of the owner's devices); else, rotated, this sync moves the remote.
    public internal(set) var follows = false
    /// The owner's sync that moves the remote to the keys of a withdrawal made here.
    public var movesRemote: Bool { rotated && !follows && !withdrawnTwice }
    /// A withdrawal was made here and another on another device of the owner, whose sync moved
    /// the remote first (FORMAT.md §14.8): refused once the remote root shows the vault is this
    /// one (`SyncRefusal.withdrawnOnTwoDevices`), else another vault (`otherLineage`).
    var withdrawnTwice = false
    /// The remote's record lacks the identity or recipients of this device's owner record
    /// (FORMAT.md §13.11): the sync writes it again.
    public internal(set) var recordOutdated = false
    /// The owner's sync after a withdrawal: the vault's new RL' and RK'. The remote's slots at
    /// RL' may hold a root already (a sync of the owner cut after its root went up, then a
    /// grantee that followed it), newer than the root at the record's keys (§14.8).
    var moved: (rootLocator: SecretBytes, rootKey: SecretBytes)?
    /// The root was read at RL''s slots: the remote is at the new keys but for its record.
    public internal(set) var readMoved = false
    /// The files at names a join may write that were here when it began (`refuseJoinOverHeldFiles`;
    /// nil before, or when it was refused): what a killed join of this vault left, or files the
    /// remote root does not reference. The others at those names are this join's own until its commit.
    var joinHeld: Set<String>?
    /// A join's stand-ins for its slots and record (`JoinStandIns`), set with `joinHeld`.
    var joinStandIns: JoinStandIns?
    /// The covers this join made to keep the count whole (`VaultState.joinCovers`).
    var joinCovers: [String] = []
    /// The files of `joinHeld` that this join's placements put the remote's other bytes over
    /// (`replacesPartialJoin`): a join that fails after that removes its own files, not these
    /// (FORMAT.md §13.12), and the user is told how many stay (`sync`, `mount --sync`).
    public internal(set) var joinReplaced: Set<String> = []
    /// The user says no other state of this vault is in this storage (`sync
    /// --replace-partial-join`, FORMAT.md §13.12 "Replacing a partial join"): a join's download
    /// goes over a file at its name whose bytes differ from the remote's (what a join killed
    /// before the remote changed placed) in place of refusing. Slots and released numbers still
    /// refuse. Set before the remote root is read.
    public var replacesPartialJoin = false
    /// The user says this remote replaces the one the vault synced with (`sync --new-remote`,
    /// docs/SYNC-DESIGN.md §3.4 "Moving to a new remote"): what the remote lacks of every
    /// device's groups and grants goes up, not only this device's (the old remote had the rest).
    public var replacesRemote = false
    /// This device's join committed here and never went up, and the remote root, written since
    /// by another device, lists the devices before it and not it: the merge adds its entry
    /// (`VaultState.takesInUnpublishedDevice`, FORMAT.md §13.12 "A join committed, never published").
    var takesInDevice = false
    /// The newest remote root that opens (nil: none yet) and its records, read into the arena.
    var root: IndexRootV2?
    var contents: IndexContents?
    /// The files the remote root references, with digests of their keys.
    var uses: Set<FileUse> = []
    /// The remote root's items as a sync base (what the remote is known to hold).
    var baseItems: [SyncBase.Item] = []
    /// The local device table before the merge: groups of other devices it no longer owns go.
    var oldDevices: [DeviceEntry] = []
    /// What the last merge changed in the local tree (for a mounted vault's kernel caches).
    public internal(set) var pulled = PulledChanges()

    init(record: UnlockRecord?, vaultKey: SecretBytes, rootLocator: SecretBytes, joins: Bool) throws {
        self.record = record
        self.vaultKey = vaultKey
        self.rootLocator = rootLocator
        self.joins = joins
        rootKey = try FormatTwoKeys.rootKey(vaultKey: vaultKey)
    }

    deinit {
        root?.wipeKeys()
        if let record {
            record.vaultKey.wipeStorage()
            record.rootLocator.wipeStorage()
            record.identityKey.wipeStorage()
        }
    }

    /// Whether the remote holds this vault's unlock record (for a shared vault, the grant).
    public var hasRecord: Bool { record != nil }
    /// The remote root's generation; 0 when the remote holds none.
    public var generation: UInt64 { root?.generation ?? 0 }
    /// The device that wrote the remote root.
    public var writerDevice: UInt16? { root?.writerDevice }
    /// The remote root's device table as item counters: each device's item prefix, and the
    /// counter below which it had handed out item IDs (FORMAT.md §13.4); empty without a root.
    public var itemCounters: [(prefix: UInt32, next: UInt32)] { root?.devices.map { ($0.itemPrefix, $0.nextItemCounter) } ?? [] }

    /// The names of the remote's two root slots (`"remote"`, from the record's RL).
    public func slotNames() throws -> [String] { try Self.slotNames(rootLocator) }

    /// Where the remote root may be: the record's two slots, then, for the owner's sync after a
    /// withdrawal, RL''s two (`Vault.readRemoteRoot` and `remoteGeneration` take the files of all).
    public func rootSlotNames() throws -> [String] {
        try slotNames() + (moved.map { try Self.slotNames($0.rootLocator) } ?? [])
    }

    /// The locator and key of the slots the root was read at.
    var readLocator: SecretBytes { readMoved ? moved!.rootLocator : rootLocator }
    var readRootKey: SecretBytes { readMoved ? moved!.rootKey : rootKey }

    private static func slotNames(_ locator: SecretBytes) throws -> [String] {
        try (0..<UInt8(Format.indexSlotCount)).map {
            try FormatTwoKeys.slotName(rootLocator: locator, slot: $0, location: Label.remoteLocation)
        }
    }
}

/// Why a sync does not go on, said in one line.
public enum SyncRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    /// Neither the local storage nor the remote holds a vault that opens with this pattern.
    case noVault
    /// The remote holds a vault of this pattern that this device's vault did not come from.
    case otherLineage
    /// The remote's device table does not list this device as it knows itself.
    case unknownDevice
    /// A format-1 vault: sync works on format 2 only.
    case formatOne
    /// Items with several names: not synced yet.
    case hardLinks
    /// Another device wrote a remote root while this sync ran: this device's changes are
    /// committed locally, and the next sync merges them.
    case raced
    /// The remote's root slots are this vault's, but its unlock record is not this pattern's:
    /// another device changed the pattern (FORMAT.md §13.12); the new pattern's sync here follows it.
    case patternChanged
    /// The remote's unlock record is not the one its root lists: another device's sync of a
    /// pattern change is under way or was cut short (its next sync finishes it).
    case patternChanging
    /// A device that would join holds files at names the join writes whatever is there (the
    /// vault's local root slots, grants, released files), or a file the join downloads whose
    /// bytes differ: its storage holds this vault under another pattern (the pattern was changed
    /// on another device since, and this storage cannot follow the change: FORMAT.md §13.12,
    /// "Another device follows the change"), whose root and files the join would write over; or what a join killed before its commit placed, at names whose
    /// bytes the remote changed since, which `RemoteVault.replacesPartialJoin` replaces.
    /// `mount --sync` is refused for it.
    case heldUnderOtherPattern
    /// The remote's root slots hold something that does not open.
    case damagedRemote(String)
    /// The remote does not hold the state this device last synced with: put back to an older
    /// copy, maybe synced since by a device that never saw what went (SYNC-DESIGN §3.4 step 3).
    /// A merge would take everything written since as deleted there. The way out (SYNC-DESIGN
    /// §3.4 step 3): the newer copy put back, or a join from the remote as it is in an empty
    /// folder, which takes this storage's changes by hand (no merge of the two takes them as deleted);
    /// or `sync --new-remote`, a merge without a base (SYNC-DESIGN §3.4 "Moving to a new remote").
    case rolledBack(String)
    /// The remote holds no index of this vault, but this device synced it before: a second
    /// remote, or one emptied. Not a put-back copy, but the sync base is one per vault (FORMAT.md
    /// §13.11): after a sync here, the next merge with the other remote would take what changed
    /// between the two syncs as changed back there (SYNC-DESIGN §3.4, "Several remotes"). The way
    /// on when it replaces the old one: `sync --new-remote` ("Moving to a new remote").
    case otherRemote
    /// `sync --new-remote` found the remote root naming files of this device under keys the
    /// first mover last saw, whose numbers this device took again since (SYNC-DESIGN §3.4
    /// "Moving to a new remote", "Limit:"): read here they hold other bytes, so no merge.
    case ownFilesReused
    /// This device withdrew a grant, and another device of the owner withdrew one too and
    /// synced first (FORMAT.md §14.8): the two withdrawals do not merge.
    case withdrawnOnTwoDevices
    /// This device withdrew a grant, and another device of the owner shared the vault and
    /// synced since this one's last sync (FORMAT.md §14.8): the new grant is not sealed to this
    /// withdrawal's keys.
    case withdrawnAfterShareElsewhere

    public var description: String {
        switch self {
        case .noVault: "no vault opens with this pattern, neither in the storage nor on the remote"
        case .otherLineage:
            "the remote holds another vault made with this pattern (this storage's vault was made apart from it): nothing was changed "
                + "on either side; two vaults do not merge: copy its files into a storage that synced with the remote"
        case .unknownDevice: "the remote's vault does not list this device (another device's sync replaced its entry): nothing was changed"
        case .formatOne: "this vault is in format 1: sync needs format 2"
        case .hardLinks: "the vault holds files with several names (hard links): sync does not handle them yet"
        case .raced: "another device synced to the remote meanwhile: this device's changes are kept here; sync again to merge them"
        case .patternChanged:
            "the vault's pattern was changed on another device: nothing was changed; this storage still opens with this pattern and keeps its changes since its last sync; to go on, sync with the new pattern: this storage follows the change and sends its changes"
        case .patternChanging:
            "the vault's pattern is being changed on another device, whose next sync finishes the change: sync again then; nothing was changed"
        case .heldUnderOtherPattern:
            "this storage holds this vault under another pattern (it was changed on another device), or what a killed first sync "
                + "of this pattern left: nothing was changed; the storage still opens with the other pattern and keeps its changes "
                + "since its last sync; to go on, sync with this pattern into an empty storage folder, or, if no other pattern's "
                + "state of this vault is in this storage (a first sync cut short here), sync again with --replace-partial-join "
                + "(dotsafe sync or mount --sync), which replaces what is there (and destroys another pattern's state of this "
                + "vault, if there is one)"
        case .damagedRemote(let why): "the vault on the remote is damaged: \(why); nothing was changed"
        case .otherRemote:
            "this remote holds no index of this vault, but this device synced the vault before, with this remote or another: a "
                + "vault syncs with one remote for now (its sync state is kept once per vault); nothing was changed; if this remote "
                + "replaces the one the vault synced with (emptied, or a move), 'dotsafe sync --new-remote' puts the vault there"
        case .rolledBack(let why):
            "the vault on the remote is damaged: \(why) (restored or rolled back?); nothing was changed, and this storage keeps its "
                + "state: put the remote's newer copy back if there is one, or go on from the remote as it is: sync into an empty "
                + "storage folder, then copy into that vault what this storage changed since its last sync; or, if this remote "
                + "replaces the one the vault synced with, 'dotsafe sync --new-remote' merges the two without a common state"
        case .ownFilesReused:
            "the remote holds files of this device as another device last saw them, before this device used them again (the "
                + "old remote was gone before that device synced again): merged, one file would hold two contents; nothing was "
                + "changed; to go on, sync into an empty storage folder from this remote, then copy into that vault what this "
                + "storage holds that it lacks"
        case .withdrawnOnTwoDevices:
            "this device withdrew a grant (unshare), and so did another device of this vault, which synced first: two withdrawals do "
                + "not merge, and nothing was changed on either side; to go on, copy out what this storage changed since its last "
                + "sync, sync into an empty storage folder, copy it in there and run unshare there again"
        case .withdrawnAfterShareElsewhere:
            "this device withdrew a grant (unshare), and another device of this vault shared it (share) and synced since this "
                + "device's last sync: the two do not merge, and nothing was changed on either side; to go on, copy out what this "
                + "storage changed since its last sync, sync into an empty storage folder, copy it in there and run unshare there again"
        }
    }
}
