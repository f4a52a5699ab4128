"""The wire under abuse: every malformed input gets its named error or a clean close, and the
daemon keeps serving everyone else."""

import json
import os
import time

from harness import RawConnection


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
    time.sleep(0.2)  # let the daemon see the EOF before checking it is unharmed
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


def open_descriptors(daemon) -> int:
    return len(os.listdir(f"/proc/{daemon.process.pid}/fd"))


def subscribe_and_leave(daemon, times):
    for _ in range(times):
        conn = RawConnection(daemon.socket_path)
        assert conn.call("io.sesame.Events.Subscribe", {}, more=True)["continues"] is True
        conn.close()


def test_peers_that_leave_mid_subscription_do_not_pile_up(daemon):
    # The first connections make the runtime open a few descriptors of its own (timers, a signal
    # fd); warm up so the baseline holds only what stays.
    subscribe_and_leave(daemon, 20)
    time.sleep(0.5)
    baseline = open_descriptors(daemon)
    subscribe_and_leave(daemon, 300)
    deadline = time.monotonic() + 10
    while open_descriptors(daemon) > baseline + 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert open_descriptors(daemon) <= baseline + 2
    bystander = RawConnection(daemon.socket_path)
    assert_still_serving(daemon, bystander)
