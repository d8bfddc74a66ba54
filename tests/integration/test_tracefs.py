"""gpuprof where nothing mounted tracefs (minimal VMs and containers; systemd
mounts it at boot elsewhere). The mmap tracepoint that launch mode and
`record -a` watch library loads with is attached through tracefs: gpuprof
mounts it, as perf does, or says how when it may not.

Each test runs gpuprof in a private mount namespace whose copies of tracefs
and debugfs are unmounted first, so the machine's own mounts are never
touched.
"""
import pathlib

from conftest import GPUPROF, TARGET_PYTHON, WORKLOADS, error_lines, run_program
from test_launch import check_first_ops_run

TRACEFS = "/sys/kernel/tracing"

# Runs "$@" where no tracefs is mounted, then says how many tracefs mounts
# the namespace has at TRACEFS afterwards.
WITHOUT_TRACEFS = f"""
while umount /sys/kernel/debug/tracing 2>/dev/null; do :; done
while umount /sys/kernel/debug 2>/dev/null; do :; done
while umount {TRACEFS} 2>/dev/null; do :; done
if [ -e {TRACEFS}/events ] || [ -e /sys/kernel/debug/tracing ]; then
  echo "namespace: tracefs is still mounted" >&2; exit 97
fi
"$@"
rc=$?
echo "namespace: tracefs mounts after: $(grep -c ' {TRACEFS} tracefs ' /proc/self/mounts)" >&2
exit $rc
"""


def run_without_tracefs(*argv, timeout=180):
    return run_program("unshare", "--mount", "--propagation", "private", "--", "sh", "-c", WITHOUT_TRACEFS,
                       "sh", *argv, timeout=timeout)


def tracefs_mounts_after(run):
    lines = [line for line in run.stderr.splitlines() if line.startswith("namespace: ")]
    assert len(lines) == 1 and "still mounted" not in lines[0], run.stderr
    return int(lines[0].rsplit(":", 1)[1])


def test_launch_mode_mounts_tracefs_and_counts_every_op(tmp_path):
    run = run_without_tracefs(GPUPROF, "record", "-o", tmp_path / "launch.gpuprof", "--row-limit", "-1", "--",
                              TARGET_PYTHON, WORKLOADS / "first_ops.py", tmp_path)
    check_first_ops_run(run, tmp_path, "emulated")
    assert tracefs_mounts_after(run) == 1, run.stderr


def test_system_wide_mounts_tracefs(tmp_path):
    run = run_without_tracefs(GPUPROF, "record", "-a", "-d", "1", "-q", "-o", tmp_path / "all.gpuprof")
    assert run.returncode == 0 and error_lines(run.stderr) == [], run.stderr
    assert tracefs_mounts_after(run) == 1, run.stderr


def test_without_the_right_to_mount_it_says_how_and_never_runs_the_command(tmp_path):
    marker = tmp_path / "command-ran"
    # Root without CAP_SYS_ADMIN: BPF and perf events still allowed, mount(2) not.
    run = run_without_tracefs("setpriv", "--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin", "--",
                              GPUPROF, "record", "-o", tmp_path / "f.gpuprof", "--",
                              TARGET_PYTHON, "-c", f"open({str(marker)!r}, 'w')")
    context = f"exit {run.returncode}\nstderr:\n{run.stderr}"
    assert run.returncode == 1, context
    assert error_lines(run.stderr) == [
        f"gpuprof: error: the mmap tracepoint needs tracefs, which is not mounted, and mounting it at {TRACEFS} "
        f"failed (Operation not permitted): mount it as root with `mount -t tracefs nodev {TRACEFS}`"], context
    assert tracefs_mounts_after(run) == 0, context
    assert not pathlib.Path(marker).exists(), "the command ran unprofiled: " + context
