import DotSafeTestSupport
import Dispatch
import Foundation
import Testing
import VaultCore
import VaultStore

/// Two devices whose `dotsafe sync` start at the same moment against one remote (rclone has no
/// compare-and-swap; FORMAT.md §13.11): each either publishes or is refused with its one line
/// (`raced`, both when each reads back the other's root), and after each syncs again as the
/// line says, both hold every change of both.
@Suite struct SyncRaceTests {
    typealias Sync = SyncCommandTests
    typealias Failure = SyncFailureTests

    static let raced = "dotsafe: another device synced to the remote meanwhile: this device's changes are kept here; sync again to merge them\n"

    /// Writes `text` as the whole of `name` in the vault's top folder (made when missing).
    static func put(_ name: String, _ text: String, into storage: String, _ environment: [String: String]) throws {
        let vault = try Vault.open(storage: try Storage.open(at: storage), secrets: try Sync.secrets(environment), options: .likeDotsafe())
        let id = try (try? vault.lookup(Vault.rootID, Array(name.utf8))) ?? vault.create(.file, in: Vault.rootID, named: Array(name.utf8), mode: 0o644)
        try vault.truncate(id, size: 0)
        try vault.write(id, offset: 0, bytes: Array(text.utf8))
        try vault.lock()
    }

    /// Runs the two devices' syncs at once (each in its own runtime folder, as on two machines).
    static func syncAtOnce(_ runs: [(storage: String, device: String)], remote: String, _ environments: [[String: String]]) -> [CLIRun] {
        let results = ResultBox(count: runs.count)
        let start = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        for (index, run) in runs.enumerated() {
            let environment = environments[index]
            group.enter()
            Thread.detachNewThread {
                start.wait()
                results.set(index, Sync.sync(run.storage, remote, environment, device: run.device))
                group.leave()
            }
        }
        Thread.sleep(forTimeInterval: 0.2)
        for _ in runs { start.signal() }
        group.wait()
        return results.values
    }

    /// Each device's storage and runtime folder, as on two machines.
    static func twoDevices(_ base: String, _ environment: [String: String]) -> (devices: [(storage: String, device: String)],
                                                                                  environments: [[String: String]]) {
        let devices = [(storage: base + "/laptop", device: "laptop"), (storage: base + "/desktop", device: "desktop")]
        let environments = devices.map { device in
            var own = environment
            own["XDG_RUNTIME_DIR"] = base + "/run-" + device.device
            try? FileManager.default.createDirectory(atPath: own["XDG_RUNTIME_DIR"]!, withIntermediateDirectories: true,
                                                     attributes: [.posixPermissions: 0o700])
            return own
        }
        return (devices, environments)
    }

    /// Each device's files by name, as text.
    static func held(_ devices: [(storage: String, device: String)], _ environment: [String: String]) throws -> [String: [String: String]] {
        var held: [String: [String: String]] = [:]
        for device in devices {
            held[device.device] = try Failure.files(device.storage, environment).mapValues { String(decoding: $0, as: UTF8.self) }
        }
        return held
    }

