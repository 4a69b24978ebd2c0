import VaultCrypto
import VaultFormat

/// The files that keep a joining storage's groups whole until the join's commit (docs/FORMAT.md
/// §13.12, "A join keeps whole groups"). Device 0's numbers 0 and 1 are the local root slots and
/// the owner record's number is the device's own record (a grantee's: the grant's number and the
/// grant, §14.9), all at names of their own that only the commit writes: until then `random(F)` lies at the numbers' device names (from device 0's
/// NKd, names no storage uses otherwise), in the groups placed with them; the commit writes the
/// record, the root and its copy into these files and renames each to its name, so that the
/// count of files never moves. Where device 0 names its files from the pattern's NK (a vault
/// upgraded from format 1, §13.9), the record is named first (`recordNamedFirst`).
struct JoinStandIns: Sendable {
    /// Device 0's numbers 0 and 1 at their device names: slot s goes through `slots[s]`.
    let slots: [String]
    /// The record's number at its device name.
    let record: String
    /// Each with its number.
    let all: [(name: String, file: FileRef)]
    /// The record goes to its name before the root, not after its copy: this pattern's open,
    /// finding no record, is format 1's, which takes a slot at its name for a damaged vault and
    /// device 0's files for a new vault's leftovers (FORMAT.md §13.12): with the record there
    /// first, a killed commit reads as a first commit cut short, or as the join's vault.
    let recordNamedFirst: Bool

    /// `grants`: each grant's number at its device name, when the record is named first: that
    /// open, which cannot name a grant without the record, removes device 0's files around it,
    /// so the grant is held until the commit point and then takes this place (`holdGrants`).
    init(namesKeyOfDeviceZero key: SecretBytes, recordFile: FileRef, recordName: String, recordNamedFirst: Bool,
         grants: [(name: String, file: FileRef)] = []) throws {
        slots = try (0..<UInt64(Format.indexSlotCount)).map { try VaultSecrets.deviceFileName($0, namesKey: key) }
        record = recordName
        self.recordNamedFirst = recordNamedFirst
        all = slots.enumerated().map { ($1, FileRef(device: 0, number: UInt64($0))) } + [(recordName, recordFile)] + grants
    }

    /// Those in group `group` of device `device`.
    func names(device: Int, group: UInt64) -> [String] {
        all.filter { Int($0.file.device) == device && $0.file.number / UInt64(Format.groupSize) == group }.map(\.name)
    }
}
