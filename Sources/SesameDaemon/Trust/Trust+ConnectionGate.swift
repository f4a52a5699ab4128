import SesameVarlink

/// The gate every new connection passes before it is read: its uid's share of connections, and
/// the total, which the process's open-file limit bounds.
extension Trust: VarlinkConnectionGate {
    /// Admits a connection within its uid's limit and the total; root has a reserve beyond
    /// the total, so an administrator is still served when other users hold every connection.
    func admit(_ peer: PeerCredentials) -> VarlinkError? {
        let descriptorLimit = self.descriptorLimit
        return state.withLock { state in
            let total = state.limits.totalConnections(descriptorLimit: descriptorLimit)
            let open = state.held[.connection, default: [:]].values.reduce(0, +)
            guard open < total + (peer.uid == 0 ? UserLimits.rootReserve : 0) else {
                return VarlinkError(.tooManyConnections(limit: total))
            }
            return Self.take(.connection, for: peer.uid, in: &state)
        }
    }

    /// Gives back the connection `admit` let in.
    func release(_ peer: PeerCredentials) {
        release(.connection, for: peer.uid)
    }
}
