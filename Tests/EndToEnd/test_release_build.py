"""The release build meets what the debug build does not: the optimizer and the linked-in Swift
runtime. The whole suite runs against it (scripts/test); this module holds what is about the
build itself: a toolchain fault the shipped sesamed met, its reproducer, and the rule in the
sources that keeps Sesame clear of it."""

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from harness import bin_dir

REPO = Path(__file__).resolve().parents[2]
REPRODUCER = "repro-task-local-function"

# A task-local's declaration, and its type as written (up to a default value or the line's end).
TASK_LOCAL = re.compile(
    r"@TaskLocal\s+(?:(?:public|package|internal|fileprivate|private|static|nonisolated)\s+)*"
    r"var\s+(\w+)\s*:\s*([^=\n]+)"
)


def task_locals_holding_a_function(root: Path) -> list[str]:
    """Every task-local under `root` whose type is a function, optional or not, as file:line."""
    found = []
    for path in sorted(root.rglob("*.swift")):
        if REPRODUCER in path.parts:
            continue
        text = path.read_text()
        for match in TASK_LOCAL.finditer(text):
            if "->" in match.group(2):
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{path.relative_to(root)}:{line}: {match.group(1)}: {match.group(2).strip()}")
    return found


def test_no_task_local_holds_a_function():
    """Binding a function-typed task-local crashes optimized builds (Sources/repro-task-local-function
    says how); a function goes through a parameter, or inside a struct, instead."""
    assert task_locals_holding_a_function(REPO / "Sources") == []


def test_the_scan_finds_a_function_typed_task_local(tmp_path):
    """The rule above would pass on anything if its pattern missed the declarations it is for."""
    sample = tmp_path / "Sample.swift"
    sample.write_text(
        "enum A {\n    @TaskLocal public static var report: (@Sendable (String?) async -> Void)?\n"
        "    @TaskLocal static var plain: @Sendable () -> Void = {}\n"
        "    @TaskLocal static var cause: PeerCredentials?\n    @TaskLocal static var names: [String] = []\n}\n"
    )
    assert task_locals_holding_a_function(tmp_path) == [
        "Sample.swift:2: report: (@Sendable (String?) async -> Void)?",
        "Sample.swift:3: plain: @Sendable () -> Void",
    ]


def run_reproducer(case: str) -> subprocess.CompletedProcess:
    program = bin_dir() / REPRODUCER
    if not program.exists():
        pytest.skip(f"{program} is not built (scripts/test builds it with the release flags)")
    # The runtime's backtracer would take seconds to describe the expected crash.
    env = {**os.environ, "SWIFT_BACKTRACE": "enable=no"}
    return subprocess.run([program, case], capture_output=True, text=True, timeout=60, env=env)


def test_a_nominal_task_local_works_in_the_build_under_test():
    """What Sesame's task-locals are (an optional struct, an array): bound and read back."""
    result = run_reproducer("nominal")
    assert (result.returncode, result.stdout) == (0, "ok\n"), result


def test_the_reproducer_shows_the_toolchain_fault():
    """Documents the fault while the toolchain has it; says so when a toolchain no longer does."""
    result = run_reproducer("function")
    if result.returncode == 0:
        pytest.skip("the build under test binds a function-typed task-local without crashing (a debug "
                    "build, or a toolchain without the fault): test_no_task_local_holds_a_function may go")
    assert result.returncode == -signal.SIGSEGV, result


# The modules sesamectl, sesamectl-commands (the credential helpers too) and sesamed are made of:
# each imports at most FoundationEssentials, never
# Foundation, whose internationalization part links ICU and its data into a static binary
# (BENCHMARKS.md has the sizes). sesamectl, and the SesamectlShortcut and SesameWire it is made
# of, import no Foundation at all, not even FoundationEssentials' JSON coders.
SHIPPED_MODULES = ("sesamectl", "SesamectlShortcut", "sesamectl-commands", "SesameCredentialHelper", "SesameWire",
                   "SesameClient", "SesameProtocol", "SesameCore", "SesameVarlink", "sesamed", "SesameDaemon",
                   "SesameProviders", "SesameStore")


def test_the_shipped_programs_are_made_of_modules_without_foundations_icu():
    found = [f"{path.relative_to(REPO)}" for module in SHIPPED_MODULES
             for path in sorted((REPO / "Sources" / module).rglob("*.swift"))
             if re.search(r"^\s*(?:@\w+\s+)?(?:public |internal |package )?import Foundation\s*$", path.read_text(), re.M)]
    assert not found, f"import FoundationEssentials instead of Foundation in: {found}"
    for program in ("sesamectl", "sesamectl-commands", "sesamed"):
        symbols = subprocess.run(["nm", str(bin_dir() / program)], capture_output=True, text=True, check=True).stdout
        assert "FoundationInternationalization" not in symbols and "_FoundationICU" not in symbols \
            and "icudt" not in symbols, f"{program} links Foundation's internationalization (ICU)"
        if program == "sesamectl":
            assert "FoundationEssentials" not in symbols, "sesamectl links FoundationEssentials"
