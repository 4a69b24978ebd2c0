import VaultCrypto
import VaultFormat
import VaultStore

/// A grantee's device following a withdrawal of another grant (docs/FORMAT.md §14.8, "Sync
/// after a withdrawal"): the owner sealed this device's grant on the remote again to the
/// vault's new VK' and RL'. The sync's merge takes them (the devices' names keys stay); its
/// commit writes the root in both slots named from RL'; then the grant as the remote holds it
/// replaces the old one here (the switch: before it the old grant opens the old root, after it
/// the new grant the new root), and the old slots go.
extension VaultState {
    /// A device of the owner following a withdrawal made on another of the owner's devices.
    func ownerFollows(_ remote: RemoteVault) -> Bool { remote.follows && sharing.received == nil }

    /// The state takes the remote's keys: the names of its slots, the key of its roots, VK'.
    /// Returns the root and vault key the merge's committer takes. Nothing is written here.
    mutating func followRotation(_ remote: RemoteVault) throws -> (formatTwo: FormatTwoRoot, vaultKey: SecretBytes) {
        guard let formatTwo = committer.formatTwo, remote.grantFile != nil || sharing.received == nil else {
            throw SyncRefusal.damagedRemote("its grant was not read")
        }
        let moved = VaultSecrets(rootLocator: try SecretBytes(copying: remote.rootLocator.copyBytes()),
                                 rootKey: try SecretBytes(copying: remote.rootKey.copyBytes()),
                                 namesKey: try SecretBytes(copying: secrets.namesKey.copyBytes()), localDevice: formatTwo.localDevice)
        let former = secrets.locator.copyBytes()
        let formerNames = try movedDeviceNames(remote, formatTwo)
        sharing.following?.formerLocator.wipe()
        // The free files the new slots take, chosen before the merge's commit hands any out:
        // those `prepareFollow` took before the downloads, or (a sync that did not) taken now.
        var lendable = sharing.lendable ?? []
        sharing.lendable = nil
        while lendable.count < Int(Format.indexSlotCount), let number = try writer.takeLendableFile() { lendable.append(number) }
        sharing.following = (remote.grantFile, try SecretBytes(copying: former), formerNames, lendable)
        secrets.wipe()
        secrets = moved
        writer.secrets = moved
        var root = FormatTwoRoot(rootKey: try SecretBytes(copying: remote.rootKey.copyBytes()), deviceID: formatTwo.deviceID,
                                 itemPrefix: formatTwo.itemPrefix, deviceName: formatTwo.deviceName, specialFiles: formatTwo.specialFiles,
                                 extensions: formatTwo.extensions, localDevice: formatTwo.localDevice)
        root.devices = formatTwo.devices
        // Until the old slots are gone, the new root names them: a crash after the grant's
        // switch leaves them for the next writing open to remove.
        root.extensions = (formatTwo.extensions.filter { $0.tag != IndexRootV2.retiringSlotsTag }
            + [IndexRootV2.Extension(tag: IndexRootV2.retiringSlotsTag, value: former)]).sorted { $0.tag < $1.tag }
        return (root, try SecretBytes(copying: remote.vaultKey.copyBytes()))
    }

    /// Before a follow's downloads (FORMAT.md §14.8, "The file count of a follow"): the two free
    /// files its slots take, of groups the committed root owns; when it has fewer, a group is
    /// made and committed now, under the old keys (the vault's usual refill), and the rest are
    /// taken from it, so that a cut before the switch leaves no slot file the old root does not
    /// count.
    mutating func prepareFollow() throws {
        guard sharing.lendable == nil else { return }
        let count = Int(Format.indexSlotCount)
        var lent = try writer.takeLendableFiles(count)
        if lent.count < count {
            lent += try writer.makeGroupToLend(count - lent.count)
            try commit()
        }
        sharing.lendable = lent
    }

    /// After the commit that wrote the root at RL''s slots (both: the original and its copy are
    /// new files, synced): the new grant in place of the old (`replace`, atomic), then the old
    /// slots removed. The committed root names them until the next commit.
    mutating func finishFollowing() throws {
        guard let following = sharing.following else { return }
        if let received = sharing.received, let grant = following.grant {
            try storage.replace(try grantName(received), contents: grant)
        } else {
            // A device of the owner: its record names the new keys (the same switch).
            try writeOwnerRecord(identity: sharing.identity)
        }
        try retireSlots(of: following.formerLocator, lent: following.lent)
        // The move's former names: the committed root names those files from the new key.
        let present = try following.formerNames.filter { try storage.entryExists($0) }
        for name in present { try storage.remove(name) }
        if !present.isEmpty { try storage.syncFolder() }
        following.formerLocator.wipe()
        sharing.following = nil
        committer.formatTwo?.extensions.removeAll { $0.tag == IndexRootV2.retiringSlotsTag }
    }

