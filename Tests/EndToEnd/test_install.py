"""Installing Sesame: scripts/install into a DESTDIR, scripts/uninstall, and the Debian package
from scripts/package. Everything here stays inside pytest's temporary directories: the package is
built and inspected (test_installed_package.py installs one on the machine). The binaries are the
ones under test (SESAME_BIN_DIR, the release build scripts/test made), so nothing is built here."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness import SESAMECTL, SESAMED, bin_dir, verify_units

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "SESAME_BIN_DIR": str(bin_dir())}


def run(*command, env=ENV, timeout=300, check=True):
    result = subprocess.run([str(part) for part in command], cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=timeout)
    if check:
        assert result.returncode == 0, f"{command}: {result.stdout}{result.stderr}"
    return result


def install(root: Path, *arguments):
    return run(REPO / "scripts" / "install", f"DESTDIR={root}", *arguments)


def unit_setting(path: Path, key: str) -> list[str]:
    return [line.split("=", 1)[1] for line in path.read_text().splitlines() if line.startswith(key + "=")]


def files_under(root: Path) -> set[str]:
    return {"/" + str(path.relative_to(root)) for path in root.rglob("*") if path.is_file() or path.is_symlink()}


EXPECTED = {
    "/usr/local/bin/sesamed", "/usr/local/bin/sesamectl", "/usr/local/bin/git-credential-sesame",
    "/usr/local/bin/docker-credential-sesame", "/usr/local/bin/sesame-notify",
    "/usr/local/libexec/sesame/sesamectl-commands",
    "/usr/local/lib/systemd/system/sesamed.service", "/usr/local/lib/systemd/system/sesamed.socket",
    "/usr/local/lib/systemd/user/sesamed.service", "/usr/local/lib/systemd/user/sesamed.socket",
    "/usr/local/lib/systemd/user/sesame-notify.service",
    "/usr/local/lib/sysusers.d/sesame.conf", "/usr/local/lib/tmpfiles.d/sesame.conf",
    "/etc/sesame/sesamed.toml", "/etc/sesame/providers.d/example.toml.sample",
    "/etc/sesame/providers.d/google.toml.sample", "/etc/sesame/providers.d/apple.toml.sample",
    "/usr/local/share/sesame/interfaces/io.sesame.Accounts.varlink",
    "/usr/local/share/sesame/interfaces/io.sesame.Events.varlink",
    "/usr/local/share/sesame/interfaces/io.sesame.Admin.varlink",
    "/usr/local/share/sesame/interfaces/io.sesame.Shares.varlink",
    "/usr/local/share/man/man1/sesamectl.1", "/usr/local/share/man/man8/sesamed.8",
    "/usr/local/share/man/man1/git-credential-sesame.1", "/usr/local/share/man/man1/docker-credential-sesame.1",
    "/usr/local/share/man/man1/sesame-notify.1",
    "/usr/local/share/bash-completion/completions/sesamectl", "/usr/local/share/zsh/site-functions/_sesamectl",
    "/usr/local/share/fish/vendor_completions.d/sesamectl.fish",
    "/usr/local/share/doc/sesame/README.md", "/usr/local/share/doc/sesame/DESIGN.md",
}


def assert_hands_over(sesamectl: Path, tmp_path: Path):
    """`sesamectl status` is sesamectl-commands' to answer: "not running", status 3, shows it ran."""
    result = subprocess.run([str(sesamectl), "status", "--socket", str(tmp_path / "none")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 3 and "nothing answers at" in result.stderr, result


VERSION = re.search(r'static let current = "([^"]+)"',
                    (REPO / "Sources/SesameWire/SesameVersion.swift").read_text()).group(1)
HELPERS = ("git-credential-sesame", "docker-credential-sesame", "sesame-notify")


def assert_every_program_runs(bin_directory: Path):
    """Each program installed in bin_directory says its version as a person would ask: sesamed,
    sesamectl (which answers itself), the credential helpers (links to sesamectl-commands that
    answer as the helper their name says), sesame-notify (a link too), and sesamectl-commands in
    ../libexec/sesame."""
    for program in ("sesamed", "sesamectl", "git-credential-sesame", "sesame-notify"):
        assert run(bin_directory / program, "--version").stdout.strip() == VERSION, program
    docker = run(bin_directory / "docker-credential-sesame", "version").stdout.strip()
    assert docker == f"docker-credential-sesame (Sesame) {VERSION}", docker
    for helper in HELPERS:
        assert os.readlink(bin_directory / helper) == "../libexec/sesame/sesamectl-commands", helper
    commands = bin_directory.parent / "libexec/sesame/sesamectl-commands"
    assert run(commands, "--version").stdout.strip() == VERSION


def test_install_puts_everything_under_the_prefix_with_the_units_pointing_there(tmp_path):
    root = tmp_path / "root"
    install(root)
    installed = files_under(root)
    assert EXPECTED <= installed, sorted(EXPECTED - installed)
    for program in (SESAMED, SESAMECTL):
        target = root / "usr/local/bin" / program.name
        assert target.read_bytes() == program.read_bytes() and os.access(target, os.X_OK)
    # sesamectl finds sesamectl-commands in ../libexec/sesame for every command but its shortcuts.
    assert_hands_over(root / "usr/local/bin/sesamectl", tmp_path)
    assert_every_program_runs(root / "usr/local/bin")
    for scope in ("system", "user"):
        service = root / "usr/local/lib/systemd" / scope / "sesamed.service"
        assert unit_setting(service, "ExecStart")[0].split()[0] == "/usr/local/bin/sesamed"
        socket = root / "usr/local/lib/systemd" / scope / "sesamed.socket"
        # Every Documentation= link names a file the install put there.
        for unit in (service, socket):
            links = [link for value in unit_setting(unit, "Documentation") for link in value.split()]
            assert links and all(link.startswith("file:") for link in links), links
            for link in links:
                assert (root / link.removeprefix("file:/")).is_file(), link
    system_socket = root / "usr/local/lib/systemd/system/sesamed.socket"
    assert set(" ".join(unit_setting(system_socket, "Symlinks")).split()) == {
        f"/run/varlink/registry/io.sesame.{name}" for name in ("Accounts", "Events", "Admin", "Shares")}
    # The shipped config is for a real machine: no generated key, the key file where rekey may write.
    config = (root / "etc/sesame/sesamed.toml").read_text()
    assert re.search(r"^allow_generated_key = false$", config, re.M)
    assert re.search(r'^key_file = "/var/lib/sesame-key/store.key"$', config, re.M)
    assert "sesame-key" in unit_setting(root / "usr/local/lib/systemd/system/sesamed.service", "StateDirectory")[0]
    # The repository's own config keeps the development default the demo and tests rely on.
    assert re.search(r"^allow_generated_key = true$", (REPO / "etc/sesame/sesamed.toml").read_text(), re.M)
    assert not (root / "usr/local/share/bash-completion/completions/sesamectl").read_text().startswith("#!")


def test_another_prefix_rewrites_the_units_and_puts_them_where_systemd_looks(tmp_path):
    root = tmp_path / "root"
    install(root, "PREFIX=/opt/sesame")
    service = root / "etc/systemd/system/sesamed.service"
    assert unit_setting(service, "ExecStart")[0].split()[0] == "/opt/sesame/bin/sesamed"
    assert "file:/opt/sesame/share/doc/sesame/README.md" in unit_setting(service, "Documentation")[0]
    assert unit_setting(root / "etc/systemd/user/sesamed.service", "ExecStart") == ["/opt/sesame/bin/sesamed"]
    assert (root / "opt/sesame/bin/sesamed").is_file() and (root / "etc/sysusers.d/sesame.conf").is_file()
    assert not (root / "usr").exists()


def test_the_installed_config_refuses_to_start_without_a_real_key(tmp_path):
    root = tmp_path / "root"
    install(root)
    state = tmp_path / "state"
    process = subprocess.run(
        [str(root / "usr/local/bin/sesamed"), "--config", str(root / "etc/sesame/sesamed.toml"),
         "--socket", str(tmp_path / "io.sesame"), "--state-dir", str(state),
         "--providers-dir", str(tmp_path / "providers.d")],
        capture_output=True, text=True, timeout=60,
        env={k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "CREDENTIALS_DIRECTORY")})
    assert process.returncode != 0, process.stderr
    assert "/var/lib/sesame-key/store.key" in process.stderr, process.stderr
    assert not (state / "dev.key").exists()


def test_a_second_install_keeps_changed_config_and_uninstall_removes_only_what_install_put(tmp_path):
    root = tmp_path / "root"
    install(root)
    config = root / "etc/sesame/sesamed.toml"
    config.write_text(config.read_text() + "\n# changed by the administrator\n")
    (root / "etc/sesame/providers.d/google.toml").write_text('type = "google"\nclient_id = "x"\n')
    state = root / "var/lib/sesame"
    state.mkdir(parents=True)
    (state / "sessions.store").write_text("sealed")
    second = install(root)
    assert config.read_text().endswith("# changed by the administrator\n")
    assert "keeping /etc/sesame/sesamed.toml" in second.stderr
    stray = root / "usr/local/share/other-package"
    stray.mkdir(parents=True)

    run(REPO / "scripts" / "uninstall", f"DESTDIR={root}")
    left = files_under(root)
    assert left == {"/etc/sesame/sesamed.toml", "/etc/sesame/providers.d/google.toml",
                    "/var/lib/sesame/sessions.store"}, sorted(left)
    # The directories the install made go too; one holding something else stays.
    assert stray.is_dir() and not (root / "usr/local/share/sesame").exists()
    assert not (root / "usr/local/lib").exists() and not (root / "usr/local/bin").exists()
    assert not (root / "usr/local/libexec").exists()
    assert {path.name for path in (root / "usr/local/share").iterdir()} == {"other-package"}

    install(root)
    run(REPO / "scripts" / "uninstall", f"DESTDIR={root}", "--purge")
    assert files_under(root) == set()
    assert not (root / "etc/sesame").exists() and not state.exists()


def host_units_root(root: Path):
    """What systemd-analyze verify --root needs from the host besides our tree: systemd's own
    units (sysinit.target, ...) and the commands the units run other than ours."""
    shutil.copytree("/usr/lib/systemd/system", root / "usr/lib/systemd/system", symlinks=True, dirs_exist_ok=True)
    (root / "bin").mkdir(exist_ok=True)
    shutil.copy2(shutil.which("kill") or "/bin/kill", root / "bin/kill")


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="needs systemd-analyze")
def test_the_installed_units_pass_systemd_analyze(tmp_path):
    root = tmp_path / "root"
    install(root)
    host_units_root(root)
    # --root resolves unit names, ExecStart= and every path inside the tree: the units must
    # name the binaries where the install put them.
    verified = run("systemd-analyze", "verify", f"--root={root}", "sesamed.service", "sesamed.socket", check=False)
    assert verified.returncode == 0 and verified.stdout == "" and verified.stderr == "", \
        verified.stdout + verified.stderr
    # The system unit scores at most 1.5 (--threshold is in tenths).
    security = run("systemd-analyze", "security", "--offline=yes", "--threshold=15", f"--root={root}",
                   "sesamed.service", check=False)
    assert security.returncode == 0, security.stdout[-2000:] + security.stderr
    # The user manager's verify has no --root: check the installed user units by path, with
    # ExecStart= moved under the tree (the only line that names a file).
    units = tmp_path / "user-units"
    units.mkdir()
    for name in ("sesamed.service", "sesamed.socket", "sesame-notify.service"):
        text = (root / "usr/local/lib/systemd/user" / name).read_text()
        (units / name).write_text(text.replace("ExecStart=/usr/local/", f"ExecStart={root}/usr/local/"))
    verified = verify_units(units / "sesamed.service", units / "sesamed.socket", units / "sesame-notify.service",
                            user=True, env=ENV)
    assert verified.returncode == 0 and verified.stdout == "" and verified.stderr == "", \
        verified.stdout + verified.stderr


