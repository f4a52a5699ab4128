import NIOConcurrencyHelpers
import NIOCore

/// What every connection handler of a server shares.
extension VarlinkConnectionHandler {
    /// What every connection of a server uses, held once for all of them.
    final class Shared: Sendable {
        let answerer: CallAnswerer
        let connections: OpenConnections
        let gate: (any VarlinkConnectionGate)?
        let largeMessages = LargeMessageLane()
        let tasks = OffLoopTasks()
        let stopReport = StopReport()
        let maximumMessageSize: Int
        let unfinished: UnfinishedMessages
        private let methodNames = NIOLockedValueBox(MethodNames())

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

        /// `name`, as one copy shared by every streaming call of that method: each idle
        /// subscriber keeps its call's name, and its own copy would cost it 64 bytes.
        func sharedName(_ name: String) -> String {
            methodNames.withLockedValue { $0.shared(name) }
        }
    }
}

/// The names of the methods whose calls went on through a stream, so that every live streaming
/// call keeps one shared copy of its method's name instead of its own. Only names an interface
/// took are offered, and the table is bounded all the same (`limit` names of at most `longest`
/// bytes): past that a name is kept as it is.
private struct MethodNames {
    static let limit = 64
    static let longest = 256
    private var names: Set<String> = []

    /// `name`, as the copy already kept if there is one.
    mutating func shared(_ name: String) -> String {
        if let index = names.firstIndex(of: name) { return names[index] }
        if names.count < Self.limit, name.utf8.count <= Self.longest { names.insert(name) }
        return name
    }
}
