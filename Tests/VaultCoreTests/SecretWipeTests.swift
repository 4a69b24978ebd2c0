import Testing
import VaultCore
import VaultCrypto
import VaultFormat

/// Buffers that held keys are zeroed, not just released (R-MEM-2): the index pages a vault
/// opens hold every item key and name, and are zeroed once their records are read.
@Suite struct SecretWipeTests {
    @Test func indexPageBodiesAreZeroedOnceRead() throws {
        let key = [UInt8](repeating: 0x77, count: 32)
        let root = ItemRecord(type: .folder, mode: 0o755, uid: 0, gid: 0, atime: 0, mtime: 0, ctime: 0, links: [])
        let file = ItemRecord(type: .file, mode: 0o644, uid: 0, gid: 0, atime: 0, mtime: 0, ctime: 0, size: 10,
                              links: [.init(parentID: 1, name: Array("secret-name".utf8))], itemKey: key,
                              layout: .packed(.init(fileNumber: 8, offset: 0, sealedLength: 26, nonce: [UInt8](repeating: 8, count: Format.sealNonceSize))))
        let bodies = [IndexPage.encode([(.item(1), root.encode())]), IndexPage.encode([(.item(3), file.encode())])]
        #expect(bodies[1].contains(0x77))
        let indexRoot = IndexRoot(generation: 1, vaultKey: [UInt8](repeating: 0, count: 32), nextFileNumber: 32, nextItemID: 10,
                                  coverCount: 2, ownedGroups: [GroupRange(first: 0, count: 2)], releasing: [],
                                  pages: [SealedRef(fileNumber: 4, nonce: [UInt8](repeating: 1, count: Format.sealNonceSize)),
                                          SealedRef(fileNumber: 5, nonce: [UInt8](repeating: 2, count: Format.sealNonceSize))])
        try IndexCheck.check(root: indexRoot, pageBodies: bodies)
        // The check was handed these very buffers: what it read is zero now, keys and names too.
        for body in bodies { #expect(body.allSatisfy { $0 == 0 }, "a decrypted page is left in memory") }
    }

    @Test func wipeStorageZeroesEveryCopyOfAnArray() {
        let secret = [UInt8](repeating: 9, count: 64)
        let copy = secret
        secret.wipeStorage()
        #expect(copy.allSatisfy { $0 == 0 } && secret.allSatisfy { $0 == 0 })
        var other = [UInt8](repeating: 9, count: 64)
        let kept = other
        other.wipe()
        #expect(kept.allSatisfy { $0 == 9 }, "wipe() zeroes only its own copy: why wipeStorage exists")
    }
}
