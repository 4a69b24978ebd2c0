import Foundation
import Glibc
import Testing
@testable import DotSafeCLI

/// Lock-file names in the runtime folder are keyed with a key made once per boot: the same
/// within a boot, different after a reboot (a boot key of another boot id is replaced), and
/// never the vault's own derivation alone.
@Suite struct RuntimeFolderTests {
    static func folder() throws -> RuntimeFolder {
        let path = (ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp") + "/dotsafe-test-runtime-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        return RuntimeFolder(path: path)
    }

    @Test func lockNamesAreKeyedPerBoot() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder.path) }
        let vault = Array("dotsafe-vault-00112233".utf8)
        let first = try folder.lockName("guard-", for: vault)
        #expect(first.hasPrefix("guard-") && first.hasSuffix(".lock") && first.count == 6 + 32 + 5)
        #expect(try folder.lockName("guard-", for: vault) == first, "one name within a boot")
        #expect(try folder.lockName("guard-", for: Array("another".utf8)) != first)
        let keyFile = folder.file(RuntimeFolder.bootKeyName)
        let stored = try #require(FileManager.default.contents(atPath: keyFile))
        #expect(stored.prefix(36) == Data(RuntimeFolder.bootID()) && stored.count == 36 + 32)
        let attributes = try FileManager.default.attributesOfItem(atPath: keyFile)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        // The key of another boot: replaced, so the names change.
        var otherBoot = Data("00000000-0000-0000-0000-000000000000".utf8)
        otherBoot.append(stored.suffix(32))
        try otherBoot.write(to: URL(fileURLWithPath: keyFile))
        let afterReboot = try folder.lockName("guard-", for: vault)
        #expect(afterReboot != first)
        #expect(try FileManager.default.contents(atPath: keyFile)?.prefix(36) == Data(RuntimeFolder.bootID()))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == [RuntimeFolder.bootKeyName], "no temporary file left")
    }

    @Test func staleLocksAreRemovedAndHeldOnesKept() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder.path) }
        let held = open(folder.file("guard-held.lock"), O_RDWR | O_CREAT, 0o600)
        defer { close(held) }
        #expect(held >= 0 && flock(held, LOCK_EX) == 0)
        FileManager.default.createFile(atPath: folder.file("guard-stale.lock"), contents: Data("mounted at /x".utf8))
        FileManager.default.createFile(atPath: folder.file("guard-new.lock"), contents: nil)
        let old = Date(timeIntervalSinceNow: -60)
        for name in ["guard-held.lock", "guard-stale.lock"] {
            try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: folder.file(name))
        }
        folder.removeStaleLocks()
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: folder.path)) == ["guard-held.lock", "guard-new.lock"])
    }
}
