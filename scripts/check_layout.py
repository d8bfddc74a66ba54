#!/usr/bin/python3
"""The layout check of `make test` (docs/architecture.md): userspace/ is one
folder per stage of the pipeline, and an include may point only down it.

Fails (exit 1, one line per offence) when a file
  - includes a header of a stage its own stage may not use (ALLOWED),
  - includes a userspace header without its stage folder ("record_file.h"
    instead of "record/record_file.h"),
  - includes a BPF skeleton outside probe/ (only probe/ loads BPF programs),
  - includes bpf/ headers from output/, live/ or cli/ (they see recordings,
    never the kernel's ABI),
  - sits in userspace/ outside a stage folder (main.cpp excepted).
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
USERSPACE = ROOT / "userspace"

# Each stage and the stages it may include, lowest first.
ALLOWED = {
    "base": set(),
    "record": {"base"},
    "symbols": {"base"},
    "torch": {"base", "record", "symbols"},
    "python": {"base", "symbols"},
    "probe": {"base", "record", "symbols", "torch"},
    "target": {"base", "record", "symbols"},
    "collect": {"base", "record", "symbols", "torch", "python", "probe", "target"},
    "analyze": {"base", "record"},
    "output": {"base", "record", "analyze"},
    "live": {"base", "record", "analyze", "output"},
    "cli": {"base", "record", "symbols", "torch", "python", "target", "collect", "analyze", "output", "live"},
}
# Files that may reach past their stage's rule, and why.
EXCEPTIONS = {
    # `gpuprof calibrate` is the probe calibration itself, with no target.
    ("userspace/cli/calibrate.cpp", "probe/probe_calibration.h"),
}
NO_BPF_HEADERS = {"output", "live", "cli"}
BPF_HEADERS = {p.name for p in (ROOT / "bpf").glob("*.h")}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def offences():
    for path in sorted(USERSPACE.rglob("*")):
        if not path.is_file() or path.suffix not in (".cpp", ".h"):
            continue
        rel = path.relative_to(ROOT).as_posix()
        parts = path.relative_to(USERSPACE).parts
        if len(parts) == 1:
            if parts[0] != "main.cpp":
                yield f"{rel}: outside a stage folder (userspace/STAGE/, docs/architecture.md)"
            continue
        stage = parts[0]
        if stage not in ALLOWED:
            yield f"{rel}: {stage}/ is no stage of docs/architecture.md"
            continue
        for header in INCLUDE.findall(path.read_text()):
            if header.endswith(".skel.h"):
                if stage != "probe":
                    yield f"{rel}: includes the BPF skeleton {header}: only probe/ loads BPF programs"
                continue
            if header in BPF_HEADERS:
                if stage in NO_BPF_HEADERS:
                    yield f"{rel}: includes bpf/{header}: {stage}/ reads recordings, not the kernel's ABI"
                continue
            if header == "build_info.h" and rel == "userspace/main.cpp":
                continue
            target = header.split("/")[0] if "/" in header else None
            if target is None:
                if (USERSPACE / header).exists() or list(USERSPACE.glob(f"*/{header}")):
                    yield f"{rel}: includes \"{header}\" without its stage folder"
                continue  # a system or generated header
            if target not in ALLOWED:
                continue
            if target != stage and target not in ALLOWED[stage] and (rel, header) not in EXCEPTIONS:
                yield f"{rel}: {stage}/ includes {header}: {target}/ is above it (docs/architecture.md)"


def main():
    found = list(offences())
    for line in found:
        print(f"layout: {line}", file=sys.stderr)
    if found:
        print(f"layout: {len(found)} offences", file=sys.stderr)
        return 1
    print(f"layout: {len(ALLOWED)} stages, every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