    /// Whatever the timing, nothing is lost. Started at once, the two syncs can still meet the
    /// race of SYNC-DESIGN §3.4 step 7 that rclone cannot close: the loaded machine of a full run
    /// (530 s where a quiet one takes 26 s) made it twice, and its outcome, the desktop's round-1
    /// edit as a conflict copy beside the laptop's round-2 edit, failed the exact expectation
    /// before. Its timing is not controlled here, since the race of real syncs is what this test
    /// is for: a round's result is either exactly the expected files, or the one outcome the design
    /// allows after a sync that said the warning of a merge without a base (`RaceRound`: the
    /// edited file kept twice, both texts, the copy named for its text's writer). That outcome is
    /// staged, so seen every time, by the test after this one.
    @Test(arguments: [TestRemote.Kind.local, .webdav])
    func twoSyncsStartedAtOnceBothFinishAndLoseNothing(kind: TestRemote.Kind) throws {
        let (base, environment) = try InitAndKeyringCommandTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let remote = try TestRemote(kind)
        defer { remote.finish() }
        let (devices, environments) = Self.twoDevices(base, environment)
        #expect(CLIRun(["init", devices[0].storage], environment: environment).status == 0)
        try Self.put("shared.txt", "from the start", into: devices[0].storage, environment)
        try #require(Sync.sync(devices[0].storage, remote.path, environment, device: "laptop").status == 0)
        try #require(Sync.sync(devices[1].storage, remote.path, environment, device: "desktop").status == 0)

        var agreed = ["shared.txt": "from the start"], authors = ["from the start": "laptop"]
        for round in 1...3 {
            // Offline changes on both sides: a new file each, and an edit of the shared file by one.
            var added: [String: String] = [:], edit = ""
            for (index, device) in devices.enumerated() {
                try Self.put("\(device.device)-\(round).txt", "round \(round) of the \(device.device)", into: device.storage, environment)
                added["\(device.device)-\(round).txt"] = "round \(round) of the \(device.device)"
                if index == round % 2 {
                    edit = "edited in round \(round) by the \(device.device)"
                    try Self.put("shared.txt", edit, into: device.storage, environment)
                    authors[edit] = device.device
                }
            }
            var runs = Self.syncAtOnce(devices, remote: remote.path, environments)
            for result in runs {
                #expect(result.status == 0 && result.standardOutput.hasPrefix("synced: ") || result.status == 1 && result.standardError == Self.raced,
                        "round \(round): \(result)")
            }
            // Both may be refused: each root read back beside the other's (one slot each) is not
            // taken as up; the next syncs publish one of them and merge.
            // Each syncs again, as the line says, until neither has anything to send.
            for index in [0, 1, 0, 1] {
                let device = devices[index]
                let again = Sync.sync(device.storage, remote.path, environments[index], device: device.device)
                #expect(again.status == 0 && (again.standardError.isEmpty || again.standardError == RaceRound.warning),
                        "round \(round), \(device.device) again: \(again)")
                runs.append(again)
            }
            let held = try Self.held(devices, environment)
            let outcome = RaceRound(before: agreed, added: added, shared: "shared.txt", edit: edit, authors: authors,
                                    warnings: runs.filter { $0.standardError.hasSuffix(RaceRound.warning) }.count)
            let problems = outcome.problems(held)
            #expect(problems.isEmpty, "round \(round): \(problems); the syncs: \(runs)")
            agreed = held["laptop"] ?? [:]
        }
        for device in devices { Failure.expectClean(device.storage, environment) }
    }

    /// The race of SYNC-DESIGN §3.4 step 7 that no check closes, staged as the full run met it:
    /// the laptop checks the remote slots, then its root write waits (an rclone whose first `rcat`
    /// holds) while the desktop's whole sync publishes and reads its root back; then the
    /// laptop's root lands over it. Both said `synced`; the desktop's next sync merges without a
    /// base and says so, and the desktop's edit of shared.txt, which the laptop edited again,
    /// comes back as its conflict copy beside the laptop's edit: what `RaceRound` allows, and
    /// nothing lost.
    @Test func aRootLandingAfterTheOthersReadBackKeepsTheRacedEditTwice() throws {
        let (base, environment) = try InitAndKeyringCommandTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (devices, environments) = Self.twoDevices(base, environment)
        let laptop = devices[0].storage, desktop = devices[1].storage
        func sync(_ index: Int) -> CLIRun { Sync.sync(devices[index].storage, remote.path, environments[index], device: devices[index].device) }
        #expect(CLIRun(["init", laptop], environment: environment).status == 0)
        try Self.put("shared.txt", "from the start", into: laptop, environment)
        try #require(sync(0).status == 0 && sync(1).status == 0)
        try Self.put("shared.txt", "edited by the desktop", into: desktop, environment)
        try #require(sync(1).status == 0 && sync(0).status == 0)
        try Self.put("shared.txt", "edited by the laptop", into: laptop, environment)
        try Self.put("laptop.txt", "from the laptop", into: laptop, environment)
        try Self.put("desktop.txt", "from the desktop", into: desktop, environment)

        let held = base + "/rcat-held", released = base + "/rcat-released"
        var waiting = environments[0]
        waiting["PATH"] = try Failure.rclone(base, script: """
            if [ "$1" = rcat ] && [ ! -e '\(held)' ]; then
                : > '\(held)'
                while [ ! -e '\(released)' ]; do sleep 0.05; done
            fi
            exec /usr/bin/rclone "$@"
            """)
        let holding = waiting
        let results = ResultBox(count: 1)
        let done = DispatchSemaphore(value: 0)
        let remotePath = remote.path
        Thread.detachNewThread {
            results.set(0, Sync.sync(laptop, remotePath, holding, device: "laptop"))
            done.signal()
        }
        let reached = waitFor(seconds: 300) { FileManager.default.fileExists(atPath: held) }
        let desktopFirst = sync(1)
        FileManager.default.createFile(atPath: released, contents: nil)
        done.wait()
        try #require(reached, "the laptop's sync never wrote its root: \(results.values)")
        #expect(desktopFirst.status == 0 && desktopFirst.standardError.isEmpty, "\(desktopFirst)")
        let laptopFirst = results.values[0]
        #expect(laptopFirst.status == 0 && laptopFirst.standardError.isEmpty, "\(laptopFirst)")

        let merge = sync(1)
        #expect(merge.status == 0 && merge.standardOutput.hasPrefix("synced: ") && merge.standardError == RaceRound.warning, "\(merge)")
        let after = sync(0)
        #expect(after.status == 0 && after.standardError.isEmpty, "\(after)")
        let files = try Self.held(devices, environment)
        let outcome = RaceRound(before: ["shared.txt": "edited by the desktop"],
                                added: ["laptop.txt": "from the laptop", "desktop.txt": "from the desktop"],
                                shared: "shared.txt", edit: "edited by the laptop",
                                authors: ["from the start": "laptop", "edited by the desktop": "desktop", "edited by the laptop": "laptop"],
                                warnings: [desktopFirst, laptopFirst, merge, after].filter { $0.standardError.hasSuffix(RaceRound.warning) }.count)
        #expect(outcome.problems(files).isEmpty, "\(outcome.problems(files))")
        // The outcome of the full run: the raced edit kept twice, the desktop's as its copy.
        let copies = (files["laptop"] ?? [:]).filter { $0.key.hasPrefix("shared.conflict-desktop-") }
        #expect(files["laptop"]?["shared.txt"] == "edited by the laptop" && Array(copies.values) == ["edited by the desktop"], "\(files)")
        for storage in [laptop, desktop] { Failure.expectClean(storage, environment) }
    }

    /// A root slot that another device writes at the same instant as this device's (a remote that
    /// writes in place: rclone's local backend, its WebDAV server): rclone's hash check after
    /// `rcat` fails, "corrupted on transfer" (seen once in a full run of the test above). The
    /// slot then holds the other device's root, so this is the race of FORMAT.md §13.11, told as
    /// such; the next syncs merge. Played by an rclone whose first `rcat` (the desktop's root)
    /// waits while the laptop syncs, then fails as the real one did.
    @Test func aRootWriteThatRcloneSawChangeIsARace() throws {
        let (base, environment) = try InitAndKeyringCommandTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let laptop = base + "/laptop", desktop = base + "/desktop"
        #expect(CLIRun(["init", laptop], environment: environment).status == 0)
        try Self.put("shared.txt", "from the start", into: laptop, environment)
        try #require(Sync.sync(laptop, remote.path, environment, device: "laptop").status == 0)
        try #require(Sync.sync(desktop, remote.path, environment, device: "desktop").status == 0)
        try Self.put("laptop.txt", "from the laptop", into: laptop, environment)
        try Self.put("desktop.txt", "from the desktop", into: desktop, environment)

        let held = base + "/rcat-held", released = base + "/rcat-released"
        var withScript = environment
        withScript["PATH"] = try Failure.rclone(base, script: """
            if [ "$1" = rcat ] && [ ! -e '\(held)' ]; then
                cat > /dev/null
                : > '\(held)'
                while [ ! -e '\(released)' ]; do sleep 0.05; done
                echo '2026/12/03 12:00:00 ERROR : slot: corrupted on transfer: md5 hash differ "368151b85989527150198cae424f8e0c" vs "4aac24cb0b004640698b4e89078d4982"' >&2
                exit 1
            fi
            exec /usr/bin/rclone "$@"
            """)
        let racing = withScript

        let results = ResultBox(count: 1)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            results.set(0, Sync.sync(desktop, remote.path, racing, device: "desktop"))
            done.signal()
        }
        let reached = waitFor(seconds: 120) { FileManager.default.fileExists(atPath: held) }
        let other = Sync.sync(laptop, remote.path, environment, device: "laptop")
        FileManager.default.createFile(atPath: released, contents: nil)
        done.wait()
        try #require(reached, "the desktop's sync never wrote its root: \(results.values)")
        #expect(other.status == 0, "\(other)")
        let raced = results.values[0]
        #expect(raced.status == 1 && raced.standardError == Self.raced && raced.standardOutput.isEmpty, "\(raced)")

        // Nothing lost: each syncs again as the line says, and both hold every change.
        for (storage, device) in [(desktop, "desktop"), (laptop, "laptop")] {
            let again = Sync.sync(storage, remote.path, racing, device: device)
            #expect(again.status == 0, "\(device) again: \(again)")
        }
        let expected = ["shared.txt": "from the start", "laptop.txt": "from the laptop", "desktop.txt": "from the desktop"]
        for storage in [laptop, desktop] {
            let files = try Failure.files(storage, environment).mapValues { String(decoding: $0, as: UTF8.self) }
            #expect(files == expected, "\(storage)")
            Failure.expectClean(storage, environment)
        }
    }
}

/// Results that threads hand back, one place each.
private final class ResultBox: @unchecked Sendable {
    // Each index is set by one thread before the group it leaves is waited for.
    private let lock = NSLock()
    private var results: [CLIRun?]

    init(count: Int) { results = Array(repeating: nil, count: count) }

    func set(_ index: Int, _ result: CLIRun) {
        lock.lock()
        results[index] = result
        lock.unlock()
    }

    var values: [CLIRun] {
        lock.lock()
        defer { lock.unlock() }
        return results.map { $0! }
    }
}
