/// The lock's least time (docs/FORMAT.md §11.2). Every storage file has one size, so copy
/// tools tell a changed file by its modification time alone, and `rsync -a` in whole seconds: a
/// file whose bytes changed since a copy saw it must end in a later whole second than any time
/// the copy can have seen, and a re-creation, which keeps the bytes, must not take a file back.
enum LockTime {
    /// The whole second after every time of `changed` (each the latest time a file the session
    /// changed had just before one of its changes), and no earlier than any time of `held` (the
    /// files the lock re-creates, as they are). `Int64.min` when both are empty.
    static func least(changed: some Sequence<Int64>, held: some Sequence<Int64>) -> Int64 {
        let pushed = changed.map(wholeSecond(after:)).max() ?? .min
        return max(pushed, held.max() ?? .min)
    }

    /// The start of the second after the one `time` (nanoseconds since the epoch) is in, also
    /// before 1970.
    static func wholeSecond(after time: Int64) -> Int64 {
        let second = time >= 0 ? time / 1_000_000_000 : (time + 1) / 1_000_000_000 - 1
        return (second + 1) * 1_000_000_000
    }
}
