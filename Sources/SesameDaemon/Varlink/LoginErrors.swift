import SesameProtocol
import SesameProviders
import SesameVarlink
import SesameWire

/// The login errors of `io.sesame.Accounts`, mapped to Varlink in one place.
enum VarlinkLoginError: Error, VarlinkErrorConvertible {
    case noSuchProvider(String)
    case unknownLogin
    case provider(ProviderError)
    /// The provider cannot log in this way (or at all, like Apple): the reason says what to do.
    case unsupported(provider: String, reason: String)

    var varlinkError: VarlinkError {
        switch self {
        case .noSuchProvider(let name): VarlinkError(.noSuchProvider(provider: name))
        case .unknownLogin: VarlinkError(.noSuchLogin)
        case .unsupported(let provider, let reason): VarlinkError(.loginUnsupported(provider: provider, reason: reason))
        case .provider(.accessDenied): VarlinkError(.loginDenied)
        case .provider(.expired): VarlinkError(.loginExpired)
        case .provider(.transient(let reason, _)): VarlinkError(.providerUnavailable(reason: reason))
        case .provider(let error): VarlinkError(.providerFailed(reason: "\(error)"))
        }
    }
}
