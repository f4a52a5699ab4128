import CSystemd
import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A swift-log handler that writes structured entries to the systemd journal: the message, its
/// priority, and each metadata key as an upper-case field (`account` → `SESAME_ACCOUNT=`).
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

    public func log(event: LogEvent) {
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
        Self.send(fields)
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

    /// Journal field names are upper-case ASCII letters, digits and underscores, not starting with one.
    static func fieldName(for key: String) -> String {
        let cleaned = key.uppercased().map { character -> Character in
            character.isASCII && (character.isLetter || character.isNumber) ? character : "_"
        }
        return "SESAME_" + String(cleaned)
    }

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
