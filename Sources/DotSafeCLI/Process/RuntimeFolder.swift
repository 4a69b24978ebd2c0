import SystemCalls

/// The user's private folder for running mounts: the mount guards' lock files, the daemons'
/// lock channels and the registry of open mounts (`MountRecord`). Mode 0700 and ours, so no
/// other user can list it, take a name in it or connect to a socket in it (R-DEN-4).
///
/// Where, in memory (tmpfs) whenever the system has one, so that nothing of a mount outlives
/// a power cut: `$XDG_RUNTIME_DIR/dotsafe`; else `/run/user/UID/dotsafe` when that folder exists
/// and is ours; else `/dev/shm/dotsafe-UID` (made 0700; refused if someone else made it); only
/// where there is no /dev/shm, `${XDG_STATE_HOME:-~/.local/state}/dotsafe/run` on disk.
struct RuntimeFolder {
    let path: String

    /// The folder, made if missing; a folder that is not private to us is refused.
    static func open(environment: [String: String]) throws -> RuntimeFolder {
        guard let path = location(environment) else {
            throw CLIError.failure("no folder for running mounts: set XDG_RUNTIME_DIR or HOME")
        }
        do {
            var prefix = ""
            for component in path.split(separator: "/") {
                prefix += "/" + component
                _ = try SystemCall.makeFolder(prefix, mode: 0o700)
            }
        } catch {
            throw CLIError.failure("cannot make the folder for running mounts: \(error)")
        }
        try checkPrivate(path)
        return RuntimeFolder(path: path)
    }

    /// The folder if it exists and is private to us; nil otherwise (then nothing of ours runs).
    static func existing(environment: [String: String]) -> RuntimeFolder? {
        guard let path = location(environment), (try? checkPrivate(path)) != nil else { return nil }
        return RuntimeFolder(path: path)
    }

    func file(_ name: String) -> String { path + "/" + name }

    static func location(_ environment: [String: String]) -> String? {
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/"), isPrivate(runtime) {
            return runtime + "/dotsafe"
        }
        let userFolder = "/run/user/\(SystemCall.userID)"
        if isPrivate(userFolder) { return userFolder + "/dotsafe" }
        if (try? SystemCall.status(sharedMemory))??.isFolder == true { return sharedMemory + "/dotsafe-\(SystemCall.userID)" }
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/dotsafe/run" }
        if let home = environment["HOME"], home.hasPrefix("/") { return home + "/.local/state/dotsafe/run" }
        return nil
    }

    /// The system's tmpfs that every user may make a folder in (sticky, like /tmp).
    static let sharedMemory = "/dev/shm"

    private static func isPrivate(_ path: String) -> Bool {
        guard let status = try? SystemCall.status(path) else { return false }
        return status.isFolder && status.owner == SystemCall.userID && status.permissions & 0o077 == 0
    }

    private static func checkPrivate(_ path: String) throws {
        guard let status = try? SystemCall.status(path), status.isFolder else {
            throw CLIError.failure("\(path) is not a folder")
        }
        guard status.owner == SystemCall.userID, status.permissions & 0o077 == 0 else {
            throw CLIError.failure("\(path) is not private to you (owner \(status.owner), mode \(String(status.permissions, radix: 8))): it must be yours with mode 700")
        }
    }
}
