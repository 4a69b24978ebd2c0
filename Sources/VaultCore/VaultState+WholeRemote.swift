import VaultFormat

/// The files a remote needs of the other devices when it holds no root of this vault (emptied,
/// or a new one: docs/SYNC-DESIGN.md §3.4 "Moving to a new remote"), or when the user says it
/// replaces the one the vault synced with (`RemoteVault.replacesRemote`). A plain sync sends
/// only this device's files, since the remote has the others'; such a remote may have none of
/// them. This storage holds every owned group of every device whole (FORMAT.md §13.11), as the
/// remote must: the groups go up whole, the grants at their names.
extension VaultState {
    /// The other devices' group files and the grants of any device for `transfer`: with no remote
    /// root all of them (a torn file a killed upload left is listed too), else those not listed.
    func addOtherDevicesFiles(_ transfer: inout SyncTransfer, _ remote: RemoteVault, remoteNames: Set<String>) throws {
        guard let formatTwo = committer.formatTwo, remote.root == nil || remote.replacesRemote else { return }
        let wanted: (String) -> Bool = { remote.root == nil || !remoteNames.contains($0) }
        let special = Set(formatTwo.specialFiles.map(\.file.raw))
        var names: [String] = []
        for (index, device) in formatTwo.devices.enumerated() where index != Int(formatTwo.localDevice) {
            for number in device.ownedGroups.fileNumbers(ofDevice: index) {
                let raw = FileRef(device: UInt16(index), number: number).raw
                guard !special.contains(raw) else { continue }
                let name = try self.name(raw)
                if wanted(name), try storage.entryExists(name) { names.append(name) }
            }
        }
        transfer.groupFiles = (transfer.groupFiles + names).sorted()
        for grant in formatTwo.specialFiles where grant.isGrantFile && !writer.allocator.isOwnDevice(grant.file.raw) {
            let name = FileName.encode(grant.name)
            if wanted(name), !transfer.grants.contains(name) { transfer.grants.append(name) }
        }
    }
}
