import Glibc
import SystemCalls

/// The user's private folder for running mounts: the mount guards' lock files, the daemons'
/// lock channels and the registry of open mounts (`MountRecord`). Mode 0700 and ours, so no
/// other user can list it, take a name in it or connect to a socket in it (R-DEN-4).
///
/// Where, in memory (tmpfs) whenever the system has one, so that nothing of a mount outlives
/// a power cut: `$XDG_RUNTIME_DIR/dotsafe`; else `/run/user/UID/dotsafe` when that folder exists
/// and is ours; else `/dev/shm/dotsafe-UID` (made 0700; refused if someone else made it); only
/// where there is no /dev/shm, `${XDG_STATE_HOME:-~/.local/state}/dotsafe/run` on disk.
///
/// On disk, what a mount writes there (its record with the storage path and start time, lock
/// files, the boot key) would outlive it, so each process that uses the folder holds it with a
/// shared `FolderLock`: the last one out (`leave`) empties and removes it (and `dotsafe`, its
/// parent, when that is empty), and the first one in after a killed daemon empties it.
struct RuntimeFolder {
    let path: String
    /// This process's hold on a folder on disk; nil for a folder in memory.
    let diskUse: FolderLock?

    init(path: String, diskUse: FolderLock? = nil) {
        self.path = path
        self.diskUse = diskUse
    }

    /// The folders that the choice looks at besides the environment (the tests' own).
    struct Places {
        var runUser = "/run/user/\(SystemCall.userID)"
        /// The system's tmpfs that every user may make a folder in (sticky, like /tmp).
        var sharedMemory = "/dev/shm"
    }

    struct Location: Equatable {
        var path: String
        var onDisk: Bool
    }

    /// The folder, made if missing; a folder that is not private to us is refused. Call `leave`
    /// when done with it.
    static func open(environment: [String: String], places: Places = Places()) throws -> RuntimeFolder {
        guard let location = location(environment, places: places) else {
            throw CLIError.failure("no folder for running mounts: set XDG_RUNTIME_DIR or HOME")
        }
        guard location.onDisk else {
            try make(location.path)
            return RuntimeFolder(path: location.path)
        }
        do {
            // A last user may remove the folder between our making it and our lock: again.
            for _ in 0..<10 {
                try make(location.path)
                guard let use = try FolderLock.share(location.path) else { continue }
                // Nobody else uses it: what is in it was left by a process that was killed.
                if use.takeAlone() { removeContents(location.path) }
                // Alone or not, the lock is to be shared again (a failed takeAlone dropped it).
                guard try use.shareAgain() else { use.release(); continue }
                return RuntimeFolder(path: location.path, diskUse: use)
            }
        } catch let error as CLIError {
            throw error
        } catch {
            throw CLIError.failure("cannot use the folder for running mounts \(location.path): \(error)")
        }
        throw CLIError.failure("cannot use the folder for running mounts \(location.path): it keeps being removed")
    }

    /// The folder if it exists and is private to us; nil otherwise (then nothing of ours runs).
    static func existing(environment: [String: String], places: Places = Places()) -> RuntimeFolder? {
        guard let path = location(environment, places: places)?.path, (try? checkPrivate(path)) != nil else { return nil }
        return RuntimeFolder(path: path)
    }

    func file(_ name: String) -> String { path + "/" + name }

    /// The folder in the system's tmpfs that every process of this user finds whatever its
    /// environment, when it is not `folder`: a mount guard is taken there too, so that a mount
    /// started without XDG_RUNTIME_DIR (cron, an fstab line at boot) and one from a login
    /// session see each other. Nil without /dev/shm, and when another user made that folder
    /// first (anyone may: /dev/shm is sticky like /tmp): they must not stop this user's mounts.
    static func everyEnvironment(besides folder: RuntimeFolder, places: Places = Places()) -> RuntimeFolder? {
        guard (try? SystemCall.status(places.sharedMemory))??.isFolder == true else { return nil }
        let path = places.sharedMemory + "/dotsafe-\(SystemCall.userID)"
        guard path != folder.path, (try? make(path)) != nil else { return nil }
        return RuntimeFolder(path: path)
    }

    /// Done with the folder. On disk, the last process out empties and removes it, so nothing
    /// of a mount stays on the disk after it; in memory nothing happens (a reboot clears it).
    func leave() {
        guard let diskUse else { return }
        if diskUse.takeAlone() {
            Self.removeContents(path)
            _ = rmdir(path)
            // `dotsafe` under the state folder holds nothing else of ours; gone when empty.
            _ = rmdir(String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)]))
        }
        diskUse.release()
    }

    static func location(_ environment: [String: String], places: Places = Places()) -> Location? {
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/"), isPrivate(runtime) {
            return Location(path: runtime + "/dotsafe", onDisk: false)
        }
        if isPrivate(places.runUser) { return Location(path: places.runUser + "/dotsafe", onDisk: false) }
        if (try? SystemCall.status(places.sharedMemory))??.isFolder == true {
            return Location(path: places.sharedMemory + "/dotsafe-\(SystemCall.userID)", onDisk: false)
        }
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return Location(path: state + "/dotsafe/run", onDisk: true) }
        if let home = environment["HOME"], home.hasPrefix("/") { return Location(path: home + "/.local/state/dotsafe/run", onDisk: true) }
        return nil
    }

    /// Makes the folder and any missing parents (0700), and checks that it is private to us.
    private static func make(_ path: String) throws {
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
    }

    /// Removes every file in the folder (records, sockets, lock files, the boot key).
    private static func removeContents(_ path: String) {
        for name in (try? SystemCall.listFolder(path)) ?? [] { try? SystemCall.unlink(path + "/" + name) }
    }

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
