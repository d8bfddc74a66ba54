"""The fuzz targets (tests/fuzz/, docs/fuzzing.md) in CI: every input that
once crashed one stays fixed, and each runs for a bounded time from its seed
corpus without a crash, a leak, undefined behaviour or a slow input."""
import re
import shutil
import subprocess
import sys

import pytest

from conftest import REPO_ROOT

FUZZ_SECONDS = 60
TARGETS = ["record_file", "symbol_parsers"]

# libFuzzer's RSS limit reads getrusage's ru_maxrss, which Linux carries
# over exec from the memory the process was forked with: a fuzzer started
# by this pytest, once an earlier test held 2.6 GB, reported "rss: 2610Mb"
# from its first input and stopped with an oom- artifact of the empty
# input. It is started from a fresh small process instead, whose own
# memory is all the fuzzer is forked with.
FRESH_PARENT = "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)"


def run_fuzzer(args, timeout):
    return subprocess.run([sys.executable, "-c", FRESH_PARENT, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def fuzzer(target):
    path = REPO_ROOT / "build" / "fuzz" / f"{target}_fuzz"
    assert path.exists(), f"{path} missing: scripts/setup.sh builds it (make fuzz; needs clang and libclang-rt-14-dev)"
    return path


@pytest.mark.parametrize("target", TARGETS)
def test_regressions_and_seeds_pass(target):
    """Every input that once crashed the target (none yet for some) and every seed."""
    fuzz_dir = REPO_ROOT / "tests" / "fuzz"
    regressions = fuzz_dir / "regressions" / target
    inputs = sorted(regressions.iterdir()) if regressions.exists() else []
    print(f"{len(inputs)} regression inputs")
    inputs += sorted((fuzz_dir / "corpus" / target).iterdir())
    result = run_fuzzer([fuzzer(target), *inputs], timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    assert len(re.findall(r"^Running: ", result.stderr, re.M)) == len(inputs), result.stderr[-2000:]


@pytest.mark.parametrize("target", TARGETS)
def test_bounded_fuzzing_finds_nothing(target, tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(REPO_ROOT / "tests" / "fuzz" / "corpus" / target, corpus)
    result = run_fuzzer([fuzzer(target), f"-max_total_time={FUZZ_SECONDS}", "-rss_limit_mb=2048", "-timeout=10",
                         "-print_final_stats=1", f"-artifact_prefix={tmp_path}/", corpus], timeout=FUZZ_SECONDS + 240)
    stats = [line for line in result.stderr.splitlines() if line.startswith("stat::")]
    print("\n".join(stats))
    artifacts = [p.name for p in tmp_path.iterdir() if p.name.startswith(("crash-", "leak-", "timeout-", "oom-"))]
    assert result.returncode == 0 and not artifacts, (
        f"{target}: libFuzzer found {artifacts} (copy it into tests/fuzz/regressions/{target}/ once fixed)\n"
        + result.stderr[-6000:])
    runs = int(re.search(r"stat::number_of_executed_units: (\d+)", result.stderr).group(1))
    assert runs > 10000, stats
