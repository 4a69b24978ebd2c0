import Foundation
import Glibc
import SystemCalls
import VaultCrypto
import VaultStore

/// Names of the lock files in the runtime folder. They are keyed with a random value made once
/// per boot and kept in the folder (`boot-key`, with the boot's id), so that a lock file left
/// by a killed daemon names nothing after a reboot, and before one only to whoever can read the
/// folder (its owner and root) and also knows the pattern (R-DEN-4).
extension RuntimeFolder {
    static let bootKeyName = "boot-key"
    static let lockSuffix = ".lock"

    /// `prefix` and 32 hex digits: HKDF of `text` under this boot's key.
    func lockName(_ prefix: String, for text: [UInt8]) throws -> String {
        let digest = try HKDF.deriveBytes(ikm: try bootKey(), salt: [], info: Array("dotsafe lock name".utf8) + text, count: 16)
        return prefix + digest.map { String(format: "%02x", $0) }.joined() + Self.lockSuffix
    }

    /// This boot's key: read, or made when missing or from another boot. Made under a temporary
    /// name and linked, so that two processes starting at once agree on one key.
    func bootKey() throws -> [UInt8] {
        let boot = Self.bootID()
        for _ in 0..<3 {
            let stored = try PrivateFile.read(file(Self.bootKeyName))
            if let stored, stored.count == boot.count + 32, Array(stored.prefix(boot.count)) == boot {
                return Array(stored.suffix(32))
            }
            // From an earlier boot (the folder is on disk): its lock files name nothing now.
            if stored != nil { try PrivateFile.remove(file(Self.bootKeyName)) }
            let temporary = file(Self.bootKeyName + ".new-\(SystemCall.processID)")
            try PrivateFile.writeAtomically(temporary, boot + (try SystemRandom().bytes(32)))
            _ = link(temporary, file(Self.bootKeyName))
            _ = unlink(temporary)
        }
        throw CLIError.failure("cannot make the boot key in \(path)")
    }

    /// The kernel's id of this boot (random at each boot).
    static func bootID() -> [UInt8] {
        let id = (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)) ?? "no boot id"
        return Array(id.trimmingCharacters(in: .whitespacesAndNewlines).utf8)
    }

    /// Removes the lock files nobody holds: a daemon killed with -9 leaves its own. Files made
    /// in the last seconds are left alone: their maker may be between its open and its flock.
    func removeStaleLocks() {
        for name in (try? SystemCall.listFolder(path)) ?? [] where name.hasSuffix(Self.lockSuffix) && isSettled(name) {
            if let held = try? LockFile.take(file(name)) { held.release() }
        }
    }

    /// Whether the file `name` was made (or last changed) over ten seconds ago: a younger one
    /// may belong to a process between making it and using it (open and flock, bind and listen).
    func isSettled(_ name: String) -> Bool {
        let made = (try? FileManager.default.attributesOfItem(atPath: file(name)))?[.modificationDate] as? Date
        return made.map { $0.timeIntervalSinceNow < -10 } ?? false
    }
}
