import VaultFormat
import VaultStore

/// The names a join may write in this storage (FORMAT.md §13.11, §13.12): the local root slots
/// of the remote's RL, the grants' names, and each device of the remote root's table at its
/// numbers below nextFileNumber (device 0 from 2), named from its NKd. Those cover the files the
/// join downloads, the group files it adds to make groups whole and the released files it
/// removes. None of them is here before a join, else the storage holds this vault already.
extension VaultState {
    /// Calls `body` with each name a join from `remote`'s root may write, the slots first.
    private func forEachJoinName(_ remote: RemoteVault, _ root: IndexRootV2, _ body: (String) throws -> Void) throws {
        let names = try Self.remoteNames(remote, root)
        defer { names.wipe() }
        for slot in 0..<UInt8(Format.indexSlotCount) { try body(try names.indexName(slot: slot)) }
        for special in root.specialFiles where special.isGrantFile { try body(FileName.encode(special.name)) }
        // Made one by one (`fileName` would cache each name): a range may be long.
        for (index, device) in root.devices.enumerated() {
            guard let key = names.namesKey(ofDevice: UInt16(index)) else { continue }
            for number in stride(from: index == 0 ? Format.indexSlotCount : 0, to: device.nextFileNumber, by: 1) {
                try body(try VaultSecrets.deviceFileName(number, namesKey: key))
            }
        }
    }

    /// Before anything comes down: a file at a name the join may write means the storage holds
    /// this vault already, under another pattern (changed on another device since, §13.12),
    /// whose root and files the join would write over; a withdrawal since (§14.8) gives the
    /// slots another RL but keeps the names keys, so the slots alone do not tell. Or it holds
    /// what a first sync of this pattern placed before it was killed: nothing in this vault's
    /// names tells the two apart (the storage's covers and other vaults lie beside both), so
    /// that is refused too. A join that fails short of a kill removes what it placed (below).
    func refuseJoinOverHeldFiles(_ remote: RemoteVault) throws {
        guard remote.joins, let root = remote.root else { return }
        let present = Set(try storage.listAllNames().filter(FileName.isWellFormed))
        if !present.isEmpty {
            try forEachJoinName(remote, root) { if present.contains($0) { throw SyncRefusal.heldUnderOtherPattern } }
        }
        remote.joinNamesFree = true
    }

    /// A join that failed before its commit (a remote gone, a file that does not open): every
    /// name it may write was free when it began, so what is at one now is its own, and goes, in
    /// whole groups as it came; the next sync joins again. Nothing when it committed or was refused.
    mutating func removeJoinLeftovers(_ remote: RemoteVault) throws {
        guard remote.joins, remote.joinNamesFree, isNew, let root = remote.root else { return }
        let present = Set(try storage.listAllNames().filter(FileName.isWellFormed))
        var removed = false
        try forEachJoinName(remote, root) { name in
            guard present.contains(name) else { return }
            try storage.remove(name)
            removed = true
        }
        if removed { try storage.syncFolder() }
    }
}
