import Glibc

/// How sesamectl's token shortcut ended when its GetToken failed, handed across the exec to
/// sesamectl-commands in the environment, so that the failure is worded there without asking
/// sesamed again: asking again would double the wait of a busy daemon or a slow provider, and
/// could reach the provider a second time. Only a failure goes this way, never a token: an error
/// reply carries none.
public enum HandedOverFailure: Sendable, Equatable {
    /// sesamed answered with this error reply (its JSON text, without the NUL).
    case reply(String)
    /// No reply came.
    case noReply(OneShotFailure)

    /// The environment variable it travels in.
    public static let variable = "SESAMECTL_SHORTCUT_FAILURE"
    /// The longest reply handed over: an environment string may not pass 128 KiB (MAX_ARG_STRLEN),
    /// and error replies are a few hundred bytes; a longer one is not handed over, and asked again.
    public static let maximumReplySize = 16 * 1024

    /// The failure as the environment variable's value.
    public var encoded: String {
        switch self {
        case .reply(let text): "reply " + text
        case .noReply(.cannotConnect(let failure)): "connect \(failure.code) \(failure.step)"
        case .noReply(.connectionClosed): "closed"
        case .noReply(.replyTooLarge(let limit)): "too-large \(limit)"
        }
    }

    /// The failure `encoded` describes, or nil when it describes none.
    public init?(encoded: String) {
        let words = encoded.split(separator: " ", maxSplits: 1).map(String.init)
        switch (words.first, words.count == 2 ? words[1] : nil) {
        case ("reply", let text?): self = .reply(text)
        case ("closed", nil): self = .noReply(.connectionClosed)
        case ("too-large", let limit?):
            guard let limit = Int(limit) else { return nil }
            self = .noReply(.replyTooLarge(limit: limit))
        case ("connect", let rest?):
            let parts = rest.split(separator: " ", maxSplits: 1).map(String.init)
            guard parts.count == 2, let code = CInt(parts[0]) else { return nil }
            self = .noReply(.cannotConnect(ConnectFailure(code: code, step: parts[1])))
        default: return nil
        }
    }

    /// Puts `failure` in this process's environment for the program it is about to exec, or
    /// takes any such variable out of it when `failure` is nil (one inherited from elsewhere
    /// must not stand for this run's).
    public static func pass(_ failure: HandedOverFailure?) {
        guard let failure else {
            unsetenv(variable)
            return
        }
        setenv(variable, failure.encoded, 1)
    }

    /// The failure handed to this process, taken out of the environment so that no program it
    /// starts inherits it; nil when none was.
    public static func take() -> HandedOverFailure? {
        guard let value = getenv(variable) else { return nil }
        let failure = HandedOverFailure(encoded: String(cString: value))
        unsetenv(variable)
        return failure
    }
}
