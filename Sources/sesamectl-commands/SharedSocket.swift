import Dispatch
import FoundationEssentials
import SesameVarlink
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The file of a share's socket: made ready before the relay binds it, and removed however the
/// share ends, but only while it is still the one this share bound (a new share at the same
/// path keeps its own).
final class SharedSocket: Sendable {
    let path: String
    private let identity = Mutex<FileIdentity?>(nil)

    /// Clears `path` for a new socket (`UnixSocketPath.prepare`): a socket left behind by a share
    /// that was killed (nothing answers at it) is removed; anything else is refused.
    init(preparing path: String) throws {
        // sockaddr_un's sun_path: 108 bytes with the terminating NUL.
        guard path.utf8.count <= 107 else {
            throw ExitError.message("\(path) is too long for a Unix socket (at most 107 bytes).")
        }
        do {
            try UnixSocketPath.prepare(path)
        } catch .alreadyInUse {
            throw ExitError.message("something listens at \(path) already; choose another path.")
        } catch .notASocket {
            throw ExitError.message("\(path) exists and is not a socket; choose another path.")
        } catch {
            throw ExitError.message("cannot use \(path): \(error)")
        }
        self.path = path
    }

    /// Notes that the socket now at `path` is this share's: the one `remove` may remove.
    func bound() {
        identity.withLock { $0 = UnixSocketPath.identity(of: path) }
    }

    /// Gives the socket `group` (when asked) and then `mode`, never following a link put in its
    /// place, so that it is never open wider than asked, even for a moment.
    func setOwnership(mode: UInt16, group: gid_t?) throws {
        if let group, lchown(path, uid_t.max, group) != 0 {
            throw ExitError.message("cannot give \(path) the group \(group): \(String(cString: strerror(errno)))")
        }
        guard fchmodat(AT_FDCWD, path, mode_t(mode), AT_SYMLINK_NOFOLLOW) == 0 else {
            throw ExitError.message("cannot set the mode of \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Removes the share's socket, so that nothing more connects to it.
    func remove() {
        guard let bound = identity.withLock({ $0 }) else { return }
        UnixSocketPath.remove(path, ifStill: bound)
    }

    /// Removes the socket and ends sesamectl on SIGINT, SIGTERM or SIGHUP (a closed terminal),
    /// with 128 + the signal as a shell reports it. Keep the sources returned while sharing.
    func removeOnSignals() -> [any DispatchSourceSignal] {
        [SIGINT, SIGTERM, SIGHUP].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [self] in
                remove()
                printError("share ended: interrupted; \(path) is removed.")
                // _exit: this runs on a dispatch thread while the main task still runs, so no
                // atexit handler may race it; sesamed sees the connection close and logs the end.
                _exit(128 + number)
            }
            source.resume()
            return source
        }
    }

    /// The gid of the group `name` (or a number).
    static func groupID(named name: String) throws -> gid_t {
        if let number = gid_t(name) { return number }
        guard let entry = getgrnam(name) else { throw ExitError.message("no group named \(name).") }
        return entry.pointee.gr_gid
    }
}
