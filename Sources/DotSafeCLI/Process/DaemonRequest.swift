import SystemCalls

/// A request to the daemon of a mount point on its lock channel (`LockChannel`), as `lock`
/// makes one: found through the mount's record, answered by the daemon running as us.
enum DaemonRequest {
    /// The daemon's one-line reply, and the storage its record names; a reply starting with
    /// `failed: ` is thrown as that message.
    static func ask(_ mountPoint: String, _ request: String, context: CommandContext) throws -> (reply: String, storage: String) {
        let path = MountTable.canonical(mountPoint)
        guard let folder = RuntimeFolder.existing(environment: context.environment),
              let record = MountRecord.all(in: folder).last(where: { $0.mountPoint == path }),
              let channel = try record.connect(in: folder) else {
            throw CLIError.failure("no vault of yours is mounted at \(path)")
        }
        channel.send(request)
        guard let reply = channel.receiveLine() else { throw CLIError.failure("the daemon of \(path) ended without an answer") }
        if reply.hasPrefix("failed: ") { throw CLIError.failure(String(reply.dropFirst("failed: ".count))) }
        return (reply, record.storage)
    }
}
