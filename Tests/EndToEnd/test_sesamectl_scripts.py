"""sesamectl as scripts use it: `exec`, the gate that runs a command only with a usable
session; `status ACCOUNT`'s exit codes; `refresh`; a logout repeated."""

import json
import subprocess

from harness import SESAMECTL, call, import_tokens

TOKEN = "AT-exec-test-71c2"


def sesamectl(daemon, *args, timeout=30):
    return subprocess.run([str(SESAMECTL), *args[:1], "--socket", str(daemon.socket_path), *args[1:]],
                          capture_output=True, text=True, timeout=timeout)


def no_account(daemon, account: str) -> str:
    """What sesamectl says of an account the sesamed it asked does not have: the tests' sesamed is
    not the system's, so the sentence names it and the system's, which may hold the account."""
    return (f"no account {account} at {daemon.socket_path}, the sesamed asked; the system's sesamed may hold "
            f"it: `--socket /run/sesame/io.sesame` asks that one, and `sesamectl accounts --socket "
            f"{daemon.socket_path}` lists this one's.\n")


def account(daemon) -> str:
    return import_tokens(daemon, access_token=TOKEN, expires_in=3600)["id"]


def test_exec_runs_the_command_with_the_token_in_its_environment_only(daemon, tmp_path):
    id = account(daemon)
    script = 'printf %s "$SESAME_ACCESS_TOKEN" > "$1/env"; cat /proc/$$/cmdline > "$1/argv"; exit 7'
    result = sesamectl(daemon, "exec", "--account", id, "--", "sh", "-c", script, "sh", str(tmp_path))
    assert result.returncode == 7, result.stderr  # the command's own status
    assert (tmp_path / "env").read_text() == TOKEN
    assert TOKEN not in (tmp_path / "argv").read_text()
    assert TOKEN not in result.stdout + result.stderr


def test_exec_gives_the_command_the_signals_a_shell_would(daemon):
    """SIGPIPE (13) not ignored, though sesamectl's networking ignores it, and nothing blocked:
    `sesamectl exec ... -- yes | head` must end `yes` quietly. (The command reads its own status;
    a shell in between would show its own mask while it forks.)"""
    id = account(daemon)
    result = sesamectl(daemon, "exec", "--account", id, "--", "grep", "-E", "^Sig(Ign|Blk)", "/proc/self/status")
    assert result.returncode == 0, result.stderr
    masks = dict(line.split(":\t") for line in result.stdout.splitlines())
    assert int(masks["SigIgn"], 16) & (1 << 12) == 0 and int(masks["SigBlk"], 16) == 0, masks


def test_exec_can_name_the_variable(daemon, tmp_path):
    id = account(daemon)
    result = sesamectl(daemon, "exec", "--account", id, "--env", "API_TOKEN", "--",
                       "sh", "-c", 'printf %s "$API_TOKEN" > "$0/env"', str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "env").read_text() == TOKEN


def test_exec_does_not_run_the_command_when_the_session_needs_a_login(daemon, tmp_path):
    id = account(daemon)
    assert "error" not in call(daemon, "io.sesame.Accounts.Logout", {"account": id})
    marker = tmp_path / "ran"
    result = sesamectl(daemon, "exec", "--account", id, "--", "touch", str(marker))
    assert result.returncode == 5
    assert result.stderr == f"{id} needs a new login: run `sesamectl login google`.\n"
    assert not marker.exists()


def test_exec_says_when_the_command_cannot_run(daemon):
    id = account(daemon)
    result = sesamectl(daemon, "exec", "--account", id, "--", "/nonexistent/command")
    assert result.returncode == 127
    assert result.stderr == "cannot run /nonexistent/command: No such file or directory.\n"


