"""The real speedscope viewer, for the tests of the files made for it (the
Chrome trace, the folded stacks, the speedscope export)."""
import subprocess
from pathlib import Path

VIEWER = Path(__file__).resolve().parent.parent / "viewer"


def load_in_speedscope(profile, screenshot, *names):
    """tests/viewer/load_in_speedscope.mjs: the real speedscope (npm) in
    headless Chromium (Debian's) imports the file the way a user does and
    lists every name; scripts/setup.sh installs both."""
    assert (VIEWER / "node_modules" / "speedscope").is_dir(), \
        "tests/viewer/node_modules missing: run scripts/setup.sh (npm ci --prefix tests/viewer)"
    assert Path("/usr/bin/chromium").exists(), "/usr/bin/chromium missing: run scripts/setup.sh"
    result = subprocess.run(["node", str(VIEWER / "load_in_speedscope.mjs"), str(profile), str(screenshot), *names],
                            capture_output=True, text=True, timeout=150)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"speedscope: imported {profile}" in result.stdout, result.stdout
    assert screenshot.stat().st_size > 10_000, screenshot  # a rendered flame graph, not a blank page
    return result.stdout
