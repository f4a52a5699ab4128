/// How device polling tells its caller about trouble at the provider as it happens (a 503, a
/// timeout), while it goes on polling: a task-local reporter, so no adapter's signature changes.
public enum DeviceLoginTrouble {
    /// Called with a short fixed sentence when a poll meets trouble, and with nil when a poll
    /// gets through again; nil (the default) reports nothing.
    @TaskLocal public static var reporter: (@Sendable (String?) async -> Void)?

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
