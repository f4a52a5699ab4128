import SesameProtocol

extension ProviderCheck {
    /// A check that passed, with what it found.
    static func passed(_ subject: String, url: String? = nil, key: String, _ finding: String) -> ProviderCheck {
        ProviderCheck(subject: subject, url: url, key: key, finding: finding, problem: nil)
    }

    /// A check that did not pass, and why; `key` is the provider-file key to mend, if one is.
    static func failed(_ subject: String, url: String? = nil, key: String?, _ problem: String) -> ProviderCheck {
        ProviderCheck(subject: subject, url: url, key: key, finding: nil, problem: problem)
    }
}

extension ProviderError {
    /// Why a check failed, without the "the provider …" frame a login's error puts around it.
    var checkProblem: String {
        switch self {
        case .transient(let reason, _): reason
        case .invalidResponse(let reason): reason
        case .rejected(let error, _, let code): "refused: \(error)\(code.map { " [\($0)]" } ?? "")"
        default: description
        }
    }
}
