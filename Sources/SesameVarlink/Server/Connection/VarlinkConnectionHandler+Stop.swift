import NIOCore

/// How a stopping server reaches a connection: `OpenConnections` sends its `Stop` down each
/// pipeline, and the handler, whose state machine alone knows what its connection is doing,
/// acts on it on the connection's loop, in order with everything else that happens to it.
extension VarlinkConnectionHandler {
    /// The server is stopping: the machine says what that means for this connection, the
    /// handler does it, and a graceful stop's finding is reported for the server's log.
    func stopping(_ stop: OpenConnections.Stop, context: ChannelHandlerContext) {
        let action = machine.stopRequested(stop)
        if stop == .graceful { shared.stopReport.drained(action) }
        switch action {
        case .closeNow(let call):
            call?.cancel()
            needsFlush = false
            context.close(promise: nil)
        case .cancelStreaming(let call):
            call.cancel()
        case .letFinish, .nothing:
            break
        }
    }
}
