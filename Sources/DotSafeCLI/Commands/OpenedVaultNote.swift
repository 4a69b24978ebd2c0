import Glibc

/// What `dotsafe mount` says on a terminal once mounted: an empty vault or one with N files and
/// folders, since a mistyped pattern opens a new, empty vault without any error (R-VLT-2). Only
/// ever on a terminal, never in a log: a log that counted vaults and their sizes would tell a
/// copier how many there are (R-DEN).
enum OpenedVaultNote {
    /// The count comes from the mount's statfs (items in use, the root folder among them), so
    /// the daemon tells it to nobody but a caller who can read the mount anyway.
    static func write(mountPoint: String, to output: any TextOutput) {
        var statistics = statvfs()
        guard statvfs(mountPoint, &statistics) == 0, statistics.f_files >= statistics.f_ffree else { return }
        let items = UInt64(statistics.f_files - statistics.f_ffree)
        output.writeLine(text(items: items > 0 ? items - 1 : 0, mountPoint: mountPoint))
    }

    static func text(items: UInt64, mountPoint: String) -> String {
        guard items > 0 else {
            return "The vault is empty: a pattern never used before opens a new, empty vault, and nothing is stored until a file is added. "
                + "If you expected your files, the pattern was probably mistyped: lock it ('dotsafe lock \(mountPoint)') and mount again."
        }
        return "Opened a vault with \(items) \(items == 1 ? "file or folder" : "files and folders")."
    }
}
