#!/usr/bin/env bash
# Runs every test: the layout check, GoogleTest unit tests, then the integration tests that
# attach real BPF to real PyTorch (root and a BPF-capable kernel required;
# they fail, never skip, without them). Ends with one summary line.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh || exit 1
# The torch 2.x tier: a Debian trixie chroot with torch 2.6 (docs/testing.md).
scripts/torch2-chroot.sh || exit 1

mkdir -p build/test-results
# The layout of userspace/: includes point down the pipeline (docs/architecture.md).
/usr/bin/python3 scripts/check_layout.py
layout_status=$?
build/gpuprof_unit_tests --gtest_output=xml:build/test-results/unit.xml
unit_status=$?
/usr/bin/python3 -m pytest -v -p no:cacheprovider --junitxml=build/test-results/integration.xml tests/integration
integration_status=$?

/usr/bin/python3 - <<'PY'
import xml.etree.ElementTree as ET
passed = failed = skipped = 0
for name in ("unit", "integration"):
    try:
        root = ET.parse(f"build/test-results/{name}.xml").getroot()
    except (OSError, ET.ParseError):
        failed += 1
        print(f"tests: no {name} results")
        continue
    suites = [root] if root.tag == "testsuite" else root.iter("testsuite")
    for s in suites:
        t = int(s.get("tests", 0)); f = int(s.get("failures", 0)) + int(s.get("errors", 0))
        sk = int(s.get("skipped", 0)) + int(s.get("disabled", 0))
        passed += t - f - sk; failed += f; skipped += sk
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
PY
if ((layout_status != 0 || unit_status != 0 || integration_status != 0)); then exit 1; fi
