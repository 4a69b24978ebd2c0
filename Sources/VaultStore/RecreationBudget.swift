import VaultFormat

/// How much a lock re-creates (docs/FORMAT.md §11.3): a share of the storage files the session
/// did not write, within a time budget per GiB of storage. The files the session wrote are
/// re-created whatever the budget.
public struct RecreationBudget: Equatable, Sendable {
    /// Share of the other files re-created when the budget allows it.
    public var share: Double
    /// Seconds a lock may spend per GiB of storage; 0 re-creates only the session's own files.
    public var secondsPerGiB: Double
    /// What any lock may spend however small the storage (a storage of 64 files is 16 MiB).
    public var minimumSeconds: Double

    /// The whole share cost 6.0–9.9 s per GiB on this 2-core VM's disk and 4.8–17 s on a
    /// journaled ext4 (a loop device on that disk), under loads of 4–10 (docs/PERFORMANCE.md):
    /// 10 s per GiB buys it but at the highest load, and a faster disk is done sooner. A
    /// storage of up to 300 MiB may take 3 s, so that a small one gets the whole share on a
    /// busy machine too.
    public static let standard = RecreationBudget(share: 0.7, secondsPerGiB: 10, minimumSeconds: 3)

    public init(share: Double, secondsPerGiB: Double, minimumSeconds: Double = 3) {
        self.share = share; self.secondsPerGiB = secondsPerGiB; self.minimumSeconds = minimumSeconds
    }

    /// The budget of a lock of a storage of `files` files; 0 when only the session's files go.
    public func seconds(forFiles files: Int) -> Double {
        guard secondsPerGiB > 0 else { return 0 }
        return max(minimumSeconds, secondsPerGiB * Double(files) * Double(Format.fileSize) / Double(1 << 30))
    }
}
