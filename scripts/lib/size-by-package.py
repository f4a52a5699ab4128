#!/usr/bin/env python3
"""Prints, as a Markdown table, how much of a program each package it is linked of takes: the
input sections lld's link map (-Map) places in the output sections that stay in the file once
it is stripped (all but the zero-filled and the unloaded ones, NOT_IN_FILE), summed by where
each came from.

    size-by-package.py LINK-MAP [SCRATCH-PATH [REPOSITORY]]

A module of the build (SCRATCH-PATH/.../release/NAME.build/*.o) counts for the package whose
Sources/ holds it (REPOSITORY's own, or one under SCRATCH-PATH/checkouts; SCRATCH-PATH is the
repository's .build by default); an archive of the toolchain's (libswiftCore.a,
libFoundationEssentials.a, ...) and the C and C++ runtimes count by name. lld merges string
literals and constants of every module into sections of its own, and identical functions folded
into one (--icf=all) count for the copy kept, so a package's share is what is its alone."""

import re
import signal
import sys
from collections import defaultdict
from pathlib import Path

# Output sections that take no room in the file (zero-filled at load) or are not loaded at all.
NOT_IN_FILE = re.compile(r"^\.(bss|tbss)|^\.(comment|symtab|strtab|shstrtab|debug)")
TOOLCHAIN = {
    "libswiftCore.a": "Swift runtime and standard library",
    "libswift_Concurrency.a": "Swift concurrency runtime",
    "libswift_StringProcessing.a": "Swift regex (_StringProcessing, _RegexParser)",
    "libswift_RegexParser.a": "Swift regex (_StringProcessing, _RegexParser)",
    "libFoundationEssentials.a": "FoundationEssentials",
    "lib_FoundationCollections.a": "FoundationEssentials",
    "libFoundation.a": "Foundation (with ICU)",
    "libFoundationInternationalization.a": "Foundation (with ICU)",
    "lib_FoundationICU.a": "Foundation (with ICU)",
    "libswiftSynchronization.a": "Swift runtime and standard library",
    "libswiftGlibc.a": "Swift runtime and standard library",
    "libswift_Builtin_float.a": "Swift runtime and standard library",
    "libdispatch.a": "Dispatch",
    "libswiftDispatch.a": "Dispatch",
    "libBlocksRuntime.a": "Dispatch",
    "libstdc++.a": "C++ runtime (libstdc++, libgcc)",
    "libgcc.a": "C++ runtime (libstdc++, libgcc)",
    "libgcc_eh.a": "C++ runtime (libstdc++, libgcc)",
}


def module_packages(repository: Path, scratch: Path) -> dict[str, str]:
    """Each module's package: the directories under Sources/ of the repository and its checkouts,
    named as the build names their .build directories (C99 identifiers)."""
    packages = {}
    roots = [(repository, "Sesame's own modules")]
    roots += [(checkout, checkout.name) for checkout in sorted((scratch / "checkouts").glob("*"))]
    for root, package in roots:
        for source in (root / "Sources").glob("*"):
            if source.is_dir():
                packages[re.sub(r"[^A-Za-z0-9_]", "_", source.name)] = package
    # A target whose sources are not in a directory of its name.
    packages["SystemPackage"] = "swift-system"
    return packages


def origin(path: str, packages: dict[str, str]) -> str:
    """Where one input section came from, as a package or a part of the toolchain."""
    if match := re.search(r"/release/([^/]+)\.build/", path):
        return packages.get(match.group(1), match.group(1))
    if match := re.search(r"/([^/(]+\.a)\(", path):
        return TOOLCHAIN.get(match.group(1), match.group(1))
    if path.startswith("<internal>"):
        return "made or merged by the linker (relocations, symbol tables, every module's literals)"
    return "C library start files"


def sizes(link_map: Path, packages: dict[str, str]) -> dict[str, int]:
    """Bytes by origin. lld's map has the columns VMA, LMA, Size and Align, then from the 50th
    character an output section, an input section eight characters further in (`FILE:(SECTION)`),
    or a symbol eight more; only input sections of output sections kept in the file count."""
    by_origin: dict[str, int] = defaultdict(int)
    output_section = ""
    for line in link_map.read_text(errors="replace").splitlines()[1:]:
        entry = line[49:]
        depth = len(entry) - len(entry.lstrip())
        fields = line[:49].split()
        if depth == 0 and entry.strip():
            output_section = entry.split()[0]
        elif depth == 8 and ":(" in entry and len(fields) == 4 and not NOT_IN_FILE.search(output_section):
            by_origin[origin(entry.strip().split(":(", 1)[0], packages)] += int(fields[2], 16)
    return by_origin


def main() -> int:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends it quietly, as it would `cat`
    if len(sys.argv) not in (2, 3, 4):
        print(__doc__, file=sys.stderr)
        return 64
    repository = Path(sys.argv[3]) if len(sys.argv) == 4 else Path(__file__).resolve().parents[2]
    scratch = Path(sys.argv[2]) if len(sys.argv) >= 3 else repository / ".build"
    by_origin = sizes(Path(sys.argv[1]), module_packages(repository, scratch))
    total = sum(by_origin.values())
    print("| package | size | share |\n|---|---|---|")
    for name, size in sorted(by_origin.items(), key=lambda item: -item[1]):
        if size >= 20_000:
            print(f"| {name} | {size / 1e6:.2f} MB | {100 * size / total:.1f}% |")
    rest = sum(size for size in by_origin.values() if size < 20_000)
    print(f"| the rest (each under 20 kB) | {rest / 1e6:.2f} MB | {100 * rest / total:.1f}% |")
    print(f"| **all** | **{total / 1e6:.2f} MB** | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
