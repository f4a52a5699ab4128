import Dispatch
import FoundationEssentials
import SesameVarlink

#if canImport(Glibc)
    import Glibc
#endif

/// The file of a share's socket: made ready, and removed however the share ends.
enum SharedSocket {
    /// `path`, once nothing stands in the way of listening there (`UnixSocketPath.prepare`): a
    /// socket left behind by a share that was killed (nothing answers at it) is removed; anything
    /// else is refused.
    static func prepare(_ path: String) throws -> String {
        // sockaddr_un's sun_path: 108 bytes with the terminating NUL.
        guard path.utf8.count <= 107 else {
            throw ExitFailure.message("\(path) is too long for a Unix socket (at most 107 bytes).")
        }
        do {
            try UnixSocketPath.prepare(path)
        } catch .alreadyInUse {
            throw ExitFailure.message("something listens at \(path) already; choose another path.")
        } catch .notASocket {
            throw ExitFailure.message("\(path) exists and is not a socket; choose another path.")
        } catch {
            throw ExitFailure.message("cannot use \(path): \(error)")
        }
        return path
    }

    /// Removes the share's socket, so that nothing more connects to it.
    static func remove(_ path: String) {
        unlink(path)
    }

    /// Removes the socket and ends sesamectl on SIGINT, SIGTERM or SIGHUP (a closed terminal),
    /// with 128 + the signal as a shell reports it. Keep the sources returned while sharing.
    static func removeOnSignals(_ path: String) -> [any DispatchSourceSignal] {
        [SIGINT, SIGTERM, SIGHUP].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                unlink(path)
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
        guard let entry = getgrnam(name) else { throw ExitFailure.message("no group named \(name).") }
        return entry.pointee.gr_gid
    }
}
