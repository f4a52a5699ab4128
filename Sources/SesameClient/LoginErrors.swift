import SesameVarlink

extension SesameError {
    /// The errors of a login in plain words, or nil for another error. A provider's failure
    /// reason comes from sesamed already worded (e.g. "the provider refused: invalid_grant").
    static func loginErrorText(_ error: VarlinkError) -> String? {
        let reason = error.parameters["reason"]?.stringValue ?? ""
        switch error.name {
        case "io.sesame.Accounts.NoSuchProvider":
            return "no provider named \(error.parameters["provider"]?.stringValue ?? "so") is configured"
        case "io.sesame.Accounts.NoSuchLogin":
            return "no such login is waiting (it was finished, expired, or never started)"
        case "io.sesame.Accounts.LoginDenied":
            return "the login was denied"
        case "io.sesame.Accounts.LoginExpired":
            return "the login was not completed in time"
        case "io.sesame.Accounts.ProviderUnavailable":
            return "the provider cannot be reached now\(reason.isEmpty ? "" : " (\(reason))"); try again later"
        case "io.sesame.Accounts.LoginUnsupported":
            return reason.isEmpty ? "this provider cannot log in that way" : reason
        case "io.sesame.Accounts.ProviderFailed":
            return reason.isEmpty ? "the provider failed" : reason
        default:
            return nil
        }
    }
}
