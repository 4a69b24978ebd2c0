/// The `-o` options of `mount`, comma-separated, as a user writes them or as mount(8) and
/// mount.fuse3 pass them from an fstab line (`dotsafe STORAGE MOUNTPOINT -o rw,nodev,...`).
///
/// DotSafe's own: `allow_other`, `ro`, `noexec`, `pattern_file=FILE`, `pattern_command=CMD`,
/// `keyring=PATH`, `idle=TIME`, `lock_on_suspend`, `sync=REMOTE`, `sync_interval=TIME`. What mount(8), mount.fuse3 and systemd add for their own use
/// (`noauto`, `user`, `nofail`, `_netdev`, `x-systemd.*`, `rw`, `dev`, `suid`, the atime
/// options, ...) is accepted and ignored: it means nothing to a FUSE daemon, and refusing it
/// would break an fstab line. `nodev` and `nosuid` are what a FUSE mount always has, so `dev`
/// and `suid` are ignored too: a vault never holds working device files or set-uid programs.
struct MountOptionList {
    var allowOther = false
    var readOnly = false
    var noExec = false
    var lockOnSuspend = false
    var patternFile: String?
    var patternCommand: String?
    var keyring: String?
    var idle: String?
    var sync: String?
    var syncInterval: String?

    /// Options that mean something to mount(8), mount.fuse3 or the kernel's generic mount code
    /// but not to DotSafe.
    static let ignored: Set<String> = [
        "rw", "default_permissions", "defaults", "auto", "noauto", "user", "nouser", "users", "owner", "group",
        "nofail", "_netdev", "dev", "nodev", "suid", "nosuid", "exec", "sync", "async", "dirsync",
        "atime", "noatime", "relatime", "norelatime", "strictatime", "nostrictatime", "lazytime", "nolazytime",
        "diratime", "nodiratime", "silent", "loud",
    ]
    /// Prefixes of options that carry a value for someone else: systemd (`x-systemd.*`), other
    /// programs (`x-*`), and comments.
    static let ignoredPrefixes = ["x-", "comment="]

    init(_ lists: [String]) throws {
        for list in lists {
            for option in list.split(separator: ",", omittingEmptySubsequences: true).map(String.init) {
                try add(option)
            }
        }
        if patternFile != nil && patternCommand != nil {
            throw CLIError.usage("pattern_file and pattern_command exclude each other")
        }
    }

    private mutating func add(_ option: String) throws {
        if let equals = option.firstIndex(of: "=") {
            let name = String(option[..<equals]), value = String(option[option.index(after: equals)...])
            let known: WritableKeyPath<MountOptionList, String?>?
            switch name {
            case "pattern_file": known = \.patternFile
            case "pattern_command": known = \.patternCommand
            case "keyring": known = \.keyring
            case "idle": known = \.idle
            case "sync": known = \.sync
            case "sync_interval": known = \.syncInterval
            default: known = nil
            }
            if let known {
                guard !value.isEmpty else { throw CLIError.usage("mount option '\(name)' needs a value") }
                self[keyPath: known] = value
                return
            }
        }
        switch option {
        case "allow_other": allowOther = true
        case "ro": readOnly = true
        case "noexec": noExec = true
        case "lock_on_suspend": lockOnSuspend = true
        case _ where Self.ignored.contains(option): break
        case _ where Self.ignoredPrefixes.contains(where: option.hasPrefix): break
        default:
            throw CLIError.usage("unsupported mount option '\(option)': see 'dotsafe help mount'")
        }
    }
}
