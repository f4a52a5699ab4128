import NIOCore

/// What every connection handler of a server shares.
extension VarlinkConnectionHandler {
    /// What every connection of a server uses, held once for all of them.
    final class Shared: Sendable {
        let answerer: CallAnswerer
        let connections: OpenConnections
        let gate: (any VarlinkConnectionGate)?
        let largeMessages = LargeMessageLane()
        let maximumMessageSize: Int
        let unfinished: UnfinishedMessages

        init(
            answerer: CallAnswerer,
            connections: OpenConnections,
            gate: (any VarlinkConnectionGate)?,
            maximumMessageSize: Int,
            unfinished: UnfinishedMessages
        ) {
            self.answerer = answerer
            self.connections = connections
            self.gate = gate
            self.maximumMessageSize = maximumMessageSize
            self.unfinished = unfinished
        }
    }
}
