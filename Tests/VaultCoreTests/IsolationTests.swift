import DotSafeTestSupport
import Testing
import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// R-BLK-5, R-BLK-6, R-SEC-1: vaults in one storage never touch each other's files or the
/// storage's covers, whatever one of them does.
@Suite struct IsolationTests {
    static let payload = Format.payloadSize

    @Test func heavyChurnInOneVaultLeavesTheOtherAndTheCoversAlone() throws {
        // Reproducible: the same storage, cover counts and placements at every run.
        let random = DeterministicRandom(seed: [UInt8](repeating: 21, count: 32))
        let storage = try TestVaults.storage(random: random)
        let covers = storage.snapshot

        let b = try TestVaults.open(storage, seed: 2, random: random)
        try b.makeFile("b-small", TestVaults.content(1000, seed: 1))
        try b.makeFile("b-big", streamContent(3 * Self.payload + 3, seed: 2))
        let folder = try b.create(.folder, in: Vault.rootID, named: Array("b-folder".utf8), mode: 0o700)
        for i in 0..<20 { try b.makeFile("b-\(i)", TestVaults.content(i * 37, seed: UInt64(i)), in: folder) }
        try b.lock()
        let bFiles = storage.snapshot.filter { covers[$0.key] == nil }
        #expect(bFiles.count == 16)
        let bTree = try TestVaults.open(storage, seed: 2, readOnly: true).tree()

        var rng = SeededGenerator(seed: 77)
        var model: [String: [UInt8]] = [:]
        var operations = 0, released = 0
        var lastCount = storage.snapshot.count
        for session in 0..<8 {
            let a = try TestVaults.open(storage, seed: 1, random: random)
            if session % 3 == 2 {
                // A large file: new groups, freed and released by the next session's deletion.
                let big = streamContent(40 * Self.payload, seed: UInt8(session))
                try a.makeFile("a-big", big)
                model["a-big"] = big
            } else if model["a-big"] != nil {
                try a.remove(Array("a-big".utf8), from: Vault.rootID)
                model["a-big"] = nil
                try a.commit()
            }
            for _ in 0..<400 {
                operations += 1
                let name = "a-\(Int.random(in: 0..<300, using: &rng))"
                switch Int.random(in: 0..<10, using: &rng) {
                case 0..<5:
                    let content = TestVaults.content(Int.random(in: 0...3000, using: &rng), seed: rng.next())
                    if model[name] == nil {
                        try a.makeFile(name, content)
                    } else {
                        let id = try a.id(at: name)
                        try a.truncate(id, size: 0)
                        try a.write(id, offset: 0, bytes: content)
                    }
                    model[name] = content
                case 5..<8:
                    guard model[name] != nil else { continue }
                    try a.remove(Array(name.utf8), from: Vault.rootID)
                    model[name] = nil
                case 8:
                    guard var content = model[name] else { continue }
                    let more = TestVaults.content(Int.random(in: 1...300, using: &rng), seed: rng.next())
                    try a.write(try a.id(at: name), offset: UInt64(content.count), bytes: more)
                    content += more
                    model[name] = content
                default:
                    try a.commit()
                }
            }
            try a.lock()
            // Groups freed by the deletion are released as the churn moves the last live files out.
            if storage.snapshot.count < lastCount { released += 1 }
            lastCount = storage.snapshot.count
            try checkStorageInvariants(storage)
            // After every session: B's files and the covers are byte for byte what they were.
            let now = storage.snapshot
            let coversKept = covers.allSatisfy { now[$0.key] == $0.value }
            let bKept = bFiles.allSatisfy { now[$0.key] == $0.value }
            #expect(coversKept, "a cover changed in session \(session)")
            #expect(bKept, "a file of vault B changed in session \(session)")
        }
        #expect(operations >= 3000)
        #expect(released >= 2, "groups were released (the file count went down) in \(released) sessions")

        // Every file in the storage is a cover, B's, or A's by name.
        let aNumbers = try FileNumbers(storage, seed: 1, count: 4096)
        for name in storage.snapshot.keys where covers[name] == nil && bFiles[name] == nil {
            #expect(aNumbers.number(name) != nil, "\(name) belongs to nobody")
        }
        let bAgain = try TestVaults.open(storage, seed: 2)
        expectSame(try bAgain.tree(), bTree, "vault B")
        try bAgain.lock()
        let aAgain = try TestVaults.open(storage, seed: 1)
        let aTree = try aAgain.tree()
        #expect(aTree.count == model.count)
        for (name, content) in model { #expect(aTree[name] == .file(mode: 0o644, content: content), "A's \(name)") }
        try aAgain.lock()
        try checkStorageInvariants(storage)
    }
}