@pytest.mark.skipif(not shutil.which("dpkg-deb"), reason="needs dpkg-deb")
def test_the_debian_package_holds_the_install_with_maintainer_scripts(tmp_path):
    out = tmp_path / "out"
    env = {**ENV, "SESAME_LINTIAN": "no", "SESAME_DEB_COMPRESSION": "gzip"}
    built = run(REPO / "scripts" / "package", out, env=env, timeout=900)
    version = re.search(r'static let current = "([^"]+)"',
                        (REPO / "Sources/SesameWire/SesameVersion.swift").read_text()).group(1)
    arch = run("dpkg", "--print-architecture").stdout.strip()
    deb = out / f"sesame_{version}_{arch}.deb"
    assert built.stdout.strip() == str(deb) and deb.is_file()

    def field(name):
        return run("dpkg-deb", "--field", deb, name).stdout.strip()

    assert (field("Package"), field("Version"), field("Architecture")) == ("sesame", version, arch)
    depends = field("Depends")
    assert "libsystemd0" in depends and "systemd (>= 250)" in depends and "libc6" in depends, depends
    assert field("Maintainer") and field("Description")

    listing = run("dpkg-deb", "--contents", deb).stdout
    # A link is listed as `./PATH -> TARGET`.
    paths = {line.split(" -> ")[0].split()[-1].removeprefix(".") for line in listing.splitlines()}
    for path in ("/usr/bin/sesamed", "/usr/bin/sesamectl", "/usr/bin/git-credential-sesame",
                 "/usr/bin/docker-credential-sesame", "/usr/libexec/sesame/sesamectl-commands",
                 "/usr/lib/systemd/system/sesamed.service",
                 "/usr/lib/systemd/system/sesamed.socket", "/usr/lib/systemd/user/sesamed.service",
                 "/usr/lib/systemd/user/sesame-notify.service", "/usr/bin/sesame-notify",
                 "/usr/share/man/man1/sesame-notify.1.gz",
                 "/usr/lib/sysusers.d/sesame.conf", "/usr/lib/tmpfiles.d/sesame.conf", "/etc/sesame/sesamed.toml",
                 "/usr/share/man/man8/sesamed.8.gz", "/usr/share/man/man1/sesamectl.1.gz",
                 "/usr/share/doc/sesame/copyright", "/usr/share/doc/sesame/changelog.gz",
                 "/usr/share/doc/sesame/README.md", "/usr/share/sesame/interfaces/io.sesame.Accounts.varlink",
                 "/usr/share/zsh/vendor-completions/_sesamectl", "/usr/share/bash-completion/completions/sesamectl"):
        assert path in paths, path
    assert not any(path.startswith("/usr/local") or path.endswith("install-manifest") for path in paths)
    assert all(" root/root " in line for line in listing.splitlines()), listing

    tree = tmp_path / "tree"
    run("dpkg-deb", "--raw-extract", deb, tree)
    assert unit_setting(tree / "usr/lib/systemd/system/sesamed.service", "ExecStart")[0].split()[0] == "/usr/bin/sesamed"
    conffiles = (tree / "DEBIAN/conffiles").read_text().split()
    assert "/etc/sesame/sesamed.toml" in conffiles and "/etc/sesame/providers.d/google.toml.sample" in conffiles
    for script in ("postinst", "prerm", "postrm"):
        path = tree / "DEBIAN" / script
        assert os.access(path, os.X_OK)
        run("sh", "-n", path)
    postinst = (tree / "DEBIAN/postinst").read_text()
    assert "systemd-sysusers" in postinst and "systemd-tmpfiles" in postinst and "enable sesamed.socket" in postinst
    assert "--user enable sesame-notify.service" in postinst
    postrm = (tree / "DEBIAN/postrm").read_text()
    assert "/var/lib/sesame" in postrm and "userdel sesame" in postrm
    # The packaged programs still run after stripping, the helpers' links among them.
    assert_every_program_runs(tree / "usr/bin")
    assert_hands_over(tree / "usr/bin/sesamectl", tmp_path)
