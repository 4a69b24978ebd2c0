import DotSafeTestSupport
import VaultCore
import VaultFormat

/// Where the sharing suites start: Alice's vault with `hello.txt`, and Bob's and Carol's own
/// vaults, each on a device of its own, with the three contact codes. Bob's and Carol's devices
/// are reopened after their codes were made, so that their identities are in their records
/// before a grant to them arrives. `owner`: Alice's device, when the test made it.
struct SharingTrio {
    let a: SyncDevice, b: SyncDevice, c: SyncDevice
    let codeA: ContactCode, codeB: ContactCode, codeC: ContactCode

    init(owner: SyncDevice? = nil) throws {
        a = try owner ?? SyncDevice("alice", seed: 0xA1)
        b = try SyncDevice("bob", seed: 0xB2)
        c = try SyncDevice("carol", seed: 0xC3)
        codeB = try b.vault.contactCode().code
        codeC = try c.vault.contactCode().code
        try b.reopen()
        try c.reopen()
        try a.write("hello.txt", "hello from alice")
        codeA = try a.vault.contactCode().code
    }

    func finish() {
        a.finish()
        b.finish()
        c.finish()
    }
}
