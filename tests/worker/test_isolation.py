"""The walls around a worker, with real processes: cgroup accounting (CPU time of threads and
children that already ended, memory with tmpfs, a task cap, kills of every task), a dead
worker noticed at once, and the sandbox's file system and credentials."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from helpers.grading import needs_bwrap
from helpers.processes import command_lines
from jaxlings.isolation import Limits, WorkerDied, WorkerProcess, bwrap, cgroups
from jaxlings.worker import wire

LIMITS = Limits(memory_bytes=3 << 30, output_bytes=256 << 10, call_timeout=30.0)


def start(tmp_path: Path, source: str, *, isolate: bool = False, limits: Limits = LIMITS) -> WorkerProcess:
    """A worker on a module `probe.py` holding `source`."""
    module = tmp_path / "probe.py"
    module.write_text(textwrap.dedent(source))
    worker = WorkerProcess(module, "probe", isolate=isolate, limits=limits)
    assert worker.load_reply["ok"], worker.load_reply
    return worker


def call(worker: WorkerProcess, fn: str, *args, timeout: float = 30.0) -> np.ndarray:
    """The function's output: one array (as the worker exports it, bare or as a tree's leaf)."""
    reply = worker.request("call", timeout, fn=fn, args=args)
    assert reply["ok"], reply
    out = reply["out"]
    if isinstance(out, dict) and "leaves" in out:
        out = out["leaves"][0]
        out = out.get("data", out) if isinstance(out, dict) else out
    return np.asarray(out)


def cgroups_or_skip(worker: WorkerProcess) -> None:
    if worker.accounting != "cgroup":
        worker.close()
        pytest.skip(f"cgroup accounting is not available here: {worker.cgroup_error}")


BURNERS = """
    import os, threading, time
    import numpy as np

    def spin(seconds):
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            pass

    def direct(seconds):
        spin(seconds)
        return np.zeros(1, np.float32)

    def in_thread(seconds):
        t = threading.Thread(target=spin, args=(seconds,))
        t.start()
        t.join()
        return np.zeros(1, np.float32)

    def in_child(seconds):
        pid = os.fork()
        if pid == 0:
            spin(seconds)
            os._exit(0)
        os.waitpid(pid, 0)
        return np.zeros(1, np.float32)
"""


@pytest.mark.slow
def test_cpu_time_of_ended_threads_and_children_is_counted(tmp_path):
    with start(tmp_path, BURNERS) as w:
        cgroups_or_skip(w)
        used = {}
        for fn in ("direct", "in_thread", "in_child"):
            before = w.cpu_seconds()
            call(w, fn, 0.5)
            used[fn] = w.cpu_seconds() - before
        assert all(0.45 < s < 1.5 for s in used.values()), used
        assert used["in_thread"] > 0.9 * used["direct"] and used["in_child"] > 0.9 * used["direct"], used
        final = w.cpu_seconds()
    assert w.cpu_seconds() >= final  # the last reading survives close()


SLEEPER = (
    BURNERS
    + """
    def sleep(seconds):
        time.sleep(seconds)
        return np.zeros(1, np.float32)
"""
)


def test_a_cpu_budget_stops_work_not_waiting(tmp_path):
    """A request's `cpu_budget` counts what the worker does, not how long the machine keeps it
    waiting: a sleep past the budget is answered, a spin past it is stopped as late."""
    with start(tmp_path, SLEEPER) as w:
        cgroups_or_skip(w)
        reply = w.request("call", 30.0, cpu_budget=0.5, fn="sleep", args=(1.5,))
        assert reply["ok"], reply
        with pytest.raises(WorkerDied) as died:
            w.request("call", 30.0, cpu_budget=0.5, fn="in_thread", args=(20.0,))
    assert died.value.timed_out and "used more than 0.5 s of CPU during `call`" in str(died.value), died.value


@pytest.mark.slow
def test_without_cgroups_cpu_time_is_not_claimed(tmp_path, monkeypatch):
    monkeypatch.setenv(cgroups.CGROUP_ROOT_ENV, "off")
    with start(tmp_path, BURNERS) as w:
        assert w.accounting == "process" and "off" in w.cgroup_error
        call(w, "in_thread", 0.05)
        assert w.cpu_seconds() is None  # callers fall back to the wall clock


DAEMON = """
    import os, time
    import numpy as np

    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execvp("sleep", ["sleep", "{marker}"])
        os._exit(0)
    time.sleep(0.2)

    def ok():
        return np.zeros(1, np.float32)
