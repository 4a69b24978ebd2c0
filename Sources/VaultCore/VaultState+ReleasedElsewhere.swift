import VaultFormat
import VaultStore

/// Another device's released groups (FORMAT.md §9.2, §13.11): their files here go only after
/// the commit that no longer lists them, since this device's last commit may still reference
/// some (its items from before the other device deleted them).
extension VaultState {
    /// Files of `device` (index `index` of the table) here at numbers below its
    /// `nextFileNumber` that none of its groups holds: what it released.
    func releasedFiles(of device: DeviceEntry, _ index: Int, special: Set<UInt64>) throws -> [UInt64] {
        var found: [UInt64] = []
        for range in Self.unowned(device) {
            for number in range where !(index == 0 && number < Format.indexSlotCount) {
                let raw = FileRef(device: UInt16(index), number: number).raw
                if !special.contains(raw), try storage.entryExists(try name(raw)) { found.append(raw) }
            }
        }
        return found
    }

    /// The numbers below `nextFileNumber` between the device's owned groups.
    private static func unowned(_ device: DeviceEntry) -> [Range<UInt64>] {
        let size = UInt64(Format.groupSize)
        var ranges: [Range<UInt64>] = [], start: UInt64 = 0
        for range in device.ownedGroups.sorted(by: { $0.first < $1.first }) {
            if range.first * size > start { ranges.append(start..<min(range.first * size, device.nextFileNumber)) }
            start = max(start, range.end * size)
        }
        if start < device.nextFileNumber { ranges.append(start..<device.nextFileNumber) }
        return ranges.filter { !$0.isEmpty }
    }

    /// Right after a commit point: the released files that `completeOtherGroups` found, but
    /// any that the committed state references (a merge that failed before its commit left them
    /// listed; the state in memory is what counts).
    mutating func removeReleasedElsewhere() throws {
        guard !releasedElsewhere.isEmpty else { return }
        let files = releasedElsewhere
        releasedElsewhere = []
        let referenced = Set(referencedFiles().map(\.file))
        var removed = false
        for raw in files.sorted() where !referenced.contains(raw) {
            try storage.remove(try name(raw))
            removed = true
        }
        if removed { try storage.syncFolder() }
    }
}
