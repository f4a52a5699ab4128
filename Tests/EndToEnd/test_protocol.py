"""The wire under abuse: every malformed input gets its named error or a clean close, and the
daemon keeps serving everyone else."""

import json
import os
import socket
import time

from harness import RawConnection, wait_until


def assert_still_serving(daemon, bystander):
    assert bystander.call("io.sesame.Accounts.List") == {"parameters": {"accounts": []}}
    fresh = RawConnection(daemon.socket_path)
    assert fresh.call("org.varlink.service.GetInfo")["parameters"]["product"] == "sesamed"
    fresh.close()
    assert daemon.process.poll() is None


def test_malformed_json_gets_invalid_message_then_close(daemon):
    bystander = RawConnection(daemon.socket_path)
    offender = RawConnection(daemon.socket_path)
    offender.send_raw(b"{this is not json\0")
    reply = offender.reply()
    assert reply["error"] == "io.sesame.Varlink.InvalidMessage"
    assert offender.is_closed_by_peer()
    assert_still_serving(daemon, bystander)


def test_a_message_over_the_limit_gets_message_too_large_then_close(daemon):
    bystander = RawConnection(daemon.socket_path)
    offender = RawConnection(daemon.socket_path)
    # No NUL at all: the daemon must refuse it without waiting for an end that never comes.
    try:
        offender.send_raw(b'{"method":"org.varlink.service.GetInfo","parameters":{"pad":"' + b"x" * 200_000)
    except BrokenPipeError:
        pass
    reply = offender.reply()
    assert reply == {"error": "io.sesame.Varlink.MessageTooLarge", "parameters": {"limit": 65536}}
    assert offender.is_closed_by_peer()
    assert_still_serving(daemon, bystander)


def test_a_message_just_under_the_limit_is_served(daemon):
    conn = RawConnection(daemon.socket_path)
    pad = "x" * (65536 - 200)
    reply = conn.call("io.sesame.Accounts.List", {"pad": pad})
    assert reply == {"parameters": {"accounts": []}}


def test_unknown_interface_and_method_are_named(daemon):
    conn = RawConnection(daemon.socket_path)
    assert conn.call("io.sesame.Nope.List") == {
        "error": "org.varlink.service.InterfaceNotFound", "parameters": {"interface": "io.sesame.Nope"}}
    assert conn.call("io.sesame.Accounts.Nope") == {
        "error": "org.varlink.service.MethodNotFound", "parameters": {"method": "io.sesame.Accounts.Nope"}}
    # Errors are answers, not reasons to hang up.
    assert conn.call("io.sesame.Accounts.List") == {"parameters": {"accounts": []}}


def test_subscribe_without_more_is_expected_more(daemon):
    conn = RawConnection(daemon.socket_path)
    assert conn.call("io.sesame.Events.Subscribe")["error"] == "org.varlink.service.ExpectedMore"
    assert conn.call("io.sesame.Accounts.List") == {"parameters": {"accounts": []}}


def test_bad_parameters_are_invalid_parameter(daemon):
    conn = RawConnection(daemon.socket_path)
    reply = conn.call("io.sesame.Events.Subscribe", {"since": "yesterday"}, more=True)
    assert reply == {"error": "org.varlink.service.InvalidParameter", "parameters": {"parameter": "since"}}


def test_eof_in_the_middle_of_a_message_is_a_clean_close(daemon):
    bystander = RawConnection(daemon.socket_path)
    offender = RawConnection(daemon.socket_path)
    offender.send_raw(b'{"method":"org.varlink.service.Get')
    offender.close()
    # Give the daemon a moment to read the EOF before checking it is unharmed. Not a correctness
    # wait (nothing shows that it has read it): on a slow machine the check may come first and
    # still passes; the fixture's clean stop afterwards catches a daemon harmed later.
    time.sleep(0.2)
    assert_still_serving(daemon, bystander)


def test_pipelined_calls_are_answered_in_order(daemon):
    conn = RawConnection(daemon.socket_path)
    calls = [
        {"method": "io.sesame.Accounts.List"},
        {"method": "io.sesame.Nope.X"},
        {"method": "org.varlink.service.GetInterfaceDescription", "parameters": {"interface": "io.sesame.Events"}},
        {"method": "io.sesame.Accounts.List", "oneway": True},
        {"method": "org.varlink.service.GetInfo"},
    ]
    conn.send_raw(b"".join(json.dumps(c).encode() + b"\0" for c in calls))
    first, second, third, fifth = (conn.reply() for _ in range(4))
    assert first == {"parameters": {"accounts": []}}
    assert second["error"] == "org.varlink.service.InterfaceNotFound"
    assert third["parameters"]["description"].startswith("#")
    assert fifth["parameters"]["product"] == "sesamed"


def test_streaming_reply_marks_continues_and_ends_when_the_peer_leaves(daemon):
    conn = RawConnection(daemon.socket_path)
    reply = conn.call("io.sesame.Events.Subscribe", {}, more=True)
    assert reply == {"continues": True, "parameters": {"ready": {"sequence": 0}}}
    conn.close()
    bystander = RawConnection(daemon.socket_path)
    assert_still_serving(daemon, bystander)


