"""A target's files, opened as the target maps them (userspace/symbols/target_maps.h).

- A process in a plain chroot: its maps name its files as the host sees them
  (<chroot>/usr/lib/...), so /proc/PID/root + path does not exist; every file
  gpuprof reads (libtorch_cpu, libc10, the interpreter, libstdc++) must be
  found anyway, and said by its host path.
- A library deleted on disk while the process runs it (a package upgraded
  under a live job): still traced, through /proc/PID/map_files.
- Where no way opens the file (no CAP_SYS_ADMIN for map_files, and the path
  now names nothing): one clear error for -p, a warning naming the process
  for -a, never silence.
"""
import json
import os
import re
import shutil
import signal
from pathlib import Path

from conftest import (CHROOT_TORCH, GPUPROF, error_lines, parse_stopped_line, parse_table, parse_tracing_line,
                      run_program, touch, wait_for_file)
from test_system_wide import LIBTORCH, finish_counts, start_counts

# map_files needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE (root has both).
WITHOUT_SYS_ADMIN = ("setpriv", "--bounding-set", "-sys_admin,-checkpoint_restore", "--inh-caps",
                     "-sys_admin,-checkpoint_restore", "--")


def test_chroot_process_every_file_found(procs, workdir, tmp_path):
    target, pid = start_counts(procs, workdir, "chroot", 300, torch_env=CHROOT_TORCH)
    out = tmp_path / "chroot.gpuprof"
    gp = procs.start_gpuprof("record", "-p", pid, "-o", out, "-F", "99", "--record-shapes", "--profile-memory",
                             "--with-stack", "-v")
    gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=60, watch=[target])
    touch(workdir, "go")
    truths = json.loads(wait_for_file(workdir, "truth-chroot", timeout=120, watch=[target, gp]))
    gp.send(signal.SIGINT)
    assert gp.wait(timeout=60) == 0, gp.describe()
    touch(workdir, "exit-chroot")
    assert target.wait(timeout=60) == 0, target.describe()
    stderr = gp.stderr()
    root = CHROOT_TORCH.root
    assert parse_tracing_line(stderr)["library"] == f"{root}/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.2.6.0", stderr
    # The interpreter, libc10 (memory) and the TensorImpl layout were all found.
    assert re.search(rf"^gpuprof: Python frames: CPython 3\.13\.\d+ in {re.escape(root)}/usr/bin/python3", stderr,
                     re.M), stderr
    assert re.search(rf"^gpuprof: memory probes on {re.escape(root)}/usr/lib/", stderr, re.M), stderr
    assert "gpuprof: TensorImpl layout: ndim @64" in stderr, stderr
    assert "warning" not in stderr and "cannot open" not in stderr, stderr
    stopped = parse_stopped_line(stderr)
    assert stopped["lost"] == 0 and stopped["samples"] > 0 and stopped["mem_events"] > 0, stderr
    calls = parse_table(gp.stdout()).calls()
    for op, n in truths["calls"].items():
        assert calls.get(op) == n, (op, calls, truths)


def start_on_a_deleted_copy(procs, workdir, tmp_path, name, steps):
    """A torch 1.13 process running a copy of libtorch_cpu that is then deleted."""
    copy_dir = tmp_path / "doomed-torch"
    copy_dir.mkdir()
    copy = copy_dir / "libtorch_cpu.so.1.13"
    shutil.copyfile(LIBTORCH, copy)
    proc, pid = start_counts(procs, workdir, name, steps, env={**os.environ, "LD_LIBRARY_PATH": str(copy_dir)})
    copy.unlink()
    maps = Path(f"/proc/{pid}/maps").read_text()
    assert f"{copy} (deleted)" in maps, "the process does not run the deleted copy"
    return proc, pid, copy


def test_deleted_library_is_traced_through_map_files(procs, workdir, tmp_path):
    proc, pid, copy = start_on_a_deleted_copy(procs, workdir, tmp_path, "deleted", 400)
    gp = procs.start_gpuprof("record", "-p", pid, "-o", tmp_path / "deleted.gpuprof")
    gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=60, watch=[proc])
    assert parse_tracing_line(gp.stderr())["library"] == f"{copy} (deleted)", gp.stderr()
    touch(workdir, "go")
    truths = finish_counts(workdir, {"deleted": (proc, pid)}, [gp])
    gp.send(signal.SIGINT)
    assert gp.wait(timeout=60) == 0, gp.describe()
    calls = parse_table(gp.stdout()).calls()
    for op, n in truths["deleted"]["calls"].items():
        assert calls.get(op) == n, (op, calls, truths)


def test_unopenable_library_is_said_not_skipped(procs, workdir, tmp_path):
    proc, pid, copy = start_on_a_deleted_copy(procs, workdir, tmp_path, "hidden", 10)
    # -p: one error line that names the file and every way tried.
    run = run_program(*WITHOUT_SYS_ADMIN, GPUPROF, "record", "-p", pid, "-o", tmp_path / "p.gpuprof")
    errors = error_lines(run.stderr)
    assert run.returncode == 1 and len(errors) == 1, run.stderr
    assert f"cannot open {copy} as process {pid} maps it" in errors[0] and "map_files" in errors[0], errors
    # -a: the process is named in a warning, and the recording goes on.
    gp = procs.start([*WITHOUT_SYS_ADMIN, GPUPROF, "record", "-a", "-q", "-o", tmp_path / "a.gpuprof"], "gpuprof-a")
    gp.wait_for_stderr(rf"^gpuprof: warning: process {pid} \(python3\) not traced: cannot open {re.escape(str(copy))}",
                       timeout=120, watch=[proc])
    gp.send(signal.SIGINT)
    assert gp.wait(timeout=60) == 0, gp.describe()
    touch(workdir, "go")
    finish_counts(workdir, {"hidden": (proc, pid)}, [])
