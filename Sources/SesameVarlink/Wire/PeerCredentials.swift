/// Who is on the other end of a Unix socket, as the kernel reported it at connect time (`SO_PEERCRED`).
public struct PeerCredentials: Sendable, Hashable, CustomStringConvertible {
    /// The peer's process id when it connected.
    public var pid: Int32
    /// The peer's effective user id.
    public var uid: UInt32
    /// The peer's effective group id.
    public var gid: UInt32

    /// Creates credentials from their parts.
    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    public var description: String { "pid=\(pid) uid=\(uid) gid=\(gid)" }
}
