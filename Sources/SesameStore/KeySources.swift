import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Where the store's key comes from, tried in this order: a systemd credential
/// (`$CREDENTIALS_DIRECTORY/sesame.key`, filled by `LoadCredentialEncrypted=`), a key file named
/// in the config, and, for development only, a key file generated in the state directory.
public struct KeySources: Sendable {
    /// The credential's name.
    public static let credentialName = "sesame.key"

    /// `$CREDENTIALS_DIRECTORY`, when the service manager set it.
    public var credentialsDirectory: String?
    /// The configured key file, if any.
    public var keyFile: String?
    /// Where a development key is kept when no other source has one; nil forbids generating it.
    public var generatedKeyFile: String?

    /// Creates the list of sources.
    public init(credentialsDirectory: String?, keyFile: String?, generatedKeyFile: String?) {
        self.credentialsDirectory = credentialsDirectory
        self.keyFile = keyFile
        self.generatedKeyFile = generatedKeyFile
    }

    /// The keys that may open the store: the primary key (which seals every write) first, then a
    /// previous one still accepted for reading: `sesame.key.previous` beside a credential, or the
    /// key file's `.next` left by a rekey that was interrupted.
    public struct Loaded: Sendable {
        /// The key every write is sealed with.
        public var primary: StoreKey
        /// Keys that open a store sealed before a rotation.
        public var others: [StoreKey]
        /// Whether the primary key was generated for development and sits in the state directory.
        public var isGenerated: Bool
        /// The key file a rekey replaces (the configured or generated one); nil for a credential,
        /// which only the administrator can replace.
        public var keyFile: String?

        /// Every key, primary first.
        public var all: [StoreKey] { [primary] + others }

        /// Creates the loaded keys directly (the store's fuzz target and tests do).
        package init(primary: StoreKey, others: [StoreKey], isGenerated: Bool, keyFile: String?) {
            self.primary = primary
            self.others = others
            self.isGenerated = isGenerated
            self.keyFile = keyFile
        }
    }

    /// Loads the first source that has a key. Generates the development key only when no other
    /// source is configured at all, and never beside an existing store (`storeExists`): a new
    /// key could not open it, and would be left behind for nothing.
    public func load(storeExists: Bool = false) throws(StoreError) -> Loaded {
        var tried: [String] = []
        if let directory = credentialsDirectory {
            let path = directory + "/" + Self.credentialName
            tried.append("credential \(path)")
            if let primary = try Self.readKey(path, source: "credential \(Self.credentialName)", checkMode: false) {
                let previous = try Self.readKey(
                    path + ".previous",
                    source: "credential \(Self.credentialName).previous",
                    checkMode: false
                )
                return Loaded(primary: primary, others: previous.map { [$0] } ?? [], isGenerated: false, keyFile: nil)
            }
        }
        if let keyFile {
            tried.append("key file \(keyFile)")
            let pending = try Self.readKey(keyFile + ".next", source: "key file \(keyFile).next", checkMode: true)
            guard let primary = try Self.readKey(keyFile, source: "key file \(keyFile)", checkMode: true) else {
                throw .noKey(tried: tried)
            }
            return Loaded(primary: primary, others: pending.map { [$0] } ?? [], isGenerated: false, keyFile: keyFile)
        }
        if let generatedKeyFile {
            tried.append("generated key file \(generatedKeyFile)")
            let source = "generated key \(generatedKeyFile)"
            let pending = try Self.readKey(generatedKeyFile + ".next", source: source + ".next", checkMode: true)
            if let existing = try Self.readKey(generatedKeyFile, source: source, checkMode: true) {
                return Loaded(
                    primary: existing,
                    others: pending.map { [$0] } ?? [],
                    isGenerated: true,
                    keyFile: generatedKeyFile
                )
            }
            guard !storeExists else {
                throw .unusableKey(
                    source: source,
                    reason: "it is missing but the store it sealed exists; restore the key file, "
                        + "or move the store aside to start with no accounts"
                )
            }
            let key = StoreKey.generate(source: source)
            try AtomicFile.write(key.fileContents, to: generatedKeyFile)
            return Loaded(primary: key, others: [], isGenerated: true, keyFile: generatedKeyFile)
        }
        throw .noKey(tried: tried)
    }

    /// Reads a key, or nil when the file does not exist. A key file that others may read is
    /// refused (the key would be no secret), and so is one another user owns (that user could
    /// replace it).
    static func readKey(_ path: String, source: String, checkMode: Bool) throws(StoreError) -> StoreKey? {
        let read: (bytes: [UInt8], status: stat)?
        do {
            read = try FileReader.contentsAndStatus(of: path, limit: 64 << 10)
        } catch .system(let operation, let number) {
            throw .io(operation: operation, path: path, errno: number)
        } catch {
            throw .unusableKey(source: source, reason: "it is larger than a key file can be")
        }
        guard let (bytes, status) = read else { return nil }
        if checkMode && status.st_mode & 0o077 != 0 {
            throw .unusableKey(
                source: source,
                reason: "mode \(String(status.st_mode & 0o777, radix: 8)) lets others read it; use chmod 600"
            )
        }
        if checkMode && status.st_uid != geteuid() {
            throw .unusableKey(
                source: source,
                reason: "it is owned by uid \(status.st_uid), not by sesamed's user (uid \(geteuid())); "
                    + "whoever owns it could replace it"
            )
        }
        return try StoreKey.parse(Data(bytes), source: source)
    }
}
