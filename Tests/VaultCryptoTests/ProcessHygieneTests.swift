import Glibc
import Testing
import VaultCrypto

@Suite struct ProcessHygieneTests {
    /// Runs in a child process (an exit test), since the flag cannot be turned back on.
    @Test func disableMemoryDumpsClearsTheDumpableFlag() async {
        await #expect(processExitsWith: .success) {
            try ProcessHygiene.disableMemoryDumps()
            exit(ProcessHygiene.isDumpable ? 1 : 0)
        }
    }
}
