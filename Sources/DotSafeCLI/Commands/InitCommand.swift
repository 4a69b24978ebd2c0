import VaultCore
import VaultCrypto
import VaultStore

/// `dotsafe init STORAGE`: a new storage of cover files, and the keyring with its pattern salt
/// if there is none yet.
struct InitCommand: Command {
    static let name = "init"
    static let summary = "Create a storage folder (and the keyring, if none exists)."
    static let usesKeyring = true
    static let discussion = """
        STORAGE must be a new or empty folder. It receives 64 to 128 cover files of
        random data; each pattern mounted on it adds a vault. The keyring holds the
        salt that turns patterns into keys: keep a copy (dotsafe keyring export FILE).
        """
    static let storage = PositionalSpec("STORAGE", help: "The folder to make into a storage.")
    static let signature = CommandSignature(positionals: [storage])

    let storage: String

    init(parsing arguments: ParsedArguments) throws {
        storage = try arguments.required(Self.storage)
    }

    func run(context: CommandContext) throws -> Int32 {
        let keyring = Keyring(option: context.globalOptions.keyringPath, environment: context.environment)
        // Check the keyring before touching the folder, so a bad keyring leaves no half-made storage.
        let salt = try keyring.patternSalt()
        let files: Int
        do { files = try Storage.initialize(at: storage, random: SystemRandom()) } catch StoreError.folderNotEmpty {
            throw CLIError.failure("\(storage) is not empty: a storage is made in a new or empty folder")
        }
        context.standardOutput.writeLine("Created storage \(storage) with \(files) cover files.")
        if salt == nil {
            try keyring.createPatternSalt(rounds: KDFSettings.rounds(context.environment))
            context.standardOutput.writeLine("Created keyring \(keyring.backend.location); keep a copy with 'dotsafe keyring export FILE'.")
        }
        return 0
    }
}

/// Round counts for new salts: 600,000, or `DOTSAFE_KDF_ROUNDS` where tests allow weak ones.
enum KDFSettings {
    static func rounds(_ environment: [String: String]) -> Int {
        if environment["DOTSAFE_ALLOW_WEAK_KDF"] == "1", let rounds = environment["DOTSAFE_KDF_ROUNDS"].flatMap(Int.init), rounds > 0 {
            return rounds
        }
        return 600_000
    }
}