def test_status_of_an_account_is_an_exit_code_for_scripts(daemon, tmp_path):
    id = account(daemon)
    usable = sesamectl(daemon, "status", id)
    assert (usable.returncode, usable.stdout.splitlines()[0]) == (0, f"{id}: usable"), usable.stderr
    assert usable.stdout.splitlines()[1].startswith("  access token: until "), usable.stdout
    missing = sesamectl(daemon, "status", "google-nosuch")
    assert (missing.returncode, missing.stderr) == (2, no_account(daemon, "google-nosuch"))
    assert "error" not in call(daemon, "io.sesame.Accounts.Logout", {"account": id})
    logged_out = sesamectl(daemon, "status", id)
    assert (logged_out.returncode, logged_out.stdout) == (1, f"{id}: loggedOut; run `sesamectl login google`\n")
    gone = subprocess.run([str(SESAMECTL), "status", "--socket", str(tmp_path / "none"), id],
                          capture_output=True, text=True, timeout=30)
    assert gone.returncode == 3


def test_a_second_logout_says_so_and_succeeds(daemon):
    id = account(daemon)
    first = sesamectl(daemon, "logout", id)
    assert first.returncode == 0, first.stderr
    again = sesamectl(daemon, "logout", id)
    assert (again.returncode, again.stdout, again.stderr) == (0, f"{id} is already logged out\n", "")


def test_refresh_reports_a_provider_it_cannot_reach_as_one_line(daemon):
    id = import_tokens(daemon, access_token=TOKEN, refresh_token="RT-exec-test", expires_in=3600)["id"]
    result = sesamectl(daemon, "refresh", id)
    assert result.returncode == 6, result.stderr
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and "RT-exec-test" not in result.stderr
    # What to do now, not a promise that sesamed retries (it may not: the account may be gone).
    assert result.stderr.endswith(f"`sesamectl refresh {id}` tries again now.\n"), result.stderr


def test_errors_say_what_to_do_next(daemon):
    missing = sesamectl(daemon, "token", "google-nosuch")
    assert (missing.returncode, missing.stderr) == (4, no_account(daemon, "google-nosuch"))
    id = account(daemon)
    assert "error" not in call(daemon, "io.sesame.Accounts.Logout", {"account": id})
    for command in ("token", "refresh"):
        logged_out = sesamectl(daemon, command, id)
        assert logged_out.returncode == 5
        assert logged_out.stderr == f"{id} needs a new login: run `sesamectl login google`.\n"


def test_errors_name_the_account_as_the_caller_did(daemon):
    """sesamed names accounts by id; a person who named theirs `work` is told about `work`."""
    id = import_tokens(daemon, access_token=TOKEN, refresh_token="RT-named", expires_in=3600)["id"]
    assert sesamectl(daemon, "rename", id, "work").returncode == 0
    unreached = sesamectl(daemon, "refresh", "work")
    assert unreached.returncode == 6, unreached.stderr
    assert unreached.stderr.startswith("could not refresh work (") and id not in unreached.stderr, unreached.stderr
    assert unreached.stderr.endswith("`sesamectl refresh work` tries again now.\n"), unreached.stderr
    logout = sesamectl(daemon, "logout", "work")
    assert logout.stdout.startswith("work logged out here; not revoked at the provider"), logout
    for command in ("token", "refresh", "status"):
        logged_out = sesamectl(daemon, command, "work")
        said = logged_out.stderr + logged_out.stdout
        assert said.startswith("work") and id not in said, said


