import SesameProtocol
import SesameProviders
import SesameVarlink

/// `CheckProvider`: a provider's file checked against the provider, for the person who wrote
/// it to see what to mend before anyone logs in.
extension AccountsInterface {
    /// Checks the provider `request` names, or says why its file does not read.
    func checkProvider(_ request: ProviderParameters, _ caller: Caller, _ context: VarlinkCallContext) async throws
        -> CheckProviderReply
    {
        if let broken = providers.broken.first(where: { $0.name == request.provider }) {
            return CheckProviderReply(
                file: providers.path(ofFile: broken.name),
                checks: [Self.unreadable(broken, forRoot: caller.isRoot)]
            )
        }
        let adapter = try providers.adapter(request.provider)
        let uid = caller.peer.uid
        let checks = await adapter.checkConfiguration { [trust, engine] in
            trust.providerCallWait(for: uid, at: engine.clock.now).map { .seconds($0) }
        }
        let failed = checks.filter { $0.problem != nil }.map(\.subject)
        context.logger.info(
            "provider checked",
            metadata: ["provider": "\(request.provider)", "failed": "\(failed.joined(separator: ","))"]
        )
        return CheckProviderReply(
            file: providers.files[request.provider].flatMap(providers.path(ofFile:)),
            checks: checks
        )
    }

    /// A file that does not read, as one failed check. Only root is shown what is wrong in it:
    /// a parser's message may quote the file, and the file may hold a secret.
    private static func unreadable(_ file: ProviderFiles.Broken, forRoot: Bool) -> ProviderCheck {
        ProviderCheck(
            subject: "provider file",
            url: nil,
            key: file.error.key,
            finding: nil,
            problem: forRoot ? "\(file.error)" : "does not read (root sees why in `sesamectl providers --check`)"
        )
    }
}
