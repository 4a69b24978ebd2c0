import VaultCore

/// Index version 3 (docs/FORMAT.md §15) with its index held on demand is what `dotsafe` opens and
/// writes: a vault it creates is index 3, an index-2 vault converts at its first change (§15.1),
/// `upgrade` converts the others. The tests play an earlier release with `DOTSAFE_INDEX_THREE=0`
/// in the environment (index 2, a root of version 3 refused as newer before anything is written,
/// no `upgrade`), and hold the whole index with `DOTSAFE_INDEX_ON_DEMAND=0`. Neither is in the
/// help, the man page or the completions: they are the tests' switches, not a user's choice.
enum IndexThreeSwitch {
    static let variable = "DOTSAFE_INDEX_THREE"
    static let onDemandVariable = "DOTSAFE_INDEX_ON_DEMAND"

    static func isOn(_ environment: [String: String]) -> Bool { environment[variable] != "0" }

    /// The commands, without `upgrade` when an earlier release is played.
    static func commands(_ commands: [any Command.Type], _ environment: [String: String]) -> [any Command.Type] {
        isOn(environment) ? commands : commands.filter { $0.name != UpgradeCommand.name }
    }

    /// `options` with index 3 unless an earlier release is played; `onDemand` (the mount's) also
    /// holds the index in part unless the environment says otherwise. The other commands read
    /// every page anyway (fsck, sync, repattern, upgrade), so they open it whole.
    static func options(_ options: Vault.Options, _ environment: [String: String], onDemand: Bool = false) -> Vault.Options {
        var options = options
        options.indexThree = isOn(environment)
        options.loadsOnDemand = onDemand && options.indexThree && environment[onDemandVariable] != "0"
        return options
    }
}
