import Foundation
import Glibc
import Synchronization
import Testing
import VaultFUSE

/// Mounting and unmounting: busy, lazy and external unmounts all end with the vault committed
/// and closed, and no mount left behind.
@Suite(.serialized) struct MountLifecycleTests {
    @Test func mountIsDotsafeWithDefaultPermissions() throws {
        let harness = try MountHarness()
        defer { harness.removeFolder() }
        try harness.withMount { mount throws in
            let line = try #require(MountHarness.mountLine(harness.mountPoint))
            #expect(line.hasPrefix("dotsafe \(harness.mountPoint) fuse.dotsafe "), "\(line)")
            #expect(line.contains("default_permissions"), "\(line)")
            #expect(mount.isServing)
        }
    }

    @Test func busyMountIsRefusedAndStaysServed() throws {
        let harness = try MountHarness()
        defer { harness.removeFolder() }
        try harness.withMount { mount throws in
            let descriptor = open(harness.mountPoint + "/held", O_CREAT | O_RDWR, 0o644)
            try #require(descriptor >= 0)
            #expect(throws: FUSEError.busy(harness.mountPoint)) { try mount.unmount(busyTimeout: 0.2) }
            #expect(mount.isServing)
            #expect(MountHarness.isMounted(harness.mountPoint))
            #expect(write(descriptor, "still served", 12) == 12)
            close(descriptor)
        }
        try harness.withMount { _ throws in
            #expect(try shell("cat held", in: harness.mountPoint) == "still served")
        }
    }

    @Test func lazyUnmountServesOpenFilesUntilTheyAreClosed() throws {
        let harness = try MountHarness()
        defer { harness.removeFolder() }
        try harness.withMount { mount throws in
            let descriptor = open(harness.mountPoint + "/open", O_CREAT | O_RDWR, 0o644)
            try #require(descriptor >= 0)
            #expect(write(descriptor, "abc", 3) == 3)
            let finished = Flag()
            let unmounter = Thread {
                try? mount.unmount(lazy: true)
                finished.set()
            }
            unmounter.start()
            #expect(waitFor { !MountHarness.isMounted(harness.mountPoint) }, "the mount stays in /proc/mounts")
            #expect(!finished.isSet, "unmount returned while a file was open")
            var buffer = [UInt8](repeating: 0, count: 3)
            #expect(pread(descriptor, &buffer, 3, 0) == 3)
            #expect(buffer == Array("abc".utf8))
            #expect(pwrite(descriptor, "de", 2, 3) == 2)
            close(descriptor)
            #expect(waitFor { finished.isSet }, "unmount did not return after the last close")
            #expect(!mount.isServing)
        }
        try harness.withMount { _ throws in
            #expect(try shell("cat open", in: harness.mountPoint) == "abcde")
        }
    }

    @Test func externalUnmountEndsTheLoopAndCommits() throws {
        let harness = try MountHarness()
        defer { harness.removeFolder() }
        try harness.withMount { mount throws in
            try shell("echo data > f", in: harness.mountPoint)
            try shell("fusermount3 -u \(harness.mountPoint)")
            try mount.waitUntilUnmounted()
            #expect(!mount.isServing)
            #expect(mount.fileSystem.isClosed)
        }
        try harness.withMount { _ throws in
            #expect(try shell("cat f", in: harness.mountPoint) == "data\n")
        }
    }

    @Test func unmountFromAnotherThreadWhileWaiting() throws {
        let harness = try MountHarness()
        defer { harness.removeFolder() }
        try harness.withMount { mount throws in
            try shell("echo waited > f", in: harness.mountPoint)
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
        try harness.withMount { _ throws in
            #expect(try shell("cat f", in: harness.mountPoint) == "waited\n")
        }
    }

    @Test func mountOnAMissingFolderFails() throws {
        let harness = try MountHarness()
        defer { harness.removeFolder() }
        let missing = MountHarness(folder: harness.folder, storagePath: harness.storagePath, mountPoint: harness.folder + "/nothing")
        #expect(throws: FUSEError.mountFailed(missing.mountPoint)) {
            try missing.withMount { _ in }
        }
        #expect(!MountHarness.isMounted(missing.mountPoint))
    }
}

/// Polls `condition` for up to `seconds`.
func waitFor(seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}

/// A flag one thread sets and another reads.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
