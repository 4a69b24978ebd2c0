import DotSafeTestSupport
import Foundation
import Glibc
import Synchronization
import SystemCalls
import Testing
import VaultFormat
@testable import VaultSync

/// RemoteStorage over every kind of remote, with real servers on 127.0.0.1: round trips of
/// single files and batches, files that are not ours left alone, and each failure's one line.
@Suite struct RemoteStorageTests {
    static func storage(_ remote: TestRemote, settings: Rclone.Settings = Rclone.Settings()) throws -> RemoteStorage {
        RemoteStorage(try RemoteLocation(remote.path),
                      rclone: try Rclone(environment: TestRemote.environment, configFile: remote.configFile, settings: settings))
    }

    static func name(_ number: Int) -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        bytes[0] = UInt8(number & 0xff); bytes[1] = UInt8(number >> 8); bytes[15] = 0x5a
        return FileName.encode(bytes)
    }

    static func randomFile() -> [UInt8] { (0..<Format.fileSize).map { _ in UInt8.random(in: 0...255) } }

    /// A local folder of `count` storage files; their names and contents.
    static func localFiles(_ folder: String, count: Int, from first: Int = 0) throws -> [String: [UInt8]] {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var files: [String: [UInt8]] = [:]
        for number in first..<(first + count) {
            let bytes = randomFile()
            try Data(bytes).write(to: URL(fileURLWithPath: folder + "/" + name(number)))
            files[name(number)] = bytes
        }
        return files
    }

    static func contents(_ path: String) -> [UInt8]? { FileManager.default.contents(atPath: path).map { Array($0) } }

    @Test(arguments: TestRemote.Kind.allCases)
    func roundTrip(kind: TestRemote.Kind) throws {
        let remote = try TestRemote(kind)
        defer { remote.finish() }
        let storage = try Self.storage(remote)
        #expect(try storage.list() == RemoteListing(files: [:], otherEntries: 0), "a remote storage not made yet lists empty")

        let single = Self.randomFile()
        try storage.write(Self.name(900), contents: single)
        #expect(try storage.read(Self.name(900)) == single)
        #expect(try storage.read(Self.name(901)) == nil)

        // Files that are not ours: another name form, and one of our form but the wrong size.
        try remote.plant("notes.txt", Array("not a storage file".utf8))
        try remote.plant(Self.name(902), [1, 2, 3])

        let local = remote.folder + "/local"
        let files = try Self.localFiles(local, count: 24)
        let started = Date()
        try storage.upload(files.keys.sorted(), from: local)
        let uploadSeconds = Date().timeIntervalSince(started)

        let listing = try storage.list()
        #expect(listing.storageFiles == (files.keys + [Self.name(900)]).sorted())
        #expect(listing.files[Self.name(902)] == 3, "a damaged file is listed with its size, apart from storage files")
        #expect(listing.otherEntries == 1)
        if let served = remote.servedFolder {
            for (name, bytes) in files { #expect(Self.contents(served + "/" + name) == bytes, "uploaded \(name)") }
        }

        let down = remote.folder + "/down"
        try FileManager.default.createDirectory(atPath: down, withIntermediateDirectories: true)
        let wanted = Array(files.keys.sorted().prefix(12)) + [Self.name(900)]
        try storage.download(wanted, into: down)
        for name in wanted {
            #expect(Self.contents(down + "/" + name) == (files[name] ?? single), "downloaded \(name)")
            #expect(try SystemCall.status(down + "/" + name)?.permissions == 0o600, "rclone runs under umask 077")
        }
        #expect(try SystemCall.listFolder(down).sorted() == wanted.sorted(), "nothing else is written into the folder")

        let removed = Array(files.keys.sorted().suffix(8))
        try storage.delete(removed + [Self.name(903)])
        let after = try storage.list()
        #expect(after.storageFiles == (Set(files.keys).subtracting(removed).union([Self.name(900)])).sorted())
        #expect(try remote.allNames().contains("notes.txt"), "a file that is not ours is never touched")
        #expect(after.files[Self.name(902)] == 3)
        print("RemoteStorage \(kind): 24 files uploaded in \(String(format: "%.2f", uploadSeconds)) s")
    }

    /// A terminal's progress counts files as rclone reports each one moved: every count from 1
    /// to the batch's size, once, in order; the files arrive as without it.
    @Test(arguments: [TestRemote.Kind.local, .webdav])
    func batchesReportEachFileMoved(kind: TestRemote.Kind) throws {
        let remote = try TestRemote(kind)
        defer { remote.finish() }
        let storage = try Self.storage(remote)
        let local = remote.folder + "/local"
        let files = try Self.localFiles(local, count: 20)
        var up: [Int] = []
        try storage.upload(files.keys.sorted(), from: local, filesDone: { up.append($0) })
        #expect(up == Array(1...20))
        #expect(try storage.list().storageFiles == files.keys.sorted())

        let down = remote.folder + "/down"
        try FileManager.default.createDirectory(atPath: down, withIntermediateDirectories: true)
        var counts: [Int] = []
        try storage.download(Array(files.keys.sorted().prefix(7)), into: down, filesDone: { counts.append($0) })
        #expect(counts == Array(1...7))
        for name in files.keys.sorted().prefix(7) { #expect(Self.contents(down + "/" + name) == files[name]) }
        // A missing file is still named, though rclone now reports at level INFO.
        #expect(throws: RemoteError.missingFiles(remote: storage.location.description, names: [Self.name(99)])) {
            try storage.download([Self.name(99)], into: down, filesDone: { _ in })
        }
    }

    @Test(arguments: TestRemote.Kind.allCases)
    func missingFilesAreNamed(kind: TestRemote.Kind) throws {
        let remote = try TestRemote(kind)
        defer { remote.finish() }
        let storage = try Self.storage(remote)
        let local = remote.folder + "/local"
        let files = try Self.localFiles(local, count: 2)
        try storage.upload(files.keys.sorted(), from: local)

        // Downloading a name the remote lacks is an error that names it; the others arrive.
        let down = remote.folder + "/down"
        try FileManager.default.createDirectory(atPath: down, withIntermediateDirectories: true)
        #expect(throws: RemoteError.missingFiles(remote: storage.location.description, names: [Self.name(77)])) {
            try storage.download(files.keys.sorted() + [Self.name(77)], into: down)
        }
        // Uploading a local file that is not there (rclone would skip it silently) is refused.
        let error = #expect(throws: RemoteError.self) { try storage.upload([Self.name(78)], from: local) }
        #expect(error?.description == "\(local)/\(Self.name(78)) is not a regular file of the storage size")
        #expect(try storage.list().storageFiles == files.keys.sorted())
    }

    @Test(arguments: [TestRemote.Kind.webdav, .sftp])
    func readOnlyRemoteRefusesWrites(kind: TestRemote.Kind) throws {
        let remote = try TestRemote(kind, readOnly: true)
        defer { remote.finish() }
        // What the read-only server serves was put there beforehand.
        let served = try #require(remote.servedFolder)
        let files = try Self.localFiles(served, count: 3)
        let storage = try Self.storage(remote)
        #expect(try storage.list().storageFiles == files.keys.sorted())

        let refusedWrite = #expect(throws: RemoteError.self) { try storage.write(Self.name(50), contents: Self.randomFile()) }
        let local = remote.folder + "/local"
        let mine = try Self.localFiles(local, count: 2, from: 60)
        let refusedUpload = #expect(throws: RemoteError.self) { try storage.upload(mine.keys.sorted(), from: local) }
        // Reporting each file (rclone at level INFO) changes nothing of the error.
        let refusedReporting = #expect(throws: RemoteError.self) {
            try storage.upload(mine.keys.sorted(), from: local, filesDone: { _ in Issue.record("no file went up") })
        }
        let refusedDelete = #expect(throws: RemoteError.self) { try storage.delete(files.keys.sorted()) }
        for error in [refusedWrite, refusedUpload, refusedReporting, refusedDelete] {
            guard case .writeRefused = error else { Issue.record("not a refusal: \(String(describing: error))"); continue }
            #expect(error!.description.hasPrefix("the remote :\(kind):storage refused to store or remove files: "))
            #expect(!error!.description.contains("\n"))
        }
        for (name, bytes) in files { #expect(Self.contents(served + "/" + name) == bytes, "nothing was changed") }
        #expect(try SystemCall.listFolder(served).sorted() == files.keys.sorted())
    }

    @Test(arguments: [TestRemote.Kind.webdav, .sftp, .s3])
    func serverStoppedMidTransfer(kind: TestRemote.Kind) throws {
        let remote = try TestRemote(kind)
        defer { remote.finish() }
        var slow = Rclone.Settings()
        slow.extraArguments = ["--bwlimit", "1M"]
        slow.transfers = 2
        let slowStorage = try Self.storage(remote, settings: slow)
        let local = remote.folder + "/local"
        let files = try Self.localFiles(local, count: 16)

        // 4 MiB at 1 MiB/s: the server dies about a second into it.
        let failure = ErrorBox()
        let names = files.keys.sorted()
        let upload = Thread {
            do { try slowStorage.upload(names, from: local) } catch let error as RemoteError {
                failure.value.withLock { $0 = error }
            } catch {}
        }
        upload.start()
        Thread.sleep(forTimeInterval: 1.2)
        remote.stop()
        #expect(waitFor(seconds: 60) { upload.isFinished })
        let error = try #require(failure.value.withLock { $0 }, "the upload must fail when its server dies")
        guard case .unreachable = error else { Issue.record("not unreachable: \(error)"); return }
        #expect(error.description.hasPrefix("the remote \(slowStorage.location) cannot be reached: "))

        // The next batch completes over the restarted server, and every file reads back whole.
        try remote.start()
        let storage = try Self.storage(remote)
        try storage.upload(files.keys.sorted(), from: local)
        #expect(try storage.list().storageFiles == files.keys.sorted())
        let down = remote.folder + "/down"
        try FileManager.default.createDirectory(atPath: down, withIntermediateDirectories: true)
        try storage.download(files.keys.sorted(), into: down)
        for (name, bytes) in files { #expect(Self.contents(down + "/" + name) == bytes) }
    }

    /// A sync's batches report each file and move eight at once. Once their server is gone,
    /// rclone would print its first error only after minutes (its shared pacer spaces every
    /// transfer's retries); a batch that completes no file for `probeAfterQuietSeconds` has its
    /// remote probed, and ends within seconds of the default 10.
    @Test(arguments: [true, false])
    func aReportedBatchEndsSoonAfterItsServerDies(uploading: Bool) throws {
        let remote = try TestRemote(.webdav)
        defer { remote.finish() }
        var slow = Rclone.Settings()
        slow.extraArguments = ["--bwlimit", "4M"]
        let slowStorage = try Self.storage(remote, settings: slow)
        let local = remote.folder + "/local", down = remote.folder + "/down"
        let files = try Self.localFiles(local, count: 48)
        let names = files.keys.sorted()
        try FileManager.default.createDirectory(atPath: down, withIntermediateDirectories: true)
        if !uploading { try Self.storage(remote).upload(names, from: local) }

        // 12 MiB at 4 MiB/s: the server dies half a second into it.
        let failure = ErrorBox()
        let transfer = Thread {
            do {
                if uploading { try slowStorage.upload(names, from: local, filesDone: { _ in }) }
                else { try slowStorage.download(names, into: down, filesDone: { _ in }) }
            } catch let error as RemoteError {
                failure.value.withLock { $0 = error }
            } catch {}
        }
        transfer.start()
        Thread.sleep(forTimeInterval: 0.5)
        remote.stop()
        let stopped = ContinuousClock.now
        // Not a speed figure: without the probe the batch ended 115 s (upload) and 33 s
        // (download) after the kill.
        #expect(waitFor(seconds: 120) { transfer.isFinished })
        let waited = ContinuousClock.now - stopped
        #expect(waited < .seconds(30), "ended \(waited) after the server died")
        let error = try #require(failure.value.withLock { $0 }, "the batch must fail when its server dies")
        guard case .unreachable = error else { Issue.record("not unreachable: \(error)"); return }
        #expect(error.description.hasPrefix("the remote \(slowStorage.location) cannot be reached: "))
        #expect(!error.description.contains("\n") && !error.description.contains("url="))
        print("RemoteStorage: a reported \(uploading ? "upload" : "download") ended \(waited) after its server died")
    }

    /// A server that takes connections and never answers: a listing (the first step of every
    /// sync) and a read end after `probeAfterQuietSeconds` and the probe's own timeout, not
    /// after rclone's three one-minute timeouts (three minutes by hand).
    @Test func aFrozenServerIsNoticedByAListingAndARead() throws {
        let remote = try TestRemote(.webdav)
        defer { remote.finish() }
        var quick = Rclone.Settings()
        quick.probeAfterQuietSeconds = 2
        quick.probeTimeoutSeconds = 3
        let storage = try Self.storage(remote, settings: quick)
        let local = remote.folder + "/local"
        let names = try Self.localFiles(local, count: 1).keys.sorted()
        try storage.upload(names, from: local)
        #expect(try storage.list().files.count == 1)
        remote.freeze()
        for step in ["list", "read"] {
            let start = ContinuousClock.now
            let error = #expect(throws: RemoteError.self) {
                if step == "list" { _ = try storage.list() } else { _ = try storage.read(names[0]) }
            }
            let waited = ContinuousClock.now - start
            print("RemoteStorage: a \(step) of a frozen server ended after \(waited)")
            #expect(waited < .seconds(20), "the \(step) ended after \(waited)")
            guard case .unreachable? = error else { Issue.record("the \(step): not unreachable: \(String(describing: error))"); continue }
            #expect(error?.description.hasPrefix("the remote \(storage.location) cannot be reached: ") == true)
        }
    }

    /// A batch that stays quiet longer than `probeAfterQuietSeconds` over a slow but live link
    /// is probed and goes on: it is never ended for being slow.
    @Test func aQuietBatchOverALiveLinkCompletes() throws {
        let remote = try TestRemote(.webdav)
        defer { remote.finish() }
        var slow = Rclone.Settings()
        slow.extraArguments = ["--bwlimit", "512k"]
        slow.probeAfterQuietSeconds = 1
        let storage = try Self.storage(remote, settings: slow)
        let local = remote.folder + "/local"
        // Eight files at once, 2 MiB at 512 KiB/s: no file completes for about 4 s.
        let files = try Self.localFiles(local, count: 8)
        var reported: [Int] = []
        try storage.upload(files.keys.sorted(), from: local, filesDone: { reported.append($0) })
        #expect(reported == Array(1...8))
        let down = remote.folder + "/down"
        try FileManager.default.createDirectory(atPath: down, withIntermediateDirectories: true)
        try storage.download(files.keys.sorted(), into: down)
        for (name, bytes) in files { #expect(Self.contents(down + "/" + name) == bytes) }
    }

    /// A remote whose disk fills up: the local folder and SFTP over a 1 MiB tmpfs (root only:
    /// it mounts one), 8 files of 256 KiB.
    @Test(.enabled(if: getuid() == 0, "mounts a tmpfs"), arguments: [TestRemote.Kind.local, .sftp])
    func remoteOutOfSpace(kind: TestRemote.Kind) throws {
        let remote = try TestRemote(kind)
        defer { remote.finish() }
        let disk = try #require(remote.servedFolder)
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        let mounted = try run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", disk])
        try #require(mounted.succeeded, "\(mounted)")
        defer { _ = try? run(["umount", disk]) }
        let storage = try Self.storage(remote)
        let local = remote.folder + "/local"
        let files = try Self.localFiles(local, count: 8)
        let error = #expect(throws: RemoteError.self) { try storage.upload(files.keys.sorted(), from: local) }
        #expect(error == .noSpace(remote: storage.location.description), "\(String(describing: error))")
        #expect(error?.description == "the remote \(storage.location) is out of space")
    }

    @Test func unreachableRemote() throws {
        let port = try LoopbackPort.free()
        let storage = RemoteStorage(try RemoteLocation(":webdav,url='http://127.0.0.1:\(port)':storage"),
                                    rclone: try Rclone(environment: TestRemote.environment))
        let error = #expect(throws: RemoteError.self) { try storage.list() }
        guard case .unreachable = error else { Issue.record("not unreachable: \(String(describing: error))"); return }
        #expect(error!.description.hasPrefix("the remote :webdav:storage cannot be reached: "))
        #expect(error!.description.contains("connection refused"))
        #expect(!error!.description.contains("url="), "a remote's options stay out of messages")
    }

    @Test(arguments: ["nosuchremote:storage", ":nosuchbackend:storage", ":webdav,url='http://127.0.0.1:1:storage"])
    func unparseableRemote(path: String) throws {
        let folder = try TestFolder.make("remote-unparseable")
        defer { TestFolder.remove(folder) }
        var environment = TestRemote.environment
        environment["RCLONE_CONFIG"] = folder + "/rclone.conf"
        let storage = RemoteStorage(try RemoteLocation(path), rclone: try Rclone(environment: environment))
        let error = #expect(throws: RemoteError.self) { try storage.list() }
        guard case .unparseable = error else { Issue.record("not unparseable: \(String(describing: error))"); return }
        #expect(error!.description.hasPrefix("rclone cannot use the remote \(storage.location): "))
        #expect(!error!.description.contains("\n"))
        #expect(try SystemCall.listFolder(folder).isEmpty, "no config file was written")
    }

    @Test func missingRclone() throws {
        var environment = TestRemote.environment
        environment["PATH"] = "/nonexistent:/usr/sbin"
        #expect(throws: RemoteError.rcloneMissing) { try Rclone(environment: environment) }
        #expect(RemoteError.rcloneMissing.description
                == "rclone is not installed (no rclone program on PATH): sync needs it (apt-get install rclone)")
    }

    /// Every rclone run skips the table of character widths its terminal library builds at
    /// each start (half of a short command's CPU): `TCELL_MINIMIZE=1`, whatever the caller's
    /// environment says.
    @Test func rcloneStartsWithoutItsWidthTable() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let bin = remote.folder + "/bin", seen = remote.folder + "/environment"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        try "#!/bin/sh\nenv >> '\(seen)'\nexec /usr/bin/rclone \"$@\"\n".write(toFile: bin + "/rclone.sh", atomically: false, encoding: .utf8)
        try #require(try run(["install", "-m", "755", bin + "/rclone.sh", bin + "/rclone"]).succeeded)
        var environment = TestRemote.environment
        environment["PATH"] = bin + ":/usr/bin:/bin"
        environment["TCELL_MINIMIZE"] = nil
        let storage = RemoteStorage(try RemoteLocation(remote.path), rclone: try Rclone(environment: environment))
        let local = remote.folder + "/local"
        let files = try Self.localFiles(local, count: 2)
        try storage.upload(files.keys.sorted(), from: local)
        #expect(try storage.list().storageFiles == files.keys.sorted())
        let lines = try String(contentsOfFile: seen, encoding: .utf8).split(separator: "\n")
        #expect(lines.filter { $0.hasPrefix("TCELL_MINIMIZE=") } == ["TCELL_MINIMIZE=1", "TCELL_MINIMIZE=1"], "both runs")
    }

    @Test func environmentCannotChangeWhatRcloneDoes() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        var environment = TestRemote.environment
        environment["RCLONE_DRY_RUN"] = "true"
        environment["RCLONE_MAX_TRANSFER"] = "1"
        let storage = RemoteStorage(try RemoteLocation(remote.path), rclone: try Rclone(environment: environment))
        let local = remote.folder + "/local"
        let files = try Self.localFiles(local, count: 3)
        try storage.upload(files.keys.sorted(), from: local)
        #expect(try storage.list().storageFiles == files.keys.sorted())
        #expect(Rclone.passes("RCLONE_CONFIG_MINE_TYPE") && Rclone.passes("RCLONE_CONFIG") && !Rclone.passes("RCLONE_DRY_RUN"))
    }
}

/// What a transfer on another thread ended with.
final class ErrorBox: Sendable {
    let value = Mutex<RemoteError?>(nil)
}
