/// A point in time as `stat` and `utimensat` carry it: seconds and nanoseconds since the Unix
/// epoch, nanoseconds in 0 ..< 1e9 (also before 1970).
public struct Timestamp: Equatable, Hashable, Sendable, CustomStringConvertible {
    public var seconds: Int64
    public var nanoseconds: Int64

    public init(seconds: Int64, nanoseconds: Int64) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }

    /// From the vault's representation, nanoseconds since the epoch.
    public init(nanosecondsSinceEpoch value: Int64) {
        let (quotient, remainder) = value.quotientAndRemainder(dividingBy: 1_000_000_000)
        if remainder < 0 {
            seconds = quotient - 1
            nanoseconds = remainder + 1_000_000_000
        } else {
            seconds = quotient
            nanoseconds = remainder
        }
    }

    /// Nanoseconds since the epoch, clamped to what the vault stores (about 1677 to 2262), as
    /// ext4 clamps times outside its range rather than failing.
    public var nanosecondsSinceEpoch: Int64 {
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, overflow2) = scaled.addingReportingOverflow(nanoseconds)
        if overflow2 { return seconds < 0 ? .min : .max }
        return sum
    }

    public var description: String { "\(seconds).\(String(nanoseconds).leftPadded(to: 9))" }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
