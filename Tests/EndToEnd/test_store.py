"""The encrypted token store end to end: state survives restarts and SIGKILL, nothing readable
at rest, keys from a real systemd credential, clear refusals, and rekeying."""

import os
import random
import signal
import subprocess
import time
from pathlib import Path

from harness import SESAMECTL, Daemon, RawConnection, daemon_reachable_by_other_users, import_tokens

ACCESS = "AT-store-e2e-3b9f0c"
REFRESH = "RT-store-e2e-d41e77"
# What the accounts of this module are imported with; each import adds its subject.
TOKENS = {"access_token": ACCESS, "refresh_token": REFRESH, "expires_in": 3600}


def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "store.key"
    path.write_text(os.urandom(32).hex() + "\n")
    path.chmod(0o600)
    return path


def keyed_daemon(tmp_path: Path, key: Path, extra="", env=None) -> Daemon:
    return Daemon(tmp_path, config=f'[store]\nkey_file = "{key}"\nallow_generated_key = false\n{extra}', env=env)


def accounts(daemon):
    return {a["id"]: a for a in RawConnection(daemon.socket_path).call("io.sesame.Accounts.List")["parameters"]["accounts"]}


def before_a_restart(tmp_path: Path, key: Path, actions):
    """Runs a keyed daemon, calls `actions` with a connection to it, stops it cleanly and
    returns what `actions` returned."""
    daemon = keyed_daemon(tmp_path, key)
    try:
        daemon.wait_ready()
        result = actions(RawConnection(daemon.socket_path))
        assert daemon.stop() == 0
        return result
    finally:
        daemon.kill()