"""


@pytest.mark.slow
@pytest.mark.parametrize("how", ["plain", pytest.param("sandbox", marks=needs_bwrap), "freezer"])
def test_a_double_forked_daemon_dies_at_close(tmp_path, how):
    marker = str(1_000_000 + uuid.uuid4().int % 1_000_000)
    w = start(tmp_path, DAEMON.replace("{marker}", marker), isolate=how == "sandbox")
    if how != "sandbox":
        cgroups_or_skip(w)
    assert f"sleep {marker}" in command_lines()
    groups = list(w._cgroup.dirs.values()) if w._cgroup else []
    unified = w._cgroup.dirs.pop("unified", None) if how == "freezer" else None  # kill without cgroup.kill
    call(w, "ok")
    w.close()
    if unified is not None:
        unified.rmdir()
        cgroups.Cgroup({"unified": unified}).remove()  # its parent, when left empty
    assert f"sleep {marker}" not in command_lines()
    assert not any(g.exists() for g in groups)


@pytest.mark.slow
@pytest.mark.parametrize("isolate", [False, pytest.param(True, marks=needs_bwrap)])
def test_a_dead_worker_is_noticed_while_a_grandchild_holds_its_pipe(tmp_path, isolate):
    w = start(
        tmp_path,
        """
        import os, time

        def die():
            if os.fork() == 0:      # inherits every descriptor, the reply pipe's included
                time.sleep(60)
                os._exit(0)
            os._exit(3)
    """,
        isolate=isolate,
    )
    t0 = time.monotonic()
    with pytest.raises(WorkerDied, match="exited with status 3"):
        w.request("call", 30, fn="die", args=())
    assert time.monotonic() - t0 < 2
    w.close()


SANDBOX_PROBE = """
    import importlib.util, os, sys
    import numpy as np

    def facts():
        status = dict(line.split(":", 1) for line in open("/proc/self/status"))
        try:
            open("/proc/sys/kernel/core_pattern", "w").write("core")
            sysctl_writable = 1
        except OSError:
            sysctl_writable = 0
        return np.array([
            os.getuid(), os.getgid(), int(status["CapEff"], 16), int(status["CapBnd"], 16),
            int(status["NoNewPrivs"]), sysctl_writable,
            any(importlib.util.find_spec(m) is not None for m in ("jaxlings.specs", "jaxlings.grading")),
            os.path.exists({topics!r}), os.path.exists({solutions!r}), os.access("/", os.W_OK),
            sys.modules["jaxlings.worker"].__file__.startswith("/opt/jaxlings-grader/"),
        ], np.int64)

    def fill_tmp(path, mib):
        written = 0
        try:
            with open(path, "wb") as f:
                for _ in range(mib):
                    f.write(b"x" * (1 << 20))
                    f.flush()
                    written += 1
        except OSError:
            pass
        return np.array([written], np.int64)

    def threads(n):
        import threading, time
        started = 0
        try:
            for _ in range(n):
                threading.Thread(target=time.sleep, args=(5,), daemon=True).start()
                started += 1
        except RuntimeError:
            pass
        return np.array([started], np.int64)
"""


def probe_source() -> str:
    root = bwrap.PACKAGE_DIR.parent
    return SANDBOX_PROBE.replace("{topics!r}", repr(str(bwrap.PACKAGE_DIR / "specs"))).replace(
        "{solutions!r}", repr(str(root / "solutions"))
    )


@pytest.mark.slow
@needs_bwrap
def test_the_sandbox_runs_as_nobody_and_sees_only_the_worker_package(tmp_path):
    with start(tmp_path, probe_source(), isolate=True, limits=Limits(tmp_bytes=16 << 20)) as w:
        (
            uid,
            gid,
            cap_eff,
            cap_bnd,
            no_new_privs,
            sysctl_writable,
            topics_importable,
            topics_there,
            solutions_there,
            root_writable,
            worker_from_opt,
        ) = call(w, "facts")
        assert (uid, gid, cap_eff, cap_bnd, no_new_privs) == (65534, 65534, 0, 0, 1)
        assert not sysctl_writable and not root_writable
        assert not topics_importable and not topics_there and not solutions_there
        assert worker_from_opt
        # The private /tmp is capped (and so is /dev/shm).
        assert call(w, "fill_tmp", "/tmp/fill", 40)[0] <= 16
        assert call(w, "fill_tmp", "/dev/shm/fill", 40)[0] <= 16


@pytest.mark.slow
@needs_bwrap
def test_tmpfs_pages_count_as_the_workers_memory(tmp_path):
    limits = Limits(memory_bytes=768 << 20, tmp_bytes=4 << 30, call_timeout=30.0)
    with start(tmp_path, probe_source(), isolate=True, limits=limits) as w:
        cgroups_or_skip(w)
        with pytest.raises(WorkerDied, match="used more than 768 MiB of memory"):
            w.request("call", 30, fn="fill_tmp", args=("/tmp/fill", 3000))


GROWER = """
    import time
    import numpy as np

    HELD = []

    def grow(mib):
        HELD.append(np.ones(int(mib) << 17))  # float64: mib MiB, touched
        time.sleep(0.5)  # the watchdog polls every 0.1 s
        return np.float32(len(HELD))
