import VaultCore

extension Vault.Options {
    /// A library open that reads what the built `dotsafe` writes: index 3 (an earlier release's
    /// index 2 too). The library's own default plays a release of index 2, which refuses a vault
    /// `dotsafe` has converted as newer.
    public static func likeDotsafe(readOnly: Bool = false) -> Vault.Options {
        var options = Vault.Options(readOnly: readOnly)
        options.indexThree = true
        return options
    }
}