def test_a_socket_that_refuses_the_user_is_not_called_not_running(daemon):
    """The daemon fixture's socket lies under pytest's 0700 directory: nobody cannot reach it."""
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    result = subprocess.run([*as_nobody, str(SESAMECTL), "status", "--socket", str(daemon.socket_path)],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert result.stderr.startswith(f"permission denied on {daemon.socket_path}: this user may not use that sesamed")


def test_removing_a_live_account_needs_force_and_logs_it_out_first(daemon):
    id = account(daemon)
    refused = sesamectl(daemon, "remove", id)
    assert refused.returncode == 1
    assert refused.stderr.startswith(f"{id} is active, not logged out: `sesamectl logout {id}` first")
    assert call(daemon, "io.sesame.Accounts.Get", {"account": id})["parameters"]["account"]["state"] == "active"
    forced = sesamectl(daemon, "remove", "--force", id)
    assert forced.returncode == 0, forced.stderr
    assert forced.stdout.startswith(f"{id} logged out") and forced.stdout.endswith(f"{id} removed\n")
    assert call(daemon, "io.sesame.Accounts.Get", {"account": id})["error"] == "io.sesame.Accounts.NoSuchAccount"
    logged_out = account(daemon)
    assert "error" not in call(daemon, "io.sesame.Accounts.Logout", {"account": logged_out})
    plain = sesamectl(daemon, "remove", logged_out)
    assert (plain.returncode, plain.stdout) == (0, f"{logged_out} removed\n"), plain.stderr


def test_every_command_that_prints_data_prints_json_on_request(daemon):
    id = account(daemon)
    status = json.loads(sesamectl(daemon, "status", "--json").stdout)
    assert status["product"] == "sesamed" and [a["id"] for a in status["accounts"]] == [id]
    usable = json.loads(sesamectl(daemon, "status", id, "--json").stdout)
    assert usable.keys() == {"account", "usable", "state", "accessTokenExpiresAt"}, usable
    assert (usable["account"], usable["usable"], usable["state"]) == (id, True, "active")
    token = json.loads(sesamectl(daemon, "token", id, "--json").stdout)
    assert token["accessToken"] == TOKEN and token["tokenType"] == "Bearer" and "expiresAt" in token
    providers = json.loads(sesamectl(daemon, "providers", "--json").stdout)
    assert "google" in [p["name"] for p in providers]
    logout = json.loads(sesamectl(daemon, "logout", id, "--json").stdout)
    assert logout["account"]["state"] == "loggedOut" and logout["revokedRemotely"] is False
    assert json.loads(sesamectl(daemon, "logout", id, "--json").stdout) == {"alreadyLoggedOut": id}
    after = sesamectl(daemon, "status", id, "--json")
    assert (after.returncode, json.loads(after.stdout)) == (1, {"account": id, "usable": False, "state": "loggedOut"})


def test_a_name_works_in_place_of_the_id_in_every_verb(daemon):
    """`rename` gives an account a name; every verb that takes an account takes the name, and
    the provider's name while the user has one account of it."""
    id = account(daemon)
    renamed = sesamectl(daemon, "rename", id, "work")
    assert renamed.returncode == 0 and renamed.stdout.startswith(f"{id} (work)  google"), renamed
    for reference in ("work", "google"):
        token = sesamectl(daemon, "token", reference)
        assert (token.returncode, token.stdout) == (0, TOKEN + "\n"), token
    assert sesamectl(daemon, "status", "work").stdout.splitlines()[0] == "work: usable"
    listed = json.loads(sesamectl(daemon, "accounts", "--json").stdout)
    assert [(a["id"], a.get("name")) for a in listed] == [(id, "work")]
    assert "work" in sesamectl(daemon, "accounts", "--ids").stdout.split()
    second = import_tokens(daemon, access_token="AT-exec-second", subject="second", expires_in=3600)["id"]
    taken = sesamectl(daemon, "rename", second, "work")
    assert taken.returncode == 1 and f"the owner's account {id} has it" in taken.stderr, taken
    # Two google accounts: the provider's name no longer picks one.
    ambiguous = sesamectl(daemon, "token", "google")
    assert (ambiguous.returncode, ambiguous.stderr) == (4, no_account(daemon, "google"))
    assert sesamectl(daemon, "rename", "work", "--clear").returncode == 0
    assert sesamectl(daemon, "token", "work").returncode == 4
    for verb in ("refresh", "logout", "remove"):
        assert sesamectl(daemon, "rename", id, "work").returncode == 0
        result = sesamectl(daemon, verb, "work", *(["--force"] if verb == "remove" else []))
        assert result.returncode in (0, 6), (verb, result)  # refresh: the provider is offline here


def test_import_name_names_the_imported_account(daemon):
    response = json.dumps({"access_token": "AT-named-import-4", "expires_in": 3600})
    imported = subprocess.run([str(SESAMECTL), "import", "google", "--subject", "named", "--name", "imp",
                               "--socket", str(daemon.socket_path)], input=response, capture_output=True, text=True,
                              timeout=30)
    assert imported.returncode == 0, imported.stderr
    token = sesamectl(daemon, "token", "imp")
    assert (token.returncode, token.stdout) == (0, "AT-named-import-4\n"), token
