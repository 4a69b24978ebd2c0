import Foundation
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
        salt that turns patterns into keys: keep a copy (dotsafe keyring export FILE,
        or on paper: dotsafe keyring export --text). With --keyring secret-service the
        salt goes to the desktop's Secret Service (GNOME Keyring, KWallet), and the
        keyring file records that choice. --kdf scrypt makes each guess of a pattern
        also cost memory (64 MiB); it applies to a keyring made now.
        """
    static let storage = PositionalSpec("STORAGE", help: "The folder to make into a storage.")
    static let kdf = OptionSpec.value("kdf", placeholder: "KDF", help: "For a new keyring: pbkdf2 (the default) or scrypt.")
    static let signature = CommandSignature(options: [kdf], positionals: [storage])

    let storage: String
    let kdfName: String?

    init(parsing arguments: ParsedArguments) throws {
        storage = try arguments.required(Self.storage)
        kdfName = arguments.value(Self.kdf)
        if let kdfName, kdfName != "pbkdf2", kdfName != "scrypt" {
            throw CLIError.usage("unknown --kdf '\(kdfName)': use pbkdf2 or scrypt")
        }
    }

    func run(context: CommandContext) throws -> Int32 {
        let keyring = try Keyring(option: context.globalOptions.keyringPath, environment: context.environment)
        let salt = try keyring.patternSalt()
        let secretService = keyring.backend as? SecretServiceKeyringBackend
        if let kdfName, let salt {
            throw CLIError.failure("the keyring \(keyring.backend.location) exists already (\(salt.kdf)): --kdf \(kdfName) applies only to a new keyring; nothing was changed")
        }
        if (try? Storage.open(at: storage)) != nil {
            // Nothing is changed: a new keyring here would open none of its vaults.
            throw CLIError.failure(salt == nil
                ? "\(storage) is a storage already, and its vaults need the keyring they were made with: import your backup with 'dotsafe keyring import FILE' or 'dotsafe keyring import --text' (init makes new storages only)"
                : "\(storage) is a storage already: mount it with 'dotsafe mount \(storage) MOUNTPOINT' (init makes new storages only)")
        }
        if let entries = try? FileManager.default.contentsOfDirectory(atPath: storage), !entries.isEmpty {
            throw CLIError.failure("\(storage) is not empty: a storage is made in a new or empty folder")
        }
        // The keyring first: one that cannot be written (a locked Secret Service) leaves no storage behind.
        if salt == nil {
            try secretService?.checkRecordPlace()
            try keyring.createPatternSalt(kdf: KDFSettings.kdf(named: kdfName, context.environment))
            try secretService?.writeRecord()
        }
        let files: Int
        do { files = try Storage.initialize(at: storage, random: SystemRandom()) } catch StoreError.folderNotEmpty {
            throw CLIError.failure("\(storage) is not empty: a storage is made in a new or empty folder")
        }
        context.standardOutput.writeLine("Created storage \(storage) with \(files) cover files.")
        if salt == nil {
            context.standardOutput.writeLine("Created the keyring \(keyring.backend.place); keep a copy with 'dotsafe keyring export FILE' or 'dotsafe keyring export --text'.")
        }
        return 0
    }
}

/// Parameters for new salts: PBKDF2 with 600,000 rounds or scrypt with 64 MiB; where tests
/// allow weak ones, `DOTSAFE_KDF_ROUNDS` and `DOTSAFE_SCRYPT_N` make them cheaper.
enum KDFSettings {
    static func rounds(_ environment: [String: String]) -> Int {
        if environment["DOTSAFE_ALLOW_WEAK_KDF"] == "1", let rounds = environment["DOTSAFE_KDF_ROUNDS"].flatMap(Int.init), rounds > 0 {
            return rounds
        }
        return 600_000
    }

    static func kdf(named name: String?, _ environment: [String: String]) -> PatternKDF {
        guard name == "scrypt" else { return .pbkdf2(rounds: rounds(environment)) }
        if environment["DOTSAFE_ALLOW_WEAK_KDF"] == "1", let n = environment["DOTSAFE_SCRYPT_N"].flatMap(UInt64.init), n > 1 {
            return .scrypt(n: n, r: 8, p: 1)
        }
        return PatternKDF.standardScrypt
    }
}
