import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// An exclusive lock on the state directory, held for as long as a sesamed uses the store in it:
/// two sesamed processes on one directory (a service and one started by hand) would each append
/// to the store at their own idea of where it ends. The kernel lets go of it when the process
/// ends, however it ends.
public final class StateDirectoryLock: Sendable {
    private let directory: OpenFile

    private init(directory: OpenFile) {
        self.directory = directory
    }

    /// Takes the lock on `path`, or names the error: `inUse` when another process holds it.
    public static func acquire(_ path: String) throws(StoreError) -> StateDirectoryLock {
        let raw = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard raw >= 0 else { throw .io(operation: "open", path: path, errno: errno) }
        let directory = OpenFile(raw)
        while flock(raw, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            if errno == EWOULDBLOCK { throw .inUse(path: path) }
            throw .io(operation: "lock", path: path, errno: errno)
        }
        return StateDirectoryLock(directory: directory)
    }
}
