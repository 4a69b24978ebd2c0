import SystemCalls

/// A request to the daemon of a mount point on its lock channel (`LockChannel`), as `contact`,
/// `share` and `unshare` make one: found through the mount's record, answered by the daemon
/// running as us.
enum DaemonRequest {
    /// How long the reply may take.
    enum Wait {
        /// Then the daemon counts as not answering.
        case atMost(seconds: Int)
        /// As long as the work does (a share's commit, a withdrawal's new keys), with a
        /// `WaitingNote` saying what is waited for (`doing`: "share it").
        case untilDone(doing: String)
    }

    /// The daemon's one-line reply, and the storage its record names; a reply starting with
    /// `failed: ` is thrown as that message.
    ///
    /// A stopped or hung daemon takes a connection into its queue and never answers; a request
    /// sent to it would be carried out once it goes on, after this command gave up. So it must
    /// first answer `status` as `dotsafe status` asks it, and only then is the request sent.
    static func ask(_ mountPoint: String, _ request: String, wait: Wait,
                    context: CommandContext) throws -> (reply: String, storage: String) {
        let folder = RuntimeFolder.existing(environment: context.environment)
        let path = MountRecord.mountPoint(mountPoint, in: folder)
        let none = CLIError.failure("no vault of yours is mounted at \(path)")
        guard let folder, let record = MountRecord.all(in: folder).last(where: { $0.mountPoint == path }) else { throw none }
        do {
            guard try record.state(in: folder) != nil else { throw none }
        } catch let error as CLIError where error == record.notAnswering {
            throw CLIError.failure(error.message + ": it may be stopped; nothing was asked of it")
        }
        guard let channel = try record.connect(in: folder, waiting: MountRecord.answerSeconds) else { throw none }
        var note: WaitingNote?
        switch wait {
        case .atMost(let seconds): channel.setReceiveTimeout(seconds: seconds)
        case .untilDone(let doing): note = WaitingNote(for: record, doing: doing, context: context)
        }
        defer { note?.cancel() }
        channel.send(request)
        guard let reply = channel.receiveLine() else {
            throw note != nil ? CLIError.failure("the daemon of \(path) ended without an answer") : record.notAnswering
        }
        if reply.hasPrefix("failed: ") { throw CLIError.failure(String(reply.dropFirst("failed: ".count))) }
        return (reply, record.storage)
    }
}
