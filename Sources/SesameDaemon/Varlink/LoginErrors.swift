import SesameProviders
import SesameVarlink

/// The login errors of `io.sesame.Accounts`, mapped to Varlink in one place.
enum VarlinkLoginError: Error, VarlinkErrorConvertible {
    case noSuchProvider(String)
    case unknownLogin
    case provider(ProviderError)
    /// The provider cannot log in this way (or at all, like Apple): the reason says what to do.
    case unsupported(provider: String, reason: String)

    var varlinkError: VarlinkError {
        let interface = "io.sesame.Accounts."
        switch self {
        case .noSuchProvider(let name):
            return VarlinkError(interface + "NoSuchProvider", parameters: ["provider": .string(name)])
        case .unknownLogin:
            return VarlinkError(interface + "NoSuchLogin")
        case .unsupported(let provider, let reason):
            return VarlinkError(
                interface + "LoginUnsupported",
                parameters: ["provider": .string(provider), "reason": .string(reason)]
            )
        case .provider(.accessDenied):
            return VarlinkError(interface + "LoginDenied")
        case .provider(.expired):
            return VarlinkError(interface + "LoginExpired")
        case .provider(.transient(let reason, _)):
            return VarlinkError(interface + "ProviderUnavailable", parameters: ["reason": .string(reason)])
        case .provider(let error):
            return VarlinkError(interface + "ProviderFailed", parameters: ["reason": .string("\(error)")])
        }
    }
}