def test_accounts_events_and_sequence_numbers_survive_a_restart(tmp_path):
    key = key_file(tmp_path)

    def actions(conn):
        kept = import_tokens(conn, subject="alice", **TOKENS)
        gone = import_tokens(conn, subject="bob", **TOKENS)
        conn.call("io.sesame.Accounts.Logout", {"account": gone["id"]})
        return kept, gone

    kept, gone = before_a_restart(tmp_path, key, actions)
    again = keyed_daemon(tmp_path, key)
    try:
        again.wait_ready()
        listed = accounts(again)
        assert listed[kept["id"]]["state"] == "active" and listed[gone["id"]]["state"] == "loggedOut"
        conn = RawConnection(again.socket_path)
        assert conn.call("io.sesame.Accounts.GetToken", {"account": kept["id"]})["parameters"]["accessToken"] == ACCESS
        # Sequence numbers go on from where they were, and a subscriber from before the restart
        # is replayed what it missed: each account keeps its last events in the store.
        conn.send("io.sesame.Events.Subscribe", {"since": 1}, more=True)
        assert conn.reply()["parameters"] == {"ready": {"sequence": 3}}
        missed = [conn.reply()["parameters"]["event"] for _ in range(2)]
        assert [(e["sequence"], e["kind"], e["account"]) for e in missed] == [
            (2, "loggedIn", gone["id"]), (3, "loggedOut", gone["id"])]
        other = RawConnection(again.socket_path)
        other.call("io.sesame.Accounts.Logout", {"account": kept["id"]})
        assert conn.reply()["parameters"]["event"]["sequence"] == 4
        # sesamectl shows the same history, as it happened before the restart.
        watch = subprocess.Popen(
            [str(SESAMECTL), "watch", "--since", "0", "--no-follow", "--socket", str(again.socket_path)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            lines = [watch.stdout.readline() for _ in range(5)]
        finally:
            watch.kill()
            watch.wait()
        assert lines[0] == "ready sequence=4\n", lines
        assert [line.split()[0] + " " + line.split()[2] for line in lines[1:]] == [
            "1 loggedIn", "2 loggedIn", "3 loggedOut", "4 loggedOut"], lines
        assert again.stop() == 0
    finally:
        again.kill()


def test_a_since_from_before_an_event_no_longer_kept_gets_a_resync_after_a_restart(tmp_path):
    """A removed account's events go with it: a subscriber from before them is told to resync
    rather than replayed a history with a hole in it."""
    key = key_file(tmp_path)

    def actions(conn):
        kept = import_tokens(conn, subject="alice", **TOKENS)
        gone = import_tokens(conn, subject="bob", **TOKENS)
        assert "error" not in conn.call("io.sesame.Accounts.Remove", {"account": gone["id"]})
        conn.call("io.sesame.Accounts.Logout", {"account": kept["id"]})
        return kept

    kept = before_a_restart(tmp_path, key, actions)
    again = keyed_daemon(tmp_path, key)
    try:
        again.wait_ready()
        old = RawConnection(again.socket_path)
        old.send("io.sesame.Events.Subscribe", {"since": 1}, more=True)
        assert old.reply()["parameters"] == {"ready": {"sequence": 4}}
        assert [a["id"] for a in old.reply()["parameters"]["resync"]["accounts"]] == [kept["id"]]
        recent = RawConnection(again.socket_path)
        recent.send("io.sesame.Events.Subscribe", {"since": 3}, more=True)
        assert recent.reply()["parameters"] == {"ready": {"sequence": 4}}
        event = recent.reply()["parameters"]["event"]
        assert (event["sequence"], event["kind"], event["account"]) == (4, "loggedOut", kept["id"])
        assert again.stop() == 0
    finally:
        again.kill()


def test_the_state_directory_holds_no_token_in_the_clear(tmp_path):
    key = key_file(tmp_path)
    daemon = keyed_daemon(tmp_path, key)
    try:
        daemon.wait_ready()
        import_tokens(daemon, subject="alice", **TOKENS)
        files = sorted((p for p in daemon.state_dir.rglob("*") if p.is_file()), key=lambda p: p.name)
        # The store, and its sequence mark (the highest event sequence written; README "Store rollback").
        assert [p.name for p in files] == ["sessions.store", "sessions.store.sequence"]
        # Two slots 4 KiB apart, each the number with a checksum; the first number fills both.
        mark = files[1].read_bytes()
        slots = [mark[:60], mark[4096:]]
        assert len(mark) == 4096 + 60 and set(mark[60:4096]) == {0}
        assert all(s.startswith(b"sesame-store-sequence 00000000000000000001 ") for s in slots)
        assert oct(daemon.state_dir.stat().st_mode & 0o777) == "0o700"
        assert [oct(p.stat().st_mode & 0o777) for p in files] == ["0o600", "0o600"]
        strings = subprocess.run(["strings", "-n", "4", *map(str, files)], capture_output=True, text=True).stdout
        grep = subprocess.run(["grep", "-r", "-a", "-e", ACCESS, "-e", REFRESH, "-e", "alice", str(daemon.state_dir)])
        assert grep.returncode == 1, "grep found token material in the state directory"
        assert ACCESS not in strings and REFRESH not in strings
        assert daemon.stop() == 0
    finally:
        daemon.kill()


def test_a_systemd_credential_opens_the_store(tmp_path):
    raw_key = tmp_path / "raw.key"
    raw_key.write_bytes(os.urandom(32))
    credential = tmp_path / "sesame.key.cred"
    subprocess.run(["systemd-creds", "encrypt", "--with-key=host", "--name=sesame.key", str(raw_key), str(credential)],
                   check=True, capture_output=True)
    raw_key.unlink()

    def hand_over(directory: Path):
        # What LoadCredentialEncrypted=sesame.key does before starting the service.
        directory.mkdir(mode=0o700)
        subprocess.run(["systemd-creds", "decrypt", "--name=sesame.key", str(credential), str(directory / "sesame.key")],
                       check=True, capture_output=True)
        return {"CREDENTIALS_DIRECTORY": str(directory)}

    daemon = Daemon(tmp_path, config="[store]\nallow_generated_key = false\n", env=hand_over(tmp_path / "creds1"))
    try:
        daemon.wait_ready()
        account = import_tokens(daemon, subject="alice", **TOKENS)
        assert "credential sesame.key" in daemon.log()
        assert daemon.stop() == 0
    finally:
        daemon.kill()
    again = Daemon(tmp_path, config="[store]\nallow_generated_key = false\n", env=hand_over(tmp_path / "creds2"))
    try:
        again.wait_ready()
        assert account["id"] in accounts(again)
        assert again.stop() == 0
    finally:
        again.kill()


def test_a_wrong_or_missing_key_says_which_source_was_tried(tmp_path):
    key = key_file(tmp_path)
    daemon = keyed_daemon(tmp_path, key)
    try:
        daemon.wait_ready()
        import_tokens(daemon, subject="alice", **TOKENS)
        assert daemon.stop() == 0
    finally:
        daemon.kill()
    store = tmp_path / "state" / "sessions.store"
    before = store.read_bytes()

    wrong = tmp_path / "wrong.key"
    wrong.write_text(os.urandom(32).hex())
    wrong.chmod(0o600)
    refused = keyed_daemon(tmp_path, wrong)
    try:
        assert refused.process.wait(20) != 0
        log = refused.log()
        assert "was sealed with key" in log and f"key file {wrong}" in log, log
    finally:
        refused.kill()

    missing = Daemon(tmp_path, config='[store]\nkey_file = "/nonexistent/store.key"\nallow_generated_key = false\n')
    try:
        assert missing.process.wait(20) != 0
        assert "no key for the token store; tried key file /nonexistent/store.key" in missing.log()
        assert "credential sesame.key (make-credential key)" in missing.log()
    finally:
        missing.kill()

    key.chmod(0o644)
    too_open = keyed_daemon(tmp_path, key)
    try:
        assert too_open.process.wait(20) != 0
        assert "lets others read it" in too_open.log()
    finally:
        too_open.kill()
    assert store.read_bytes() == before, "a store that could not be opened is never rewritten"


def test_a_tampered_store_is_refused_or_moved_aside_as_configured(tmp_path):
    key = key_file(tmp_path)
    daemon = keyed_daemon(tmp_path, key)
    try:
        daemon.wait_ready()
        import_tokens(daemon, subject="alice", **TOKENS)
        assert daemon.stop() == 0
    finally:
        daemon.kill()
    store = tmp_path / "state" / "sessions.store"
    damaged = bytearray(store.read_bytes())
    damaged[len(damaged) // 2] ^= 0x40
    store.write_bytes(bytes(damaged))

    refused = keyed_daemon(tmp_path, key)
    try:
        assert refused.process.wait(20) != 0
        assert "fails authentication" in refused.log()
        assert store.read_bytes() == bytes(damaged)
    finally:
        refused.kill()

    moved = keyed_daemon(tmp_path, key, extra='on_damage = "move-aside"\n')
    try:
        moved.wait_ready()
        assert accounts(moved) == {}
        aside = list((tmp_path / "state").glob("sessions.store.damaged-*"))
        assert len(aside) == 1 and aside[0].read_bytes() == bytes(damaged)
        assert "moved it aside" in moved.log()
        assert moved.stop() == 0
    finally:
        moved.kill()


def test_rekey_is_for_root_and_the_new_key_opens_the_store(tmp_path):
    key = key_file(tmp_path)
    daemon = keyed_daemon(tmp_path, key)
    try:
        daemon.wait_ready()
        account = import_tokens(daemon, subject="alice", **TOKENS)
        old_key = key.read_text()
        result = subprocess.run([str(SESAMECTL), "rekey", "--socket", str(daemon.socket_path)],
                                capture_output=True, text=True, timeout=30)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("token store sealed with key ")
        assert key.read_text() != old_key and oct(key.stat().st_mode & 0o777) == "0o600"
        stats = RawConnection(daemon.socket_path).call("io.sesame.Admin.Stats")["parameters"]
        assert result.stdout.split()[-1] == stats["keyId"] and stats["accounts"] == 1
        import_tokens(daemon, subject="bob", **TOKENS)
        assert daemon.stop() == 0
    finally:
        daemon.kill()
    again = keyed_daemon(tmp_path, key)
    try:
        again.wait_ready()
        assert account["id"] in accounts(again) and len(accounts(again)) == 2
        assert again.stop() == 0
    finally:
        again.kill()


def test_rekey_and_stats_are_refused_to_other_users():
    with daemon_reachable_by_other_users() as daemon:
        result = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(SESAMECTL), "rekey",
                                 "--socket", str(daemon.socket_path)], capture_output=True, text=True, timeout=30)
        assert result.returncode == 1 and result.stderr == "sesamed: permission denied.\n"


CRASH_ROUNDS = int(os.environ.get("SESAME_CRASH_ROUNDS", "200"))


def test_every_acknowledged_change_survives_sigkill(tmp_path):
    """Kill -9 the daemon at random moments while a client changes accounts; after each restart
    the store must open and hold every change whose reply the client received."""
    rng = random.Random(20261122)
    key = key_file(tmp_path)
    expected: dict[str, str] = {}        # account id -> state the daemon acknowledged
    subjects: dict[str, str] = {}        # subject -> account id
    highest_sequence = 0
    interrupted = 0                      # rounds in which the kill landed during a call
    for round_number in range(CRASH_ROUNDS):
        # Every round adds accounts of one uid: more than the default accounts_per_user.
        daemon = keyed_daemon(tmp_path, key, extra="[limits]\naccounts_per_user = 65536\n")
        try:
            ready = daemon.wait_ready()
            listed = accounts(daemon)
            for account_id, state in expected.items():
                if state is None:
                    assert account_id not in listed, f"round {round_number}: removed {account_id} came back"
                else:
                    assert listed[account_id]["state"] == state, f"round {round_number}: {account_id}"
            conn = RawConnection(daemon.socket_path)
            sequence = conn.call("io.sesame.Events.Subscribe", {}, more=True)["parameters"]["ready"]["sequence"]
            assert sequence >= highest_sequence, "sequence numbers never go back"
            highest_sequence = sequence
            conn.close()

            killer_at = time.monotonic() + rng.uniform(0.0, 0.08)
            conn = RawConnection(daemon.socket_path)
            in_flight = None
            try:
                while time.monotonic() < killer_at + 0.05:
                    if time.monotonic() >= killer_at and daemon.process.poll() is None:
                        daemon.process.send_signal(signal.SIGKILL)
                    live = [i for i, s in expected.items() if s == "active"]
                    choice = rng.random()
                    if live and choice < 0.25:
                        target = rng.choice(live)
                        in_flight = (target, "loggedOut")
                        reply = conn.call("io.sesame.Accounts.Logout", {"account": target})
                        assert "error" not in reply, reply
                        expected[target] = "loggedOut"
                    elif live and choice < 0.35:
                        target = rng.choice(live)
                        in_flight = (target, None)
                        reply = conn.call("io.sesame.Accounts.Remove", {"account": target})
                        assert "error" not in reply, reply
                        expected[target] = None
                    else:
                        subject = f"user{rng.randrange(40)}"
                        in_flight = (subjects.get(subject), "active")
                        account = import_tokens(conn, subject=subject, **TOKENS)
                        subjects[subject] = account["id"]
                        expected[account["id"]] = "active"
                    in_flight = None
            except (EOFError, ConnectionResetError, BrokenPipeError):
                interrupted += 1  # killed mid-call: that change was not acknowledged
            if daemon.process.poll() is None:
                # One slow call can span the whole kill window on a loaded machine; kill after it.
                daemon.process.send_signal(signal.SIGKILL)
            daemon.process.wait(10)
            if in_flight and in_flight[0]:
                # Not acknowledged: either outcome is fine, so learn which one happened.
                expected.pop(in_flight[0], None)
        finally:
            daemon.kill()
        assert (tmp_path / "state" / "sessions.store").exists()
    assert len(subjects) > 10
    assert interrupted > CRASH_ROUNDS // 2, f"only {interrupted} of {CRASH_ROUNDS} kills landed during a call"


def test_a_second_sesamed_on_the_same_state_directory_is_refused(tmp_path):
    """Two sesamed on one store would each append at their own idea of its end."""
    key = key_file(tmp_path)
    first = keyed_daemon(tmp_path, key)
    try:
        first.wait_ready()
        import_tokens(first, subject="alice", **TOKENS)
        store = first.state_dir / "sessions.store"
        before = store.read_bytes()
        other = tmp_path / "other"
        other.mkdir()
        second = Daemon(other, config=f'[store]\nkey_file = "{key}"\nallow_generated_key = false\n',
                        extra_args=("--state-dir", str(first.state_dir)))
        try:
            assert second.process.wait(20) != 0
            assert "another sesamed is using the state directory" in second.log()
        finally:
            second.kill()
        assert store.read_bytes() == before
        assert len(accounts(first)) == 1
        assert first.stop() == 0
    finally:
        first.kill()
