import Testing
import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// R-FS-2, docs/FORMAT.md §9.2–9.3: a crash at any point of a commit leaves the state before it
/// or after it, a vault that opens and keeps working, and no stray file.
@Suite struct CrashTests {
    static let payload = Format.payloadSize

    /// The workload: each step changes an open vault, then it commits. Together they create,
    /// write small and large, rename (also over an existing name), delete, truncate across the
    /// pack/chunk boundary, make new groups and release them.
    static let steps: [@Sendable (Vault) throws -> Void] = [
        { vault in  // 0: the first commit of a new vault
            try vault.create(.folder, in: Vault.rootID, named: Array("dir".utf8), mode: 0o755)
            try vault.makeFile("s", TestVaults.content(1000, seed: 1))
            try vault.makeFile("big", streamContent(payload + 5000, seed: 2))
            try vault.create(.symlink, in: Vault.rootID, named: Array("link".utf8), mode: 0o777, target: Array("s".utf8))
        },
        { vault in  // 1: small writes everywhere
            try vault.makeFile("n", [1, 2, 3], in: try vault.id(at: "dir"))
            try vault.write(try vault.id(at: "big"), offset: 100_000, bytes: streamContent(2000, seed: 3))
            try vault.write(try vault.id(at: "s"), offset: 1000, bytes: TestVaults.content(500, seed: 4))
        },
        { vault in  // 2: a rename and a large file: new groups
            try vault.rename(Array("s".utf8), in: Vault.rootID, to: Array("renamed".utf8), in: try vault.id(at: "dir"))
            try vault.makeFile("large", streamContent(30 * payload + 77, seed: 5))
        },
        { vault in  // 3: deletions free whole groups, which are released
            try vault.remove(Array("big".utf8), from: Vault.rootID)
            try vault.truncate(try vault.id(at: "large"), size: 100)
        },
        { vault in  // 4: rename over an existing name, new empty and two-chunk files
            let dir = try vault.id(at: "dir")
            try vault.rename(Array("renamed".utf8), in: dir, to: Array("n".utf8), in: dir)
            try vault.remove(Array("link".utf8), from: Vault.rootID)
            try vault.makeFile("t", [])
            try vault.makeFile("u", streamContent(payload + 1, seed: 6))
        },
    ]

    static func random(step: Int) -> DeterministicRandom { DeterministicRandom(seed: [UInt8](repeating: UInt8(truncatingIfNeeded: 17 * step + 1), count: 32)) }

    static func open(_ storage: SimulatedStorageFolder, step: Int) throws -> Vault {
        try TestVaults.open(storage, random: random(step: step))
    }

    static func storage(_ files: [String: [UInt8]]) -> SimulatedStorageFolder {
        let storage = SimulatedStorageFolder()
        for (name, bytes) in files { storage.tamper(name, with: bytes) }
        return storage
    }

    /// The storage and the vault's tree before each step and after the last, from a run
    /// without crashes (each step in its own session: open, change, commit, lock).
    struct CleanRun: Sendable {
        var storages: [[String: [UInt8]]] = []
        var trees: [Tree] = []

        init() throws { try self.init(seed: 99, steps: CrashTests.steps, open: { try CrashTests.open($0, step: $1) }) }

        /// `steps` on a storage of covers made from `seed`, each opened by `open(storage, step)`.
        init(seed: UInt8, steps: [@Sendable (Vault) throws -> Void], open: (SimulatedStorageFolder, Int) throws -> Vault) throws {
            let storage = try TestVaults.storage(random: DeterministicRandom(seed: [UInt8](repeating: seed, count: 32)))
            storages.append(storage.snapshot)
            trees.append([:])
            for (step, apply) in steps.enumerated() {
                let vault = try open(storage, step)
                try apply(vault)
                try vault.commit()
                trees.append(try vault.tree())
                try vault.lock()
                try checkStorageInvariants(storage)
                storages.append(storage.snapshot)
            }
        }
    }

    static let clean = Result { try CleanRun() }

    /// The workload covers what it claims to: new groups at step 2, released at step 3.
    @Test func workloadMakesAndReleasesGroups() throws {
        let run = try Self.clean.get()
        let counts = run.storages.map(\.count)
        #expect(counts[1] == counts[0] + 16)
        #expect(counts[3] >= counts[2] + 32)
        #expect(counts[4] < counts[3])
        #expect(run.trees[5]["dir/n"] == .file(mode: 0o644, content: TestVaults.content(1000, seed: 1) + TestVaults.content(500, seed: 4)))
    }

    enum Crash: String, Sendable, CaseIterable {
        /// The process dies (SIGKILL): what it wrote stays, synced or not.
        case process
        /// The power goes: whatever was not synced is lost.
        case power
        /// Not a crash: one storage operation fails (a full disk, an I/O error) and the same vault
        /// goes on; its next commit must store exactly the state in memory.
        case failure
    }

