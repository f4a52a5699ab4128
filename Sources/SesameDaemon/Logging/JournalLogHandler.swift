import CSystemd
import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A swift-log handler that writes structured entries to the systemd journal: the message, its
/// syslog priority, and each metadata key as a field (`account` → `SESAME_ACCOUNT=`, the peer's
/// `peer_uid` → `PEER_UID=`; see `fieldName(for:)`).
public struct JournalLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    private let identifier: String

    /// Creates a handler whose entries carry `SYSLOG_IDENTIFIER=identifier`.
    public init(identifier: String) {
        self.identifier = identifier
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Sends `event` to the journal over its native socket, one field per metadata key.
    public func log(event: LogEvent) {
        Self.send(fields(for: event))
    }

    /// The entry for `event`: its message, priority, identifier and source location, then the
    /// handler's and the call's metadata (the call's wins), sorted by key, one field each.
    func fields(for event: LogEvent) -> [String] {
        var fields = [
            "MESSAGE=\(event.message)",
            "PRIORITY=\(Self.priority(of: event.level))",
            "SYSLOG_IDENTIFIER=\(identifier)",
            "CODE_FILE=\(event.file)",
            "CODE_LINE=\(event.line)",
            "CODE_FUNC=\(event.function)",
        ]
        let merged = metadata.merging(event.metadata ?? [:]) { _, call in call }
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
            fields.append("\(Self.fieldName(for: key))=\(value)")
        }
        return fields
    }

    /// `sd_journal_sendv` returns 0 even when no journal listens, so whether to use this handler is
    /// decided by `isJournalConnected`, never by this call's result.
    private static func send(_ fields: [String]) {
        var storage: [UInt8] = []
        var ranges: [Range<Int>] = []
        for field in fields {
            let start = storage.count
            storage.append(contentsOf: field.utf8)
            ranges.append(start..<storage.count)
        }
        storage.withUnsafeMutableBytes { raw in
            guard let base = raw.baseAddress else { return }
            let vectors = ranges.map { iovec(iov_base: base + $0.lowerBound, iov_len: $0.count) }
            _ = sd_journal_sendv(vectors, Int32(vectors.count))
        }
    }

    /// Metadata keys that name the peer of a Varlink connection; they become fields of their own,
    /// without the `SESAME_` prefix, so `journalctl PEER_UID=1000` finds what a user's calls did.
    static let peerFields = ["peer_uid": "PEER_UID", "peer_pid": "PEER_PID", "peer_gid": "PEER_GID"]

    /// The journal field for a metadata key: a peer key as in `peerFields`, any other as `SESAME_`
    /// and the key upper-cased, each character other than an ASCII letter or digit made `_`, cut
    /// to the journal's 64 characters (systemd.journal-fields(7): upper-case letters, digits and
    /// underscores, not starting with an underscore, which the prefix guarantees).
    static func fieldName(for key: String) -> String {
        if let peer = peerFields[key] { return peer }
        let cleaned = key.uppercased().map { character -> Character in
            character.isASCII && (character.isLetter || character.isNumber) ? character : "_"
        }
        return String(("SESAME_" + String(cleaned)).prefix(maximumFieldNameLength))
    }

    /// The longest field name journald accepts.
    static let maximumFieldNameLength = 64

    /// The syslog severity of a swift-log level (`PRIORITY=`): debug 7 … critical 2. swift-log has
    /// no alert or emergency, and `trace` is below syslog's lowest, so it is debug too.
    static func priority(of level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// Whether standard error is the journal stream systemd set up (`$JOURNAL_STREAM` names the
    /// device and inode of stderr), which is when structured entries should be written.
    public static func isJournalConnected(environment: [String: String]) -> Bool {
        guard let stream = environment["JOURNAL_STREAM"] else { return false }
        let parts = stream.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var status = stat()
        guard fstat(STDERR_FILENO, &status) == 0 else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }
}
