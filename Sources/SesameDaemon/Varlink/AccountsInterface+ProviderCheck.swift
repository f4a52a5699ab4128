import SesameProtocol
import SesameProviders
import SesameVarlink
import SesameWire

/// `CheckProvider`: a provider's file checked against the provider, for the person who wrote
/// it to see what to mend before anyone logs in. Only who may mend the file may ask (root, or
/// the user a per-user sesamed runs as): the checks send the client's credentials to the
/// provider, which counts what its client is sent, and other users could mend nothing.
extension AccountsInterface {
    /// Checks the provider `request` names, or says why its file does not read.
    func checkProvider(_ request: ProviderParameters, _ caller: Caller, _ context: VarlinkCallContext) async throws
        -> CheckProviderReply
    {
        guard caller.mayMendProviders else { throw VarlinkError.permissionDenied }
        let file = providers.files[request.provider] ?? request.provider
        if let broken = providers.unreadable.first(where: { $0.name == file }) {
            let running = (try? providers.adapter(request.provider)) != nil
            return CheckProviderReply(file: providers.path(ofFile: file), checks: [Self.unreadable(broken, running)])
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
        return CheckProviderReply(file: providers.path(ofFile: file), checks: checks)
    }

    /// A file that does not read, as one failed check; `running` when sesamed still runs its
    /// provider with the settings it read before the file broke.
    private static func unreadable(_ file: ProviderFiles.Broken, _ running: Bool) -> ProviderCheck {
        let still = running ? "; sesamed runs the provider with the settings it read before" : ""
        return ProviderCheck(
            subject: "provider file",
            url: nil,
            key: file.error.key,
            finding: nil,
            problem: "\(file.error)\(still)"
        )
    }
}