def test_a_call_being_answered_still_gets_its_reply_before_message_too_large(daemon):
    # Stats is answered off the event loop; the oversized message behind it arrives meanwhile,
    # and at the end of input the daemon reads all that is left at once. The peer gets Stats'
    # reply, then MessageTooLarge, then the close.
    conn = RawConnection(daemon.socket_path)
    try:
        conn.send_raw(json.dumps({"method": "io.sesame.Admin.Stats"}).encode() + b"\0" + b"x" * 150_000)
        conn.sock.shutdown(socket.SHUT_WR)
    except BrokenPipeError:
        pass
    assert "subscribers" in conn.reply()["parameters"]
    assert conn.reply() == {"error": "io.sesame.Varlink.MessageTooLarge", "parameters": {"limit": 65536}}
    assert conn.is_closed_by_peer()


def test_a_peer_that_shuts_down_its_side_still_gets_every_reply_then_the_close(daemon):
    # What `printf '...\0' | socat - UNIX-CONNECT:...` does: send the calls, shut down writing,
    # read to the end. Stats is answered off the event loop, after the end of input has
    # arrived, and its reply must not be lost to it; the calls behind it wait their turn.
    conn = RawConnection(daemon.socket_path)
    conn.send("org.varlink.service.GetInfo")
    conn.send("io.sesame.Admin.Stats")
    conn.send("io.sesame.Accounts.List")
    conn.sock.shutdown(socket.SHUT_WR)
    assert conn.reply()["parameters"]["product"] == "sesamed"
    assert "subscribers" in conn.reply()["parameters"]
    assert conn.reply() == {"parameters": {"accounts": []}}
    assert conn.is_closed_by_peer()
    # A subscription has no end of its own: shutting down its side is hanging up.
    subscriber = RawConnection(daemon.socket_path)
    assert subscriber.call("io.sesame.Events.Subscribe", {}, more=True)["continues"] is True
    subscriber.sock.shutdown(socket.SHUT_WR)
    assert subscriber.is_closed_by_peer()
    stats = RawConnection(daemon.socket_path)
    wait_until(lambda: stats.call("io.sesame.Admin.Stats")["parameters"]["subscribers"] == 0,
               what="the half-closed subscriber to be gone")


def open_descriptors(daemon) -> int:
    return len(os.listdir(f"/proc/{daemon.process.pid}/fd"))


def subscribe_and_leave(daemon, times):
    for _ in range(times):
        conn = RawConnection(daemon.socket_path)
        assert conn.call("io.sesame.Events.Subscribe", {}, more=True)["continues"] is True
        conn.close()


def test_peers_that_leave_mid_subscription_do_not_pile_up(daemon):
    # Asks for the daemon's counts; open throughout, so it is in the baseline and after.
    stats = RawConnection(daemon.socket_path)
    # The first connections make the runtime open a few descriptors of its own (timers, a signal
    # fd); warm up, and wait until those subscribers are gone, so the baseline holds only what stays.
    subscribe_and_leave(daemon, 20)
    wait_until(lambda: stats.call("io.sesame.Admin.Stats")["parameters"]["subscribers"] == 0,
               what="the warm-up subscribers to be gone")
    baseline = open_descriptors(daemon)
    subscribe_and_leave(daemon, 300)
    wait_until(lambda: open_descriptors(daemon) <= baseline + 2,
               what=lambda: f"descriptors back to {baseline} + 2, still {open_descriptors(daemon)}")
    bystander = RawConnection(daemon.socket_path)
    assert_still_serving(daemon, bystander)


def test_a_key_named_twice_is_invalid_message_so_a_proxy_and_sesamed_read_the_same_call(daemon):
    # Foundation would run the first "method" (Admin.Stats); a parser keeping the last would run List.
    conn = RawConnection(daemon.socket_path)
    conn.send_raw(b'{"method":"io.sesame.Admin.Stats","method":"io.sesame.Accounts.List"}\0')
    reply = conn.reply()
    assert reply["error"] == "io.sesame.Varlink.InvalidMessage", reply
    assert "twice" in reply["parameters"]["reason"]


def test_deep_nesting_is_refused_before_it_costs_anything(daemon):
    conn = RawConnection(daemon.socket_path)
    depth = 20_000  # 40 KB, within the fixture's message limit
    message = b'{"method":"io.sesame.Accounts.List","parameters":{"x":' + b"[" * depth + b"]" * depth + b"}}\0"
    conn.send_raw(message)
    reply = conn.reply()
    assert reply["error"] == "io.sesame.Varlink.InvalidMessage", reply
    assert reply["parameters"]["reason"] == "nested deeper than 64 levels"


def test_sesamed_writes_no_core_file(daemon):
    # RLIMIT_CORE is 0 (and the process is not dumpable): a crash cannot put the tokens on disk.
    limits = open(f"/proc/{daemon.process.pid}/limits").read()
    core = next(line for line in limits.splitlines() if line.startswith("Max core file size"))
    assert core.split()[4:6] == ["0", "0"], core
