/// How device polling tells its caller about trouble at the provider as it happens (a 503, a
/// timeout), while it goes on polling. The report is a parameter of `finishDeviceLogin`, not a
/// task-local: optimized builds crash binding a function-typed task-local (a toolchain fault,
/// shown alone by the `repro-task-local-function` target).
public enum DeviceLoginTrouble {
    /// Called with a short fixed sentence when a poll meets trouble, and with nil when a poll
    /// gets through again.
    public typealias Report = @Sendable (String?) async -> Void

    /// Reports nothing: for callers that have nobody to tell.
    public static let ignored: Report = { _ in }

    /// What a person is told while polls wait for the user's allowance of provider calls.
    public static let unpaid = "this user's calls to the provider are at sesamed's limit; polling more slowly"

    /// What a person is told about a transient failure: a fixed sentence built from the kind of
    /// failure and a status number only, never from the provider's words.
    public static func sentence(for reason: String) -> String {
        if reason.hasPrefix("HTTP "), let status = Int(reason.dropFirst(5)) {
            return "the provider answered \(status); still trying"
        }
        if reason.hasPrefix("timed out") { return "the provider did not answer in time; still trying" }
        if reason == "temporarily_unavailable" { return "the provider is temporarily unavailable; still trying" }
        return "cannot reach the provider; still trying"
    }
}
