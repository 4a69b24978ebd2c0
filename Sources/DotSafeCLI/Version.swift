/// The version of DotSafe: the one place it is written down.
public enum DotSafeVersion {
    /// Printed by `dotsafe --version` and `dotsafe version` as `dotsafe 0.1.0`.
    public static let current = "0.1.0"
}
