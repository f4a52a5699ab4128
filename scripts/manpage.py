#!/usr/bin/env python3
"""Renders a man page (man(7) macros) from a swift-argument-parser tool's own description, as
`TOOL --experimental-dump-help` prints it, so the page says exactly what --help says.

    manpage.py SECTION VERSION < dump-help.json > TOOL.SECTION

(swift-argument-parser's own generate-manual plugin does the same, but builds the whole package
in release mode first: minutes, where this takes none.)"""

import json
import sys


def escape(text: str) -> str:
    """Text as roff reads it: backslashes doubled, a leading dot or quote kept literal."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + line) if line[:1] in (".", "'") else line for line in text.split("\n"))


def flag_text(argument: dict) -> str:
    names = [("-" if n["kind"] == "short" else "--") + n["name"] for n in argument.get("names", [])]
    if argument["kind"] == "positional":
        return f"<{argument['valueName']}>" + (" ..." if argument.get("isRepeating") else "")
    value = f" <{argument['valueName']}>" if argument["kind"] == "option" else ""
    return ", ".join(f"\\fB{escape(name)}\\fR{value}" for name in names)


def pairing_inversions(arguments: list[dict]) -> list[dict]:
    """The arguments with each `--no-X` flag folded into its `--X`: the tool describes the pair
    once, and repeating that under `--no-X` would tell the reader it does what `--X` does."""
    folded: list[dict] = []
    for argument in arguments:
        names = argument.get("names", [])
        earlier = folded[-1] if folded else None
        if (earlier and argument["kind"] == "flag" and len(names) == 1 and names[0]["name"].startswith("no-")
                and [n["name"] for n in earlier.get("names", [])] == [names[0]["name"][3:]]):
            folded[-1] = {**earlier, "names": earlier["names"] + names}
            continue
        folded.append(argument)
    return folded


def arguments(command: dict) -> list[str]:
    lines = []
    for argument in pairing_inversions(command.get("arguments", [])):
        if not argument.get("shouldDisplay", True) or argument.get("valueName") in ("help", "version"):
            continue
        lines += [".TP", flag_text(argument), escape(argument.get("abstract", ""))]
        if argument.get("defaultValue"):
            lines.append(f"(default: {escape(argument['defaultValue'])})")
    return lines


def page(tool: dict, section: str, version: str) -> str:
    name = tool["commandName"]
    lines = [f'.TH {name.upper()} {section} "" "Sesame {version}" "Sesame"', ".SH NAME",
             f"{name} \\- {escape(tool.get('abstract', ''))}", ".SH SYNOPSIS"]
    subcommands = [c for c in tool.get("subcommands", []) if c.get("shouldDisplay", True) and c["commandName"] != "help"]
    lines.append(f"\\fB{name}\\fR " + ("\\fIcommand\\fR [\\fIoptions\\fR]" if subcommands else "[\\fIoptions\\fR]"))
    if tool.get("discussion"):
        lines += [".SH DESCRIPTION", escape(tool["discussion"])]
    if options := arguments(tool):
        lines += [".SH OPTIONS", *options]
    if subcommands:
        lines.append(".SH COMMANDS")
        for command in subcommands:
            lines += [".SS " + command["commandName"], escape(command.get("abstract", ""))]
            if command.get("discussion"):
                lines += [".PP", escape(command["discussion"])]
            lines += arguments(command)
    lines += [".SH SEE ALSO", "sesamectl(1), sesamed(8); the README in Sesame's sources."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(page(json.load(sys.stdin)["command"], sys.argv[1], sys.argv[2]))
