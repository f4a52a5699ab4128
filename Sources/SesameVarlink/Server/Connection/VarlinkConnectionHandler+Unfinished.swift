import NIOCore

/// A message the peer leaves unfinished holds bytes here, which its uid's allowance counts and a
/// timer bounds (`UnfinishedMessages`).
extension VarlinkConnectionHandler {
    /// What runs when a message stayed unfinished for the timeout. While nothing is read (a
    /// call ahead of it is being answered), the wait is not the peer's: the timer starts again.
    func unfinishedTimeout(context: ChannelHandlerContext) -> @Sendable () -> Void {
        let handler = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        return {
            let (handler, context) = handler.value
            guard handler.machine.mayRead else {
                handler.unfinished.restart(
                    in: handler.shared.unfinished,
                    on: context.eventLoop,
                    onTimeout: handler.unfinishedTimeout(context: context)
                )
                return
            }
            handler.closeForUnfinished("a message stayed unfinished for too long", context: context)
        }
    }

    /// Ends a connection that holds part of a message it may not (`UnfinishedMessages`); the
    /// replies already written are still sent.
    func closeForUnfinished(_ reason: String, context: ChannelHandlerContext) {
        guard !machine.isEnding else { return }
        answerer.log(
            .notice,
            "closing connection: \(reason)",
            peer: peer,
            metadata: [
                "bytes": "\(machine.unfinishedBytes)", "user_bytes": "\(shared.unfinished.bytes(of: peer.uid))",
            ]
        )
        unfinished.release(uid: peer.uid, in: shared.unfinished)
        end(context: context)
    }
}
