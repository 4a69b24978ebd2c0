import Foundation
@testable import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// A storage in memory with covers, and secrets from a fixed pattern key (no PBKDF2: fast).
struct TestVaults {
    static let onDemandEverywhere = ProcessInfo.processInfo.environment["DOTSAFE_TEST_ON_DEMAND"] == "1"
    /// `DOTSAFE_TEST_INDEX_CACHE=N`: those opens keep N leaves (`tools/test-on-demand 2`).
    static let indexCacheEverywhere = ProcessInfo.processInfo.environment["DOTSAFE_TEST_INDEX_CACHE"].flatMap { Int($0) }

    static func storage(random: any RandomSource = SystemRandom()) throws -> SimulatedStorageFolder {
        let storage = SimulatedStorageFolder()
        try Storage.addCovers(to: storage, random: random)
        return storage
    }

    static func secrets(_ seed: UInt8 = 1) throws -> VaultSecrets {
        try VaultSecrets(patternKey: SecretBytes(copying: [UInt8](repeating: seed, count: 32)))
    }

    static func open(_ storage: any StorageFolder, seed: UInt8 = 1, cacheBytes: Int = 8 << 20,
                     random: any RandomSource = SystemRandom(), clock: any VaultClock = ManualClock(),
                     readOnly: Bool = false, format: StorageFormat = .two, fanOut: PageTable.FanOut = .standard,
                     indexThree: Bool = false, onDemand: Bool? = nil, indexCache: Int? = nil) throws -> Vault {
        var options = Vault.Options(readOnly: readOnly, cacheBytes: cacheBytes)
        options.indexThree = indexThree
        // `DOTSAFE_TEST_ON_DEMAND=1`: every index-3 open of the tests holds its index in part
        // (`tools/test-on-demand`), so that each path faults.
        options.loadsOnDemand = onDemand ?? (indexThree && onDemandEverywhere)
        options.indexCacheLeaves = indexCache ?? indexCacheEverywhere
        options.newVaultFormat = format
        options.indexFanOut = fanOut
        // Format 1 asked for: a format-1 vault stays format 1 (as a release without the upgrade).
        options.upgradesFormatOne = format == .two
        return try Vault.open(storage: storage, secrets: secrets(seed), options: options, random: random, clock: clock)
    }

    /// Bytes that differ at every position and between calls with other seeds.
    static func content(_ count: Int, seed: UInt64 = 7) -> [UInt8] {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        return (0..<count).map { _ in
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return UInt8(truncatingIfNeeded: state)
        }
    }
}

/// The invariants every storage keeps after every operation (R-BLK-4, R-BLK-5).
func checkStorageInvariants(_ storage: SimulatedStorageFolder) throws {
    let snapshot = storage.snapshot
    for (name, bytes) in snapshot {
        guard bytes.count == Format.fileSize else { throw InvariantError("file \(name) has \(bytes.count) bytes") }
        guard FileName.isWellFormed(name) else { throw InvariantError("file name \(name)") }
    }
    guard snapshot.count % Format.groupSize == 0 else { throw InvariantError("\(snapshot.count) files, not a multiple of 16") }
}

struct InvariantError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension Vault {
    @discardableResult
    func makeFile(_ name: String, _ bytes: [UInt8], in parent: UInt64 = Vault.rootID) throws -> UInt64 {
        let id = try create(.file, in: parent, named: Array(name.utf8), mode: 0o644)
        if !bytes.isEmpty { try write(id, offset: 0, bytes: bytes) }
        return id
    }

    func readAll(_ name: String, in parent: UInt64 = Vault.rootID) throws -> [UInt8] {
        let id = try lookup(parent, Array(name.utf8))
        return try read(id, offset: 0, count: Int(try attributes(id).size))
    }
}
