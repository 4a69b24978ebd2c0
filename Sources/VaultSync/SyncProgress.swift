/// Files a sync is moving in one batch, for a progress line on a terminal: which way, how many
/// are done, of how many. Every file is one storage file (`Format.fileSize` bytes).
public struct SyncProgress: Equatable, Sendable {
    public enum Direction: String, Sendable {
        case up, down
    }

    public var direction: Direction
    public var done: Int
    public var total: Int

    public init(direction: Direction, done: Int, total: Int) {
        self.direction = direction
        self.done = done
        self.total = total
    }

    /// What a batch of `total` files tells `listener` as it moves: 0 at once, then each count
    /// rclone reports. Nil without a listener or files.
    static func batch(_ direction: Direction, total: Int, to listener: ((SyncProgress) -> Void)?) -> ((Int) -> Void)? {
        guard let listener, total > 0 else { return nil }
        listener(SyncProgress(direction: direction, done: 0, total: total))
        return { listener(SyncProgress(direction: direction, done: min($0, total), total: total)) }
    }
}
