import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#endif

/// Whose is the other end of a TCP connection on the loopback interface. RFC 8252 §8.3 leaves a
/// native app's loopback redirect listener to defend itself: any local user can connect to it,
/// and one who learned the login's `state` could hand over a code of their own account. The
/// kernel lists every TCP socket of this network namespace with its owner's uid in
/// /proc/net/tcp and /proc/net/tcp6 (proc(5)), the connecting end among them.
enum LoopbackPeer {
    /// One end of a TCP connection over IPv4.
    struct Endpoint: Equatable {
        /// The address as `in_addr.s_addr` holds it (network byte order).
        let address: UInt32
        /// The port, in host order.
        let port: UInt16
    }

    /// The uid that owns the socket at `peer` connected to `local`, where the kernel lists it;
    /// nil when no socket matches (the peer has gone) or the tables cannot be read.
    static func owner(of peer: Endpoint, connectedTo local: Endpoint) -> UInt32? {
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = contents(of: table) else { continue }
            if let uid = owner(of: peer, connectedTo: local, inTable: text) { return uid }
        }
        return nil
    }

    /// `owner(of:connectedTo:)` for the text of one table.
    static func owner(of peer: Endpoint, connectedTo local: Endpoint, inTable text: String) -> UInt32? {
        let ipv4 = (hex(peer), hex(local))
        // An IPv6 socket that connected to 127.0.0.1 lists v4-mapped addresses (::ffff:a.b.c.d).
        let mapped = ("0000000000000000FFFF0000" + ipv4.0, "0000000000000000FFFF0000" + ipv4.1)
        for line in text.split(separator: "\n").dropFirst() {
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 9 else { continue }
            let (from, to) = (String(fields[1]).uppercased(), String(fields[2]).uppercased())
            guard (from, to) == ipv4 || (from, to) == mapped else { continue }
            // A socket its process has closed (orphaned, or in TIME-WAIT) is listed with inode 0
            // and uid 0: it belongs to nobody now, least of all to root.
            guard fields[9] != "0" else { return nil }
            return UInt32(fields[7])
        }
        return nil
    }

    /// The whole text of a /proc file, read to its end: the kernel hands such a table out a
    /// page at a time, and a reader that takes a short read for the end (as Foundation's file
    /// reading may, the file's size being 0) misses every socket after the first page.
    private static func contents(of path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(descriptor, &chunk, chunk.count)
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { return nil }
            if count == 0 { return String(decoding: bytes, as: UTF8.self) }
            bytes += chunk[..<count]
        }
    }

    /// An endpoint as the kernel writes it there: the address as the hexadecimal of the
    /// 32-bit word it is stored in (so byte order is the machine's), a colon, the port.
    private static func hex(_ endpoint: Endpoint) -> String {
        hexDigits(UInt64(endpoint.address), count: 8) + ":" + hexDigits(UInt64(endpoint.port), count: 4)
    }

    private static func hexDigits(_ value: UInt64, count: Int) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, count - digits.count)) + digits
    }
}
