import VaultCore

extension Vault {
    /// Brings the remote root's pages of other devices into the storage, level by level: an
    /// interior page fetched names the pages below it (docs/FORMAT.md §13.5).
    func fetchRemotePages(_ remote: RemoteVault, download: ([String]) throws -> Void) throws {
        var fetched = Set<String>()
        while case let names = try remotePagesToFetch(remote, fetched: fetched), !names.isEmpty {
            try download(names)
            fetched.formUnion(names)
        }
    }
}
