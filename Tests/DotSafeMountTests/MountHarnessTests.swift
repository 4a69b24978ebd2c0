import DotSafeTestSupport
import Foundation
import Glibc
import Testing

/// The harness's own promises: what a failing test leaves mounted is removed, and a descriptor
/// left open in the test's folder fails the test.
@Suite struct MountHarnessTests {
    @Test func finishRemovesAMountATestLeftBehind() throws {
        let h = try MountHarness()
        let vault = try h.mountPoint()
        try #require(h.mount(vault, pattern: "b2-c2-d3-d4-c4-b4-a5").status == 0)
        #expect(MountHarness.isMounted(vault))
        h.finish()
        #expect(!MountHarness.isMounted(vault))
        #expect(MountHarness.daemonPID(for: vault) == nil)
        #expect(!FileManager.default.fileExists(atPath: h.base))
    }

    @Test func finishFailsTheTestOnADescriptorLeftOpen() throws {
        let h = try MountHarness(initialise: false)
        let descriptor = open(h.base + "/left-open", O_CREAT | O_RDWR, 0o600)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        withKnownIssue("the harness reports the descriptor") { h.finish() }
    }
}
