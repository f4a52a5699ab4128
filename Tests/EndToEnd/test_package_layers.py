"""The module graph docs/DESIGN.md draws is the one Package.swift declares: every module has a
layer there, and every dependency and build plugin a module uses sits in a layer below its own."""
import json
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def design_layers():
    """Each module's layer, from the list between DESIGN.md's layers markers."""
    text = (ROOT / "docs" / "DESIGN.md").read_text()
    block = re.search(r"<!-- layers -->\n```text\n(.*?)```\n<!-- /layers -->", text, re.S)
    assert block, "docs/DESIGN.md has no layers list"
    layers, layer = {}, None
    for line in block.group(1).splitlines():
        words = line.split()
        if words and words[0].isdigit():
            layer = int(words.pop(0))
        for name in words:
            assert name not in layers, f"{name} is in two layers of DESIGN.md"
            layers[name] = layer
    return layers


def declared_targets():
    """Each target Package.swift declares (tests aside), with the targets and plugins it uses."""
    manifest = json.loads(subprocess.run(["swift", "package", "dump-package"], cwd=ROOT, check=True,
                                         capture_output=True, text=True, timeout=300).stdout)
    targets = {}
    for target in manifest["targets"]:
        if target["type"] == "test":
            continue
        uses = [entry[kind][0] for entry in target.get("dependencies", []) for kind in ("byName", "target")
                if kind in entry]
        uses += [usage["plugin"][0] for usage in target.get("pluginUsages") or []]
        targets[target["name"]] = uses
    return targets


def test_every_arrow_of_package_swift_points_down_the_layers_design_md_draws():
    layers = design_layers()
    targets = declared_targets()
    assert sorted(set(targets) - set(layers)) == [], "modules DESIGN.md's layers leave out"
    assert sorted(set(layers) - set(targets)) == [], "DESIGN.md's layers name modules Package.swift lacks"
    upward = [f"{name} (layer {layers[name]}) -> {used} (layer {layers[used]})"
              for name, uses in targets.items() for used in uses if layers[used] >= layers[name]]
    assert upward == [], "arrows that do not point down"