    /// A writing open of a root that still names slots to retire (a crash cut `finishFollowing`
    /// after the grant's switch): they go; the next commit's root no longer names them.
    mutating func retireFollowedSlots() throws {
        guard let value = committer.formatTwo?.extensions.first(where: { $0.tag == IndexRootV2.retiringSlotsTag })?.value else { return }
        if value.count == Format.keySize {
            let locator = try SecretBytes(copying: value)
            defer { locator.wipe() }
            try retireSlots(of: locator, lent: [])
        }
        committer.formatTwo?.extensions.removeAll { $0.tag == IndexRootV2.retiringSlotsTag }
    }

    /// The files of other devices whose names key the remote root changed (device 0's, after a
    /// move of an upgraded vault's names, §13.12) at the names the former key gave them here:
    /// the merge downloads them at their new names, and these go once the root naming those
    /// is committed. Every number of the device's owned groups, as this storage's root has them.
    private func movedDeviceNames(_ remote: RemoteVault, _ formatTwo: FormatTwoRoot) throws -> [String] {
        guard let root = remote.root else { return [] }
        var names: [String] = []
        for (index, device) in formatTwo.devices.enumerated() where index != Int(formatTwo.localDevice) && index < root.devices.count {
            guard let former = secrets.namesKey(ofDevice: UInt16(index)) else { continue }
            var formerBytes = former.copyBytes()
            defer { Sealer.wipe(&formerBytes) }
            guard !ConstantTime.equals(formerBytes, root.devices[index].namesKey) else { continue }
            for number in device.ownedGroups.fileNumbers(ofDevice: index) {
                names.append(try VaultSecrets.deviceFileName(number, namesKey: former))
            }
        }
        return names
    }

    /// Just before a follow's commit point: each slot name of RL' that holds nothing gets a free
    /// file of this device, renamed (FORMAT.md §14.8, "The file count of a follow"); one that
    /// holds a file (the junk of a follow cut short) is written over in place. The count stays.
    /// The files lent are the ones `followRotation` took (`lendable`); a slot name finds another
    /// only when the committed root had fewer free files. Those not needed are free again.
    mutating func lendFollowSlots() throws {
        guard var lendable = sharing.following?.lent else { return }
        var lent: [UInt64] = []
        for slot in 0..<Format.indexSlotCount {
            let slotName = try name(slot)
            guard try !storage.entryExists(slotName) else { continue }
            if !lendable.isEmpty {
                let number = lendable.removeFirst()
                try storage.rename(try name(number), to: slotName)
                lent.append(number)
            } else {
                lent.append(try writer.lendFreeFile(to: slotName))
            }
        }
        for number in lendable { writer.release(number) }
        sharing.following?.lent = lent
        guard !lent.isEmpty else { return }
        // A group made for the lending: its files synced; the new names durable before the root.
        try writer.syncData()
        try storage.syncFolder()
    }

    /// A missing slot of the root opened: a free file lent to it while the storage's count is
    /// whole (a withdrawal cut between its two renames, FORMAT.md §14.8), else a file made.
    mutating func restoreMissingSlot() throws {
        guard let slot = committer.missingSlot else { return }
        if try moveStandInToMissingSlot(slot) || writer.lendToMissingSlot(try name(slot)) {
            committer.missingSlot = nil
            return
        }
        try committer.restoreMissingSlot(writer: writer)
    }

    /// A new vault's first commit cut after its root's rename and before its copy's (FORMAT.md
    /// §3.3), or a join that named its record first (an upgraded vault's, §13.12): the copy's
    /// stand-in, in device 0's group 0, goes to the slot's name (the count does not move). On
    /// any device: device 0's numbers 0 and 1 at their names are no file's but a stand-in's.
    private mutating func moveStandInToMissingSlot(_ slot: UInt64) throws -> Bool {
        let standIn = try secrets.standInName(slot)
        guard try storage.entryExists(standIn) else { return false }
        try storage.rename(standIn, to: try name(slot))
        try storage.syncFolder()
        return true
    }

    /// After the switch, the old slots go into numbers of this device whose files are missing
    /// (the ones lent to the new slots), so that the count stays; one with no such number is
    /// removed. The numbers filled hold the old root: refilled after the next commit point.
    private mutating func retireSlots(of locator: SecretBytes, lent: [UInt64]) throws {
        var changed = false, lent = lent, filled: [UInt64] = []
        for slot in 0..<UInt8(Format.indexSlotCount) {
            let name = try FormatTwoKeys.slotName(rootLocator: locator, slot: slot)
            guard try storage.entryExists(name) else { continue }
            if let number = try writer.takeMissingNumber(lent: &lent) {
                try storage.rename(name, to: try self.name(number))
                filled.append(number)
            } else {
                try storage.remove(name)
            }
            changed = true
        }
        if changed { try storage.syncFolder() }
        writer.allocator.refillAfterNextCommit(filled)
        // Lent and not filled (an old slot was missing already): free after the next commit.
        for number in lent { writer.release(number) }
    }
}
