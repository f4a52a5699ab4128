import NIOCore

/// How a stopping server reaches a connection: `OpenConnections` sends its `Stop` down each
/// pipeline, and the handler, which alone knows what its connection is doing, acts on it on
/// the connection's loop, in order with everything else that happens to it.
extension VarlinkConnectionHandler {
    /// The call a connection is answering, as a stop or the peer's hang-up needs to see it.
    struct CallInProgress {
        /// Its method: what a hard stop reports it cut off.
        var method: String
        /// The task answering it off the loop, while there is one.
        var task: Task<Void, Never>? = nil
        /// Whether it streams (`more`): such a call has no end of its own, and is cancelled
        /// when the peer hangs up or the server stops.
        var streaming: Bool
    }

    /// The server is stopping. Gracefully: an idle connection closes, a streaming call is
    /// cancelled, and a call being answered finishes, then its connection ends (`callEnded`).
    /// Hard: the connection closes now, dropping what the peer has not read, and the call it
    /// was answering is cancelled.
    func stopping(_ stop: OpenConnections.Stop, context: ChannelHandlerContext) {
        // The server sends each stop once and never weakens one, but a graceful and a hard stop
        // sent from two threads can reach the loop in either order: the later graceful one is
        // no news and changes nothing.
        guard self.stop == nil || (self.stop == .graceful && stop == .hard) else { return }
        self.stop = stop
        switch stop {
        case .hard:
            cancelCall()
            closeNow(context: context)
        case .graceful:
            guard let current else {
                connections.drained { $0.idle += 1 }
                closeNow(context: context)
                return
            }
            if current.streaming {
                connections.drained { $0.streaming += 1 }
                cancelCall()
            } else {
                connections.drained { $0.answering += 1 }
            }
        }
    }

    /// The current call is over: the connection is idle again. False when the server is
    /// stopping, and the connection should end now that its call is done.
    func callEnded() -> Bool {
        current = nil
        return stop == nil
    }

    /// Cancels the call being answered off the loop, if any: its task, or the stream it goes
    /// on through once its handler has left it.
    func cancelCall() {
        current?.task?.cancel()
        continuingStream?.cancel()
    }

    /// Cancels the current call if it streams: the peer hanging up is how such a call ends.
    /// Any other call is left to finish.
    func cancelStreamingCall() {
        guard current?.streaming == true else { return }
        cancelCall()
    }

    /// Closes the connection at once, without waiting for what was written to be sent.
    private func closeNow(context: ChannelHandlerContext) {
        _ = machine.beginEnding()
        needsFlush = false
        context.close(promise: nil)
    }
}
