import Testing

@testable import sesamectl_commands

/// Reading whose socket is at the other end of a loopback connection out of the kernel's tables.
struct LoopbackPeerTests {
    /// 127.0.0.1 as `in_addr.s_addr` holds it on this (little-endian) machine.
    static let loopback: UInt32 = 0x0100_007F
    static let browser = LoopbackPeer.Endpoint(address: loopback, port: 0xA0B1)
    static let listener = LoopbackPeer.Endpoint(address: loopback, port: 0x9C41)

    /// proc(5)'s layout: the listener's own accepted socket (owned by us, uid 0) comes first and
    /// must not be taken for the peer's; the peer's socket is owned by 1000.
    static let tcp = """
          sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
           0: 0100007F:9C41 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
           1: 0100007F:9C41 0100007F:A0B1 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0 20 4 30 10 -1
           2: 0100007F:A0B1 0100007F:9C41 01 00000000:00000000 00:00000000 00000000  1000        0 3 1 0 20 4 30 10 -1
        """

    @Test func thePeersOwnerIsTheUidOfTheSocketWhoseLocalEndIsThePeer() {
        #expect(LoopbackPeer.owner(of: Self.browser, connectedTo: Self.listener, inTable: Self.tcp) == 1000)
        #expect(LoopbackPeer.owner(of: Self.listener, connectedTo: Self.browser, inTable: Self.tcp) == 0)
    }

    @Test func aSocketThatIsGoneHasNoOwner() {
        let other = LoopbackPeer.Endpoint(address: Self.loopback, port: 0xA0B2)
        #expect(LoopbackPeer.owner(of: other, connectedTo: Self.listener, inTable: Self.tcp) == nil)
        #expect(LoopbackPeer.owner(of: Self.browser, connectedTo: Self.listener, inTable: "") == nil)
    }

    @Test func anIPv6SocketConnectedToTheIPv4LoopbackIsFoundByItsMappedAddress() {
        let tcp6 = """
              sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
               0: 0000000000000000FFFF00000100007F:A0B1 0000000000000000FFFF00000100007F:9C41 01 00000000:00000000 00:00000000 00000000  1001        0 9 1 0 20 4 30 10 -1
            """
        #expect(LoopbackPeer.owner(of: Self.browser, connectedTo: Self.listener, inTable: tcp6) == 1001)
    }
}
