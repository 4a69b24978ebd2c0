import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultFormat
import VaultStore

/// The storage's count of files around a sync (docs/FORMAT.md §3: in steps of 16 at every
/// instant; ADVERSARIES.md: the copier, the crash), for the tests that count one sync's
/// mutations and cut it at each (`JoinCountCutTests`, `GrantCountCutTests`,
/// `GrantJoinCountCutTests`).
enum StorageCount {
    /// The storage's files (names of the storage's form; a download folder is not one).
    static func files(_ folder: String) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: folder).filter(FileName.isWellFormed).count
    }

    /// The mutations of a counted run before which the storage held a count off a multiple of
    /// 16: "index (kind): files".
    static func uneven(_ counting: CutStorageFolder) -> [String] {
        zip(counting.done, counting.countsBefore).enumerated().filter { $0.element.1 % Format.groupSize != 0 }
            .map { "\($0.offset) (\($0.element.0)): \($0.element.1)" }
    }

    /// The grants `device`'s committed state lists: name in every storage → the name of its
    /// number in `device`'s storage.
    static func grants(_ device: SyncDevice) throws -> [String: String] { try grants(device.vault) }

    /// The same of `vault` (one a test opened apart, read-only say).
    static func grants(_ vault: Vault) throws -> [String: String] {
        try vault.state.withLock { state in
            var grants: [String: String] = [:]
            for special in state.committer.formatTwo?.specialFiles ?? [] where special.isGrantFile {
                grants[FileName.encode(special.name)] = try state.name(special.file.raw)
            }
            return grants
        }
    }

    /// The one grant `device`'s committed state lists (a test's only share): its name in every
    /// storage, and the name of its number in `device`'s storage.
    static func onlyGrant(_ device: SyncDevice) throws -> (name: String, place: String) {
        let grants = try grants(device)
        try #require(grants.count == 1, "\(grants)")
        let (name, place) = grants.first!
        return (name, place)
    }

    /// One sync of `device`, counted: the storage's files before each of its mutations are what
    /// a copy taken at any instant between two of them holds. `beforeChange` is told the
    /// mutations done before each change of the remote.
    static func countedSync(_ device: SyncDevice, _ remote: TestRemote,
                            beforeChange: @escaping (_ change: String, _ mutations: Int) -> Void = { _, _ in }) throws -> CutStorageFolder {
        let counting = CutStorageFolder(try Storage.open(at: device.folder), cutAt: nil, countsFiles: true)
        try device.sync(remote, storage: counting) { beforeChange($0, counting.mutations) }
        return counting
    }

    /// `rounds` rounds of a mount on `device` (`SyncDevice.mountRounds`), counted as `countedSync`.
    static func countedMountRounds(_ device: SyncDevice, _ remote: TestRemote, _ rounds: Int) throws -> CutStorageFolder {
        let counting = CutStorageFolder(try Storage.open(at: device.folder), cutAt: nil, countsFiles: true)
        try device.mountRounds(remote, rounds, storage: counting)
        return counting
    }

    /// `run` cut at each of `cuts`: whole groups after the cut and after the next sync, and
    /// whatever `more` checks there; returns what went wrong.
    static func cutEach(_ run: inout CutSyncRun, _ cuts: some Sequence<Int>,
                        more: ((_ place: String) throws -> Void)? = nil) throws -> [String] {
        let folder = run.device.folder
        run.inspect = { place in
            let files = try Self.files(folder)
            #expect(files % Format.groupSize == 0, "\(place): \(files) files")
            try more?(place)
        }
        var failures: [String] = []
        for cut in cuts { failures += try run.cut(at: cut, seeing: true) }
        return failures
    }
}
