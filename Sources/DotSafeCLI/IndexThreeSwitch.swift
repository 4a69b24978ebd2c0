import VaultCore

/// Index version 3 (docs/FORMAT.md §15) is a switch of the tests until its sync and share land
/// (issue 17, step 3): with `DOTSAFE_INDEX_THREE=1` in the environment, every command that opens
/// a vault (`mount`, and through its daemon `share`, `unshare` and `mount --sync`; `fsck`, `sync`,
/// `repattern`) opens it with `Vault.Options.indexThree` (a root of version 3 opens, §15.1's
/// conversion happens), and `upgrade` is a command. Without it `dotsafe` is what users have:
/// index 2, a root of version 3 refused as newer before anything is written, no `upgrade` in
/// the help, the man page or completions. Kept out of users' reach until index 3 is the default.
enum IndexThreeSwitch {
    static let variable = "DOTSAFE_INDEX_THREE"
    /// With the switch on, `DOTSAFE_INDEX_ON_DEMAND=1` also holds the index in part
    /// (`Vault.Options.loadsOnDemand`, issue 17 step 6c): the mount reads what is used.
    static let onDemandVariable = "DOTSAFE_INDEX_ON_DEMAND"

    static func isOn(_ environment: [String: String]) -> Bool { environment[variable] == "1" }

    /// The commands, with `upgrade` when the switch is on.
    static func commands(_ commands: [any Command.Type], _ environment: [String: String]) -> [any Command.Type] {
        guard isOn(environment), !commands.contains(where: { $0.name == UpgradeCommand.name }) else { return commands }
        return commands + [UpgradeCommand.self]
    }

    /// `options` with index 3 when the switch is on.
    static func options(_ options: Vault.Options, _ environment: [String: String]) -> Vault.Options {
        var options = options
        options.indexThree = isOn(environment)
        options.loadsOnDemand = options.indexThree && environment[onDemandVariable] == "1"
        return options
    }
}
