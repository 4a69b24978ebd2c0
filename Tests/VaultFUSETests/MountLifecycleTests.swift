import DotSafeTestSupport
import Foundation
import Glibc
import Testing
import VaultFUSE

/// Mounting and unmounting: busy, lazy and external unmounts all end with the vault committed
/// and closed, and no mount left behind.
@Suite(.serialized) struct MountLifecycleTests {
    /// `noatime`: a read changes no time (it would write the vault), and the mount table says so.
    @Test func mountIsDotsafeWithDefaultPermissions() throws {
        let harness = try MountHarness(.inProcess)
        defer { harness.finish() }
        let vault = try harness.mountPoint()
        try harness.withMount(at: vault) { mount throws in
            let line = try #require(MountHarness.mountLine(vault))
            #expect(line.hasPrefix("dotsafe \(vault) fuse.dotsafe "), "\(line)")
            #expect(line.contains("default_permissions"), "\(line)")
            #expect(line.contains(",noatime,") && !line.contains("relatime"), "\(line)")
            #expect(mount.isServing)
        }
    }

    @Test func busyMountIsRefusedAndStaysServed() throws {
        let harness = try MountHarness(.inProcess)
        defer { harness.finish() }
        let vault = try harness.mountPoint()
        try harness.withMount(at: vault) { mount throws in
            let descriptor = open(vault + "/held", O_CREAT | O_RDWR, 0o644)
            try #require(descriptor >= 0)
            #expect(throws: FUSEError.busy(vault)) { try mount.unmount(busyTimeout: 0.2) }
            #expect(mount.isServing)
            #expect(MountHarness.isMounted(vault))
            #expect(write(descriptor, "still served", 12) == 12)
            close(descriptor)
        }
        try harness.withMount(at: vault) { _ throws in
            #expect(try shell("cat held", in: vault) == "still served")
        }
    }

    @Test func lazyUnmountServesOpenFilesUntilTheyAreClosed() throws {
        let harness = try MountHarness(.inProcess)
        defer { harness.finish() }
        let vault = try harness.mountPoint()
        try harness.withMount(at: vault) { mount throws in
            let descriptor = open(vault + "/open", O_CREAT | O_RDWR, 0o644)
            try #require(descriptor >= 0)
            #expect(write(descriptor, "abc", 3) == 3)
            let finished = Flag()
            let unmounter = Thread {
                try? mount.unmount(lazy: true)
                finished.set()
            }
            unmounter.start()
            #expect(waitFor { !MountHarness.isMounted(vault) }, "the mount stays in /proc/mounts")
            #expect(!finished.isSet, "unmount returned while a file was open")
            var buffer = [UInt8](repeating: 0, count: 3)
            #expect(pread(descriptor, &buffer, 3, 0) == 3)
            #expect(buffer == Array("abc".utf8))
            #expect(pwrite(descriptor, "de", 2, 3) == 2)
            close(descriptor)
            #expect(waitFor { finished.isSet }, "unmount did not return after the last close")
            #expect(!mount.isServing)
        }
        try harness.withMount(at: vault) { _ throws in
            #expect(try shell("cat open", in: vault) == "abcde")
        }
    }

    @Test func externalUnmountEndsTheLoopAndCommits() throws {
        let harness = try MountHarness(.inProcess)
        defer { harness.finish() }
        let vault = try harness.mountPoint()
        try harness.withMount(at: vault) { mount throws in
            try shell("echo data > f", in: vault)
            try shell("fusermount3 -u \(vault)")
            try mount.waitUntilUnmounted()
            #expect(!mount.isServing)
            #expect(mount.fileSystem.isClosed)
        }
        try harness.withMount(at: vault) { _ throws in
            #expect(try shell("cat f", in: vault) == "data\n")
        }
    }

    @Test func unmountFromAnotherThreadWhileWaiting() throws {
        let harness = try MountHarness(.inProcess)
        defer { harness.finish() }
        let vault = try harness.mountPoint()
        try harness.withMount(at: vault) { mount throws in
            try shell("echo waited > f", in: vault)
            // The daemon's shape: the main thread waits, a signal-handling thread unmounts.
            let waited = Flag()
            let waiter = Thread {
                try? mount.waitUntilUnmounted()
                waited.set()
            }
            waiter.start()
            usleep(50_000)
            #expect(!waited.isSet)
            try mount.unmount()
            #expect(waitFor { waited.isSet }, "waitUntilUnmounted did not return")
            #expect(mount.fileSystem.isClosed)
        }
        try harness.withMount(at: vault) { _ throws in
            #expect(try shell("cat f", in: vault) == "waited\n")
        }
    }

    @Test func mountOnAMissingFolderFails() throws {
        let harness = try MountHarness(.inProcess)
        defer { harness.finish() }
        let missing = harness.base + "/nothing"
        let error = #expect(throws: FUSEError.self) {
            try harness.withMount(at: missing) { _ in }
        }
        // libfuse's own words, which it writes on standard error, are the reason.
        guard case .mountFailed(missing, let reason?)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(reason.contains("No such file or directory"), "\(reason)")
        #expect(!MountHarness.isMounted(missing))
    }
}