"""


def test_a_device_workers_memory_is_capped_above_what_it_held_at_its_greeting(tmp_path):
    """A device's runtime holds gigabytes once opened (14 GB resident on a TPU v5e): a worker
    `on_device` counts its cap above what it held at its greeting, when no module code had run.
    The same growth that passes there stops a worker capped on its whole memory, and growth
    past the cap above the base stops the device worker too."""
    limits = Limits(memory_bytes=512 << 20, call_timeout=30.0)
    module = tmp_path / "probe.py"
    module.write_text(textwrap.dedent(GROWER))
    device = WorkerProcess(module, "probe", limits=limits, on_device=True)
    try:
        assert device.memory_base and device.memory_base > 32 << 20, device.memory_base  # JAX is loaded
        grown = (limits.memory_bytes - device.memory_base // 2) >> 20  # the total passes the cap
        assert device.request("call", 30, fn="grow", args=(grown,))["ok"]
        with pytest.raises(WorkerDied, match="more than 512 MiB of memory beyond what the device's runtime holds"):
            device.request("call", 30, fn="grow", args=(grown,))
    finally:
        device.close()
    plain = WorkerProcess(module, "probe", limits=limits)
    try:
        assert plain.memory_base == 0
        with pytest.raises(WorkerDied, match="used more than 512 MiB of memory and was stopped"):
            plain.request("call", 30, fn="grow", args=(grown,))
    finally:
        plain.close()


@pytest.mark.slow
def test_tasks_are_capped(tmp_path):
    with start(tmp_path, probe_source(), limits=Limits(max_processes=64)) as w:
        cgroups_or_skip(w)
        started = call(w, "threads", 200)[0]
        assert 10 < started < 64


def test_stale_groups_of_dead_graders_are_removed():
    try:
        parents = cgroups.Cgroup.parents()
    except OSError as exc:
        pytest.skip(f"no cgroups: {exc}")
    dead = subprocess.Popen(["true"])
    dead.wait()
    name = f"{dead.pid}-1-{uuid.uuid4().hex[:12]}"
    stale = cgroups.Cgroup({})
    for hierarchy, parent in parents.items():
        parent.mkdir(exist_ok=True)
        (parent / name).mkdir()
        stale.dirs[hierarchy] = parent / name
    marker = str(2_000_000 + uuid.uuid4().int % 1_000_000)
    orphan = subprocess.Popen(stale.enter_argv() + ["sleep", marker], start_new_session=True)
    for _ in range(100):
        if f"sleep {marker}" in command_lines():
            break
        time.sleep(0.01)
    lock, done = cgroups._stale_cleaned
    with lock:
        saved, done[:] = done[:], []
    try:
        cgroups._clean_stale(parents)
    finally:
        done[:] = saved or done
    orphan.wait(timeout=5)
    assert not any(d.exists() for d in stale.dirs.values())
    assert f"sleep {marker}" not in command_lines()


def test_read_frame_stops_waiting_when_the_writer_is_gone():
    r, w = os.pipe()
    child = subprocess.Popen(["sleep", "0.2"])
    watch = os.pidfd_open(child.pid)
    try:
        wire.write_frame(w, {"ok": True})  # complete and buffered: read despite the exit
        child.wait()
        assert wire.read_frame(r, time.monotonic() + 5, watch_fd=watch) == {"ok": True}
        os.write(w, b"\x10\0\0")  # half a frame; `w` stays open, as a grandchild would keep it
        t0 = time.monotonic()
        with pytest.raises(wire.Closed):
            wire.read_frame(r, time.monotonic() + 5, watch_fd=watch)
        assert time.monotonic() - t0 < 0.5
        with pytest.raises(wire.Timeout):  # no watch: the deadline
            wire.read_frame(r, time.monotonic() + 0.1)
    finally:
        for fd in (r, w, watch):
            os.close(fd)


def test_an_installed_grader_package_is_hidden_in_the_sandbox(monkeypatch, tmp_path):
    """Installed (not editable), the package, topics included, lies in a bound prefix: an empty
    read-only tmpfs covers it there, and its worker subpackage alone is bound."""
    installed = Path(sys.prefix) / "lib" / "site-packages" / "jaxlings"
    monkeypatch.setattr(bwrap, "PACKAGE_DIR", installed)
    argv = bwrap.bwrap_argv(tmp_path)
    at = argv.index("--tmpfs", argv.index(str(installed)) - 1)
    assert argv[at : at + 4] == ["--tmpfs", str(installed), "--remount-ro", str(installed)]
    assert argv[argv.index(str(bwrap.WORKER_DIR)) + 1] == f"{bwrap.SANDBOX_GRADER_ROOT}/jaxlings/worker"


def test_a_worker_leaves_at_bye_without_the_interpreters_shutdown(tmp_path):
    """Tearing down JAX and a topic's modules took 0.5 to 1 s per worker at every close; the
    worker now leaves at once (`harness._leave`): an exit hook of the module never runs, and
    what it printed without a newline still reaches the grader."""
    marker = tmp_path / "hook-ran"
    w = start(
        tmp_path,
        f"""
        import atexit, pathlib, sys
        atexit.register(pathlib.Path({str(marker)!r}).write_text, "ran")

        def ok():
            sys.stdout.write("unflushed")
            return 1.0
    """,
    )
    call(w, "ok")
    w.close()
    assert w.proc.returncode == 0
    assert not marker.exists()
    assert b"unflushed" in w.output


def test_a_spare_imports_its_libraries_first_and_its_module_only_when_asked(tmp_path):
    """`jaxlings.grading.spares`: started before its module's file exists, a spare greets, preloads,
    and waits; `load()` imports the module, and the worker then serves as any other."""
    folder = tmp_path / "spare"
    folder.mkdir()
    marker = tmp_path / "imported"
    w = WorkerProcess(
        folder / "probe.py",
        "probe",
        limits=LIMITS,
        preload=("xml.dom.minidom",),
        load_on_request=True,
        owned_dir=folder,
    )
    try:
        assert w.platform["backend"] == "cpu" and w.load_reply is None and w.alive
        (folder / "probe.py").write_text(
            textwrap.dedent(f"""
            import pathlib, sys
            pathlib.Path({str(marker)!r}).write_text("imported")

            def preloaded():
                return float("xml.dom.minidom" in sys.modules)
        """)
        )
        assert not marker.exists()  # nothing of the module ran before `load`
        assert w.load()["functions"] == ["preloaded"] and marker.exists()
        assert call(w, "preloaded") == 1.0
    finally:
        w.close()
    assert not folder.exists()  # the spare's folder goes with it


@needs_bwrap
def test_a_sandboxed_topic_starts_one_student_worker(monkeypatch):
    """A sandboxed worker dies with the THREAD that started it (bubblewrap's --die-with-parent is
    the thread's parent-death signal): started in a pool's thread that then ended, the student's
    first worker of every topic died before its first request and was started again (two starts
    per topic, found while grading on a device). It starts in the topic's own thread now."""
    from helpers.grading import SOLUTIONS, TEST_LIMITS
    from jaxlings.grading import engine, topics
    from jaxlings.isolation import process

    started: list[str] = []
    original = process.WorkerProcess.__init__

    def counting(self, module_path, module_name, **kw):
        if kw.get("isolate"):
            started.append(module_name)
        original(self, module_path, module_name, **kw)

    monkeypatch.setattr(process.WorkerProcess, "__init__", counting)
    result = engine.grade(
        SOLUTIONS, topics.resolve(["prng.derive_keys"]), reference_dir=SOLUTIONS, isolate=True, limits=TEST_LIMITS
    )
    assert result.score == result.max_score and started == ["prng"]
