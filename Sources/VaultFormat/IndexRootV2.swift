/// The index root of a format-2 vault (docs/FORMAT.md §13.5), sealed with the root key RK in
/// both slots. It holds the device table (names keys), the page keys of the top of the index,
/// and room for what sync and sharing add (extensions).
public struct IndexRootV2: Equatable, Sendable {
    /// A file listed by name rather than named from a device key: an unlock record.
    public struct SpecialFile: Equatable, Sendable {
        /// `retiredOwner`: the owner record of the pattern before a change, still at that
        /// pattern's name until the change turns it into a cover (docs/FORMAT.md §13.12).
        /// `endedGrant`: a grant withdrawn (§14.8), its file an ended grant to the same recipient.
        public enum Role: UInt8, Sendable { case ownerUnlock = 1, grant = 2, retiredOwner = 3, endedGrant = 4 }
        public var file: FileRef
        public var role: Role
        /// The 16 bytes whose base32 is the file's name.
        public var name: [UInt8]
        public init(file: FileRef, role: Role, name: [UInt8]) { self.file = file; self.role = role; self.name = name }
        /// A file its sharer sealed to a recipient, live or ended: every storage of the vault
        /// holds it at its name (§14.9).
        public var isGrantFile: Bool { role == .grant || role == .endedGrant }
    }

    public struct Extension: Equatable, Sendable {
        public var tag: UInt16
        public var value: [UInt8]
        public init(tag: UInt16, value: [UInt8]) { self.tag = tag; self.value = value }
    }

    /// Extension tags below this are the format's own: a reader that does not know one refuses
    /// the root (a newer DotSafe wrote it); tags from here up MAY be skipped.
    public static let firstOptionalTag: UInt16 = 1024
    /// Extension tag 2 (§13.12): the name of the remote's unlock record of a pattern this
    /// device changed since its last sync, removed from the remote by the next sync.
    public static let formerRemoteUnlockTag: UInt16 = 2
    /// Extension tag 1024 (§14.8), optional, local only: the RL whose two local slots a
    /// grantee's device that followed a withdrawal still has to remove (after a crash).
    public static let retiringSlotsTag: UInt16 = 1024
    /// The deepest index tree a reader follows: a depth of 4 holds far more pages than a storage.
    public static let maxLevel: UInt8 = 4

    public var generation: UInt64
    public var writerDevice: UInt16
    public var devices: [DeviceEntry]
    public var specialFiles: [SpecialFile]
    /// The level of the pages `top` refers to: 0 when they are leaves.
    public var topLevel: UInt8
    public var top: [PageRef]
    public var extensions: [Extension]

    public init(generation: UInt64, writerDevice: UInt16, devices: [DeviceEntry], specialFiles: [SpecialFile],
                topLevel: UInt8, top: [PageRef], extensions: [Extension] = []) {
        self.generation = generation; self.writerDevice = writerDevice; self.devices = devices
        self.specialFiles = specialFiles; self.topLevel = topLevel; self.top = top; self.extensions = extensions
    }