    struct Case: Sendable, CustomStringConvertible {
        var step: Int
        var crash: Crash
        /// The crashed commit is the session's second: the first (a change of the root folder's
        /// ctime only) leaves an open pack, covers just refreshed, files freed in this session.
        var secondCommit = false
        var description: String { "step \(step), \(crash) crash\(secondCommit ? ", second commit of the session" : "")" }
    }

    static let cases = (0..<steps.count).flatMap { step in Crash.allCases.map { Case(step: step, crash: $0) } }
        + (1..<steps.count).map { Case(step: $0, crash: .power, secondCommit: true) }

    /// Opens the storage before `step`, makes the first commit of the session if asked, and
    /// applies the step.
    static func prepare(_ storage: SimulatedStorageFolder, step: Int, secondCommit: Bool) throws -> Vault {
        let vault = try open(storage, step: step)
        if secondCommit {
            try vault.setAttributes(Vault.rootID, mode: 0o755)
            try vault.commit()
        }
        try steps[step](vault)
        return vault
    }

    @Test(arguments: cases)
    func crashAtEveryMutationOfACommit(_ testCase: Case) throws {
        let run = try Self.clean.get()
        let step = testCase.step
        let before = run.trees[step], after = run.trees[step + 1]
        var countBefore = run.storages[step].count, countAfter = run.storages[step + 1].count
        if testCase.secondCommit {
            // The first commit may place its page in a new group: count from a run without crash.
            let storage = Self.storage(run.storages[step])
            let vault = try Self.prepare(storage, step: step, secondCommit: true)
            countBefore = storage.snapshot.count
            try vault.commit()
            countAfter = storage.snapshot.count
            if testCase.crash == .power {
                // Chunks written behind before the commit were never synced: a power cut loses them.
                let probe = Self.storage(run.storages[step])
                _ = try Self.prepare(probe, step: step, secondCommit: true)
                probe.powerLoss()
                countBefore = probe.snapshot.count
            }
        }

        var mutations = 0
        var completed = false
        while !completed {
            let storage = Self.storage(run.storages[step])
            let vault = try Self.prepare(storage, step: step, secondCommit: testCase.secondCommit)
            completed = try testCase.crash.cut(storage, afterMutations: mutations) { try vault.commit() }
            if testCase.crash == .failure {
                try vault.lock()
                let reopened = try Self.open(storage, step: step + 100)
                expectSame(try reopened.tree(), after, "step \(step), failure after \(mutations) mutations, then lock")
                try reopened.lock()
                try checkStorageInvariants(storage)
                // The retried commit may place a page in a group that the first attempt would have
                // released (the failed attempt's page held the lowest free file at the time): one
                // group more, released by a later commit. Never a file the vault does not list.
                let count = storage.snapshot.count
                #expect(count == countAfter || count == countAfter + 16,
                        "step \(step), failure after \(mutations) mutations: \(count) files, a clean run has \(countAfter)")
                mutations += 1
                continue
            }
            try check(storage, step: step, crashedAfter: mutations, completed: completed,
                      before: before, after: after, countBefore: countBefore, countAfter: countAfter)
            mutations += 1
            try #require(mutations < 1000, "the commit never completed")
        }
        // Every mutation point of the commit was tried (data, page, syncs, root at least).
        #expect(mutations > 4)
    }

    /// After a crash `crashedAfter` mutations into the commit: the vault opens with the tree of
    /// before or after the commit (after, if the commit returned), the storage keeps its
    /// invariants and holds exactly the files a clean run has, and the vault keeps working.
    private func check(_ storage: SimulatedStorageFolder, step: Int, crashedAfter: Int, completed: Bool,
                       before: Tree, after: Tree, countBefore: Int, countAfter: Int) throws {
        let context = "step \(step), crash after \(crashedAfter) mutations"
        let vault = try Self.open(storage, step: step + 100)
        let tree = try vault.tree()
        #expect(tree == before || tree == after, "\(context): neither before nor after: \(treeDifference(tree, after))")
        if completed { expectSame(tree, after, "\(context): the commit returned") }
        try vault.lock()
        try checkStorageInvariants(storage)
        #expect(storage.snapshot.count == (tree == after ? countAfter : countBefore), "\(context): stray or missing files")

        // The vault works on: the lost step is made again and commits, or a further change does.
        let again = try Self.open(storage, step: step + 200)
        if tree == before && tree != after { try Self.steps[step](again) } else { try again.makeFile("later", [4]) }
        try again.lock()
        let final = try Self.open(storage, step: step + 300)
        var expected = after
        if tree == after { expected["later"] = .file(mode: 0o644, content: [4]) }
        expectSame(try final.tree(), expected, "\(context): after the next commit")
        try final.lock()
        try checkStorageInvariants(storage)
    }
}
