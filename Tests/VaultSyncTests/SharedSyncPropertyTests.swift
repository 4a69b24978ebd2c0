import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultCrypto
import VaultFormat
@testable import VaultSync

/// Random sequences of share, withdraw, write and sync on both sides of a shared vault (A owns
/// it, B receives it; A withdraws grants to strangers, which B's device follows to the new keys,
/// FORMAT.md §14.8), seeded and reproducible. After each sync the other side syncs, then the first
/// again; then both trees are equal and hold exactly the contents written and not overwritten
/// since (every write has content of its own, so a lost write shows).
///
/// The suite runs a few short sequences; `tools/share-sync-trials` runs long ones:
/// `DOTSAFE_SHARE_SYNC_STEPS` (steps per sequence) and `DOTSAFE_SHARE_SYNC_SEEDS` (comma-separated).
@Suite(.serialized) struct SharedSyncPropertyTests {
    static var environment: [String: String] { ProcessInfo.processInfo.environment }
    static var steps: Int { environment["DOTSAFE_SHARE_SYNC_STEPS"].flatMap(Int.init) ?? 5 }
    static var seeds: [UInt64] {
        environment["DOTSAFE_SHARE_SYNC_SEEDS"].map { $0.split(separator: ",").compactMap { UInt64($0) } } ?? [1]
    }

    /// SplitMix64: the sequence a seed gives is the same on every run.
    struct Generator {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(bound))
        }
    }

    struct StepFailure: Error, CustomStringConvertible { let description: String }

    @Test func randomSequencesLoseNothing() throws {
        for seed in Self.seeds {
            do { try Self.run(seed: seed, steps: Self.steps) } catch {
                Issue.record("seed \(seed): \(error) (again: DOTSAFE_SHARE_SYNC_SEEDS=\(seed) DOTSAFE_SHARE_SYNC_STEPS=\(Self.steps))")
            }
        }
    }

    static func run(seed: UInt64, steps: Int) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let a = try SyncDevice("alice", seed: 0xA1), b = try SyncDevice("bob", seed: 0xB2)
        defer { a.finish(); b.finish() }
        let codeB = try b.vault.contactCode().code
        try b.reopen()
        let codeA = try a.vault.contactCode().code
        var random = Generator(state: seed)
        var shared: SyncDevice?
        var sharedWithB = false, joined = false
        var strangers: [ContactCode] = []
        var live = Set<String>(), written = 0
        let paths = ["one.txt", "two.txt", "docs/three.txt"]
        try a.makeFolder("docs")
        var log: [String] = []
        func say(_ step: String) { log.append(step) }

        func write(_ device: SyncDevice, _ who: String) throws {
            let path = paths[random.next(paths.count)]
            written += 1
            let content = "\(who) write \(written)"
            if let old = try? device.read(path) { live.remove(old) }
            if path.hasPrefix("docs/"), (try? device.id("docs")) == nil { return }
            try device.write(path, content)
            live.insert(content)
            say("\(who) writes \(path)")
        }
        /// `first` syncs, then `second`, then `first` again: both sides then hold one tree.
        func settle(_ first: SyncDevice, _ second: SyncDevice) throws {
            /// A failure says which device's call it was.
            func on<R>(_ device: SyncDevice, _ what: String, _ body: () throws -> R) throws -> R {
                do { return try body() } catch {
                    // What fsck finds there says whether a file is missing or does not open.
                    let found = (try? device.vault.check()).map { " (check: \($0.storageProblems), \($0.damagedItems))" } ?? ""
                    throw StepFailure(description: "\(device === a ? "A" : "B")'s \(what): \(error)\(found)")
                }
            }
            _ = try on(first, "sync") { try first.sync(remote) }
            _ = try on(second, "sync") { try second.sync(remote) }
            _ = try on(first, "second sync") { try first.sync(remote) }
            let treeA = try on(a, "tree") { try a.tree() }, treeB = try on(shared!, "tree") { try shared!.tree() }
            #expect(treeA == treeB, "seed \(seed), after \(log): both trees equal")
            // Every storage holds whole groups: grants to others included (the stranger shares).
            for folder in [a.folder, b.folder, remote.servedFolder!] {
                let count = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.count == 26 }.count
                #expect(count % 16 == 0, "seed \(seed), after \(log): \(count) files in \(folder)")
            }
            let contents = Set(treeA.filter { !$0.key.hasSuffix("/") }.values)
            #expect(contents == live, "seed \(seed), after \(log): lost \(live.subtracting(contents)), unexpected \(contents.subtracting(live))")
        }

        func step() throws {
            switch random.next(6) {
            case 0:
                // A shares: with B first, then with strangers (grants B's storage must hold too).
                let code = sharedWithB ? ContactCode(publicKey: try X25519.PrivateKey().publicKey) : codeB
                try a.vault.share(with: code)
                try a.reopen()
                if sharedWithB { strangers.append(code) }
                sharedWithB = true
                say("A shares")
            case 5:
                // A withdraws a stranger's grant: the vault gets new keys, B's grant is sealed again.
                guard !strangers.isEmpty else { return }
                try a.vault.unshare(with: strangers.removeFirst())
                try a.reopen()
                say("A withdraws")
            case 1:
                try write(a, "A")
            case 2:
                guard joined, let shared else { return }
                try write(shared, "B")
            case 3:
                try a.sync(remote)
                say("A syncs")
                if joined, let shared { try settle(a, shared) }
            default:
                say("B syncs")
                if !joined {
                    // Before A's grant is on the remote B finds nothing, and nothing changes.
                    let device = try SyncDevice("bob", sharedWith: b, by: codeA)
                    do {
                        try device.sync(remote)
                        shared = device
                        joined = true
                    } catch let error as SharingError {
                        try? device.vault.lock()
                        #expect(error == .noGrantOnRemote, "seed \(seed), after \(log)")
                        return
                    }
                }
                try settle(shared!, a)
            }
        }
        do { for _ in 0..<steps { try step() } } catch { throw StepFailure(description: "\(error), after \(log)") }
        // Every sequence ends shared and settled: what was written on either side is there.
        if !sharedWithB { try a.vault.share(with: codeB); try a.reopen(); say("A shares") }
        try a.sync(remote)
        if shared == nil {
            let device = try SyncDevice("bob", sharedWith: b, by: codeA)
            try device.sync(remote)
            shared = device
        }
        try settle(shared!, a)
        try shared?.vault.lock()
        #expect(try b.tree().count == 0, "seed \(seed): B's own vault is untouched")
    }
}