    public func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: 256 + top.count * PageRef.size)
        writer.u64(generation)
        writer.u16(writerDevice)
        writer.u16(UInt16(devices.count))
        for device in devices { device.encode(into: &writer) }
        writer.u16(UInt16(specialFiles.count))
        for special in specialFiles { writer.u64(special.file.raw); writer.u8(special.role.rawValue); writer.raw(special.name) }
        writer.u8(topLevel)
        writer.u32(UInt32(top.count))
        for ref in top { ref.encode(into: &writer) }
        writer.u16(UInt16(extensions.count))
        for item in extensions { writer.u16(item.tag); writer.lp32(item.value) }
        return writer.bytes
    }

    public static func decode(_ body: ArraySlice<UInt8>) throws -> IndexRootV2 { try decode(body, formatTags: []) }

    /// `formatTags`: tags below 1024 that a later index version adds (§15.5's tag 5), whose rules
    /// its own decoder checks; format 2 knows none.
    static func decode(_ body: ArraySlice<UInt8>, formatTags: Set<UInt16>) throws -> IndexRootV2 {
        var reader = ByteReader(body, context: "index root")
        let generation = try reader.u64(), writerDevice = try reader.u16()
        let deviceCount = Int(try reader.u16())
        var devices: [DeviceEntry] = []
        for _ in 0..<deviceCount { devices.append(try DeviceEntry.decode(from: &reader)) }
        let specialCount = Int(try reader.u16())
        var specials: [SpecialFile] = []
        for _ in 0..<specialCount {
            let file = FileRef(raw: try reader.u64()), rawRole = try reader.u8()
            guard let role = SpecialFile.Role(rawValue: rawRole) else { throw FormatError.invalid("index root: special file role \(rawRole)") }
            specials.append(SpecialFile(file: file, role: role, name: try reader.raw(Format.nameBytes)))
        }
        let topLevel = try reader.u8()
        let top = try PageRef.decodeList(Int(try reader.u32()), from: &reader, context: "index root")
        let extensionCount = Int(try reader.u16())
        var extensions: [Extension] = []
        for _ in 0..<extensionCount {
            let tag = try reader.u16()
            if let last = extensions.last, tag <= last.tag { throw FormatError.invalid("index root: extension tags out of order") }
            guard tag >= firstOptionalTag || formatTags.contains(tag) || [SyncBase.extensionTag, formerRemoteUnlockTag, NamesMove.extensionTag,
                                              FormerRemoteNames.extensionTag].contains(tag) else {
                throw FormatError.invalid("index root: extension \(tag) is unknown (made by a newer DotSafe?)")
            }
            let value = try reader.lp32()
            if tag == formerRemoteUnlockTag && value.count != Format.nameBytes { throw FormatError.invalid("index root: extension 2's length") }
            if tag == FormerRemoteNames.extensionTag { _ = try FormerRemoteNames.decode(value) }
            extensions.append(Extension(tag: tag, value: value))
        }
        try reader.expectEnd()
        let root = IndexRootV2(generation: generation, writerDevice: writerDevice, devices: devices, specialFiles: specials,
                               topLevel: topLevel, top: top, extensions: extensions)
        try root.validate()
        return root
    }

    /// The MUST-reject rules of §13.5 that need nothing but the root itself.
    public func validate() throws {
        guard generation >= 1 else { throw FormatError.invalid("index root generation 0") }
        guard !devices.isEmpty, Int(writerDevice) < devices.count else { throw FormatError.invalid("index root: writer device") }
        for device in devices { try device.validate() }
        guard Set(devices.map(\.deviceID)).count == devices.count,
              Set(devices.filter { $0.itemPrefix != 0 }.map(\.itemPrefix)).count == devices.filter({ $0.itemPrefix != 0 }).count,
              devices.filter({ $0.itemPrefix == 0 }).count <= 1 else {
            throw FormatError.invalid("index root: two devices with one ID or item prefix")
        }
        guard specialFiles.filter({ $0.role == .ownerUnlock }).count == 1 else { throw FormatError.invalid("index root: owner unlock record") }
        guard topLevel <= Self.maxLevel, topLevel == 0 || !top.isEmpty else { throw FormatError.invalid("index root: level \(topLevel)") }
        var seen = Set<FileRef>()
        for file in specialFiles.map(\.file) + top.map(\.file) {
            guard fileIsValid(file), seen.insert(file).inserted else { throw FormatError.invalid("index root: file \(file)") }
        }
        // A synced vault's move (tag 4 beside it) has several devices: only device 0's names move.
        if let move = try namesMove() {
            guard specialFiles.contains(where: { $0.role == .retiredOwner }) else {
                throw FormatError.invalid("index root: a names move outside a pattern change")
            }
            for file in move.slotFiles {
                guard file.device == 0, fileIsValid(file), seen.insert(file).inserted else {
                    throw FormatError.invalid("index root: names move file \(file)")
                }
            }
        }
        if try formerRemoteNames() != nil, !extensions.contains(where: { $0.tag == Self.formerRemoteUnlockTag }) {
            throw FormatError.invalid("index root: former remote names without a former remote record")
        }
    }

    /// Extension tag 4, when the root has it: names a synced move left on the remote (§13.12).
    public func formerRemoteNames() throws -> FormerRemoteNames? {
        try extensions.first { $0.tag == FormerRemoteNames.extensionTag }.map { try FormerRemoteNames.decode($0.value) }
    }

    /// Extension tag 3, when the root has it: a pattern change moving an upgraded vault's names.
    public func namesMove() throws -> NamesMove? {
        try extensions.first { $0.tag == NamesMove.extensionTag }.map { try NamesMove.decode($0.value) }
    }

    /// A file a structure may live in: owned by its device, not a slot or cover.
    public func fileIsValid(_ file: FileRef) -> Bool {
        guard Int(file.device) < devices.count else { return false }
        let device = devices[Int(file.device)]
        return file.number >= device.reservedNumbers && device.owns(file.number)
    }
}
