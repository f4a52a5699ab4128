import Testing

@testable import sesamectl_commands

/// One answer to "which unit serves this socket", for starting and for reloading alike.
struct DaemonUnitTests {
    @Test func theSystemsSocketIsTheSystemUnitWithSudoForOthers() {
        let unit = DaemonUnit(socket: "/run/sesame/io.sesame")
        #expect(unit == .system)
        #expect(unit.systemctl("reload", "sesamed", asRoot: true) == "systemctl reload sesamed")
        #expect(unit.systemctl("start", "sesamed.socket", asRoot: false) == "sudo systemctl start sesamed.socket")
    }

    @Test func aUsersSocketIsTheUserUnitAndAnyOtherPathNone() {
        #expect(
            DaemonUnit(socket: "/run/user/1000/sesame/io.sesame").systemctl("reload", "sesamed", asRoot: false)
                == "systemctl --user reload sesamed"
        )
        #expect(DaemonUnit(socket: "/tmp/share.sock").systemctl("start", "sesamed.socket") == nil)
        #expect(DaemonUnit(socket: "/srv/sesame/io.sesame.old") == DaemonUnit.none)
    }
}
