"""The man pages and shell completions: generated from the argument definitions by
scripts/manuals and kept in docs/; they must be current, render, and load."""

import os
import shutil
import subprocess
from pathlib import Path

from harness import SESAMECTL, import_tokens

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_the_kept_manuals_and_completions_match_the_binaries(tmp_path):
    subprocess.run([str(ROOT / "scripts" / "manuals"), str(tmp_path)], check=True, capture_output=True, timeout=600)
    for name in ("man/sesamectl.1", "man/sesamed.8", "man/git-credential-sesame.1", "man/sesame-notify.1",
                 "completions/sesamectl.bash",
                 "completions/_sesamectl",
                 "completions/sesamectl.fish"):
        assert (tmp_path / name).read_text() == (DOCS / name).read_text(), f"docs/{name} is stale: run scripts/manuals"


def test_the_man_pages_render_without_warnings():
    # docker-credential-sesame.1 is written by hand: the helper has no options to generate it from.
    for page in ("sesamectl.1", "sesamed.8", "git-credential-sesame.1", "docker-credential-sesame.1",
                 "sesame-notify.1"):
        checked = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(DOCS / "man" / page)],
                                 capture_output=True, text=True, timeout=60)
        assert checked.returncode == 0 and checked.stderr == "", checked.stderr
        if page == "git-credential-sesame.1":
            continue  # git runs it; it has no exit statuses of its own to document
        shown = subprocess.run(["man", "-l", str(DOCS / "man" / page)], capture_output=True, text=True, timeout=60,
                               env={**os.environ, "MANPAGER": "cat", "MANWIDTH": "80"})
        assert shown.returncode == 0 and "EXIT" in shown.stdout.upper(), shown.stderr


def test_no_option_is_described_with_another_options_words():
    """A `--no-X` flag shares its `--X`'s entry instead of repeating its description, which
    told the reader `--no-follow` reconnects."""
    lines = (DOCS / "man" / "sesamectl.1").read_text().split("\n")
    for section in "\n".join(lines).split(".SS ")[1:]:
        entries = section.split("\n.TP\n")[1:]
        described = [entry.split("\n")[1] for entry in entries]
        repeated = {text for text in described if described.count(text) > 1}
        assert not repeated, f"{section.split()[0]}: {repeated}"


def complete(words: list[str], env: dict) -> list[str]:
    """What bash completes for `words` (the last one being typed) with the shipped script."""
    script = (f'source {DOCS / "completions" / "sesamectl.bash"} && complete -p sesamectl >/dev/null && '
              f'COMP_WORDS=({" ".join(words)} ""); COMP_CWORD={len(words)}; '
              f'COMP_LINE="{" ".join(words)} "; COMP_POINT=${{#COMP_LINE}}; '
              '$(complete -p sesamectl | sed -E "s/.*-F ([^ ]+).*/\\1/") sesamectl "" "${COMP_WORDS[-2]}"; '
              'printf "%s\\n" "${COMPREPLY[@]}"')
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_bash_completes_subcommands_and_the_daemons_account_ids(daemon, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # The completion runs `sesamectl` from PATH, which runs sesamectl-commands beside it.
    for program in ("sesamectl", "sesamectl-commands"):
        shutil.copy(SESAMECTL.parent / program, bin_dir / program)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SESAME_SOCKET": str(daemon.socket_path)}
    assert {"exec", "status", "token", "providers"} <= set(complete(["sesamectl"], env))
    alice = import_tokens(daemon, access_token="AT-complete-1", expires_in=3600)["id"]
    assert complete(["sesamectl", "token"], env) == [alice]
