import DotSafeTestSupport
@testable import VaultCore
import VaultStore

extension CrashTests.Crash {
    /// Runs `work` on a storage set to stop after `mutations` mutations, then leaves the storage
    /// as this kind of cut would: a process crash (or a failed operation, after which the vault
    /// goes on) keeps what was written, a power loss only what was synced. True when `work`
    /// returned before the cut.
    func cut(_ storage: SimulatedStorageFolder, afterMutations mutations: Int, _ work: () throws -> Void) throws -> Bool {
        storage.crash(afterMutations: mutations)
        var completed = false
        do {
            try work()
            completed = true
        } catch VaultError.store(.simulatedCrash) {
        }
        if self == .power { storage.powerLoss() } else { storage.processCrash() }
        return completed
    }
}
