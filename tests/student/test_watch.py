"""`grade watch` (`jaxlings.student.watch`): the screen as a pure function of the state (fast), the keys
on a real pseudo-terminal, the plain lines when stdout is a pipe, and the live screen in a real
terminal (tmux), with a screenshot of it rendered by Chromium into docs/img/watch.png."""

from __future__ import annotations

import json
import os
import queue
import shutil
import struct
import subprocess
import sys
import termios
import threading
import time
import zlib
from pathlib import Path

import pytest
from rich.console import Console
from rich.terminal_theme import MONOKAI
from rich.text import Text

from helpers.grading import ROOT, SOLUTIONS
from jaxlings.grading import topics
from jaxlings.grading.results import Outcome
from jaxlings.grading.results import TestResult as Verdict
from jaxlings.student import progress, watch, workspace

PRNG = topics.load_public("prng")
TMUX = shutil.which("tmux") or "/usr/bin/tmux"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SCREENSHOT = ROOT / "docs" / "img" / "watch.png"
WAIT = 300.0  # seconds a grading step may take on a loaded 2-core machine


def _test(exercise: str, check: str, points: float, outcome: Outcome) -> Verdict:
    return Verdict.of("prng", exercise, check, points, outcome, "visible")


def _state(**kw) -> watch.TopicState:
    """prng with derive_keys passed and dropout's correct check failing (a two-line message)."""
    state = watch.TopicState(PRNG, "exercises/prng.py", **kw)
    for t in (
        _test("derive_keys", "correct", 3, Outcome.ok("4 cases match")),
        _test("derive_keys", "jit", 1, Outcome.ok()),
        _test("derive_keys", "key_reuse", 0, Outcome.ok()),
        _test(
            "dropout",
            "correct",
            3,
            Outcome.fail("dropout returned shape (4,), expected (4, 3)\nat exercises/prng.py:40"),
        ),
        _test("dropout", "jit", 1, Outcome.fail("not judged until the function is correct")),
        _test("dropout", "speed", 1, Outcome.pending("0.9x the reference")),
    ):
        state.tests[t.name] = t
    return state


def _render(renderable, width: int = 100, height: int = 30) -> list[str]:
    console = Console(width=width, height=height, record=True, file=open(os.devnull, "w"), color_system=None)
    console.print(renderable)
    return console.export_text().splitlines()


def _line(lines: list[str], *words: str) -> str:
    found = [line for line in lines if all(w in line for w in words)]
    assert found, f"no line with {words}:\n" + "\n".join(lines)
    return found[0]


# -- the view (pure) ---------------------------------------------------------------------------------


def test_the_screen_shows_verdicts_the_message_that_matters_and_the_check_in_progress():
    state = _state()
    now = time.monotonic()
    done = {f"prng.derive_keys:{c}" for c in ("correct", "jit", "key_reuse")}
    state.run = watch.Run(("derive_keys", "dropout"), now - 3.0, now - 1.0, {}, done)
    lines = _render(watch.view(state, now))
    assert sum(watch.HEADER in line for line in lines) == 1
    assert "✓" in _line(lines, "derive_keys") and "4/4" in _line(lines, "derive_keys")
    dropout = _line(lines, "dropout", "⋯")  # the check running now
    assert "0/5" in dropout  # as `grade check` counts: speed, judged on submission, is 0 of its point here
    assert dropout.lstrip().startswith("▶") and dropout.count("⋯") == 1  # the current exercise: first unfinished
    assert _line(lines, "✗ dropout: correct")  # the verdicts before this re-check stay under the marks
    assert _line(lines, "expected (4, 3)") and _line(lines, "at exercises/prng.py:40")  # the whole message
    status = _line(lines, "checking dropout: correct", "(then jit, speed, key_reuse)")
    assert "1.0 s" in status and "3/7 checks done in 3.0 s" in status
    assert _line(lines, "prng:", "checks pass")
    assert lines[-1].strip() == watch.KEYS
    state.run = watch.Run(("dropout",), now - 0.5, now - 0.5, {})
    assert _line(_render(watch.view(state, now)), "checking dropout", "0.5 s", "a worker for your module starts first")


def test_a_long_message_is_cut_to_the_screen_and_the_keys_stay():
    state = _state()
    long = _test("dropout", "correct", 3, Outcome.fail("\n".join(f"line {i} of the message" for i in range(80))))
    state.tests[long.name] = long
    lines = _render(watch.view(state, time.monotonic(), height=30))
    assert len(lines) <= 30
    assert _line(lines, "more lines", "grade check prng")
    assert _line(lines, "line 0 of the message") and lines[-1].strip() == watch.KEYS


def test_a_message_that_points_at_another_check_shows_that_one_too():
    """`correct` blames a reused key and says "see this exercise's key_reuse check": the screen,
    which shows one message, shows that check's message under it."""
    state = _state()
    for t in (
        _test(
            "dropout",
            "correct",
            3,
            Outcome.fail("values differ. A likely cause: ... (see this exercise's key_reuse check)"),
        ),
        _test("dropout", "key_reuse", 0, Outcome.fail("the key `key` is consumed twice, at line 12 and line 13")),
    ):
        state.tests[t.name] = t
    lines = _render(watch.view(state, time.monotonic()))
    assert _line(lines, "✗ dropout: correct") and _line(lines, "key_reuse check")
    assert _line(lines, "key_reuse: the key `key` is consumed twice, at line 12 and line 13")
    assert not any("key_reuse:" in line for line in _render(watch.view(_state(), time.monotonic())))


def test_a_finished_topic_names_the_next_topic_to_open():
    state = watch.TopicState(PRNG, "exercises/prng.py", next_topic="at_updates")
    for ex in PRNG.exercises:
        for c in ex.checks:
            outcome = Outcome.pending("seen") if c.name == "speed" else Outcome.ok()
            t = _test(ex.name, c.name, c.points, outcome)
            state.tests[t.name] = t
    lines = _render(watch.view(state, time.monotonic()))
    assert _line(lines, "prng done here", "Next: lessons/at_updates.md", "grade watch at_updates")
    last = watch.TopicState(PRNG, "exercises/prng.py", tests=state.tests, next_topic=None)
    assert _line(_render(watch.view(last, time.monotonic())), "grade submit")
    assert not watch.finished(_state())


def test_the_first_check_says_so_and_a_hint_shows_under_the_message():
    fresh = watch.TopicState(PRNG, "exercises/prng.py")
    assert _line(_render(watch.view(fresh, time.monotonic())), "checking for the first time")
    state = _state(hint=watch.Shown("dropout", 1, 3, "One key, one draw."))
    lines = _render(watch.view(state, time.monotonic()))
    assert _line(lines, "hint 1/3 for dropout: One key, one draw.", "h again")
    stub = _test("dropout", "correct", 3, Outcome.fail("not implemented yet (stuck? run `grade hint prng.dropout`)"))
    state.tests[stub.name] = stub
    assert _line(_render(watch.view(state, time.monotonic())), "not implemented yet (stuck? press h)")
    state.keys = False
    assert _line(_render(watch.view(state, time.monotonic())), "run `grade hint prng.dropout`")
    state.cursor = "noisy_walk"  # a hint is about its exercise only
    assert not any("hint 1/3" in line for line in _render(watch.view(state, time.monotonic())))


def test_keys_move_to_the_next_exercise_and_show_hints_one_level_at_a_time(tmp_path):
    watcher = watch.Watcher([PRNG], tmp_path / "exercises", tmp_path, keys=True)
    try:
        watcher.states["prng"].tests.update(_state().tests)
        watcher.on_key("h")
        shown = watcher.state.hint
        assert shown is not None and (shown.exercise, shown.level) == ("dropout", 1)
        assert shown.text == PRNG.exercise("dropout").hints[0]
        watcher.on_key("h")
        assert watcher.state.hint is not None and watcher.state.hint.level == 2
        assert '"prng.dropout": 2' in (tmp_path / ".jaxlings" / "hints.json").read_text()  # as `grade hint` keeps it
        watcher.on_key("n")
        assert watch.current(watcher.state) == "monte_carlo_pi"
        for _ in range(3):
            watcher.on_key("n")
        assert watch.current(watcher.state) == "dropout"  # round the topic
        assert not watcher.quit
        watcher.on_key("q")
        assert watcher.quit
    finally:
        watcher.close()


def test_the_screen_follows_the_function_saved_last(tmp_path):
    """dropout saved while derive_keys is still a stub: the screen is about dropout (its message,
    its hints), not the first unfinished exercise; the check itself is not run here."""
    ws = _workspace(tmp_path)
    watcher = watch.Watcher([PRNG], ws / "exercises", ws, keys=False)
    started: list[list[str]] = []
    watcher._start = lambda state, todo: started.append(list(todo))  # type: ignore[method-assign]
    try:
        watcher.look()  # the first look: every exercise, no exercise followed
        assert len(started[-1]) == 4 and watch.current(watcher.state) == "derive_keys"
        _solve(ws / "exercises" / "prng.py", "dropout")
        watcher.look()
        assert started[-1][0] == "dropout" and watch.current(watcher.state) == "dropout"
    finally:
        watcher.close()


def test_plain_lines_say_the_verdict_in_a_word():
    rows = progress.rows(list(_state().tests.values()))
    lines = [watch.plain_line(r) for r in rows]
    assert "pass    prng.derive_keys:correct 3/3 4 cases match" in lines
    assert "FAIL    prng.dropout:correct 0/3 dropout returned shape (4,), expected (4, 3)" in lines  # first line only
    assert all("\x1b" not in line for line in lines)


def test_keys_are_read_in_cbreak_mode_and_the_terminal_is_restored():
    """On a real pseudo-terminal: inside, no line buffering and no echo; a key arrives alone;
    after, the settings are as before, also when the body raises (as Ctrl-C does)."""
    controller, terminal = os.openpty()
    try:
        stream = os.fdopen(terminal, "r", closefd=False)
        before = termios.tcgetattr(terminal)
        got: queue.Queue[str] = queue.Queue()
        with pytest.raises(KeyboardInterrupt), watch.keys(stream, got.put) as reading:
            assert reading
            lflag = termios.tcgetattr(terminal)[3]
            assert not lflag & termios.ICANON and not lflag & termios.ECHO and lflag & termios.ISIG
            os.write(controller, b"h")
            assert got.get(timeout=10) == "h"
            raise KeyboardInterrupt
        assert termios.tcgetattr(terminal) == before
        with watch.keys(open(os.devnull), got.put) as reading:  # not a terminal: no keys, nothing touched
            assert not reading
    finally:
        os.close(controller)
        os.close(terminal)


# -- stdout a pipe: plain lines ------------------------------------------------------------------------


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    workspace.init(ws)
    return ws


def _solve(path: Path, name: str) -> None:
    """Save `name`'s reference function into the student's file (with a new mtime)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from watch_latency import save, with_function

    save(path, with_function(path.read_text(), (SOLUTIONS / path.name).read_text(), name))


class Lines:
    """A process's output lines, read by a thread (no select on a buffered pipe)."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc, self.seen, self.queue = proc, [], queue.Queue()
        threading.Thread(target=lambda: [self.queue.put(line) for line in proc.stdout], daemon=True).start()

    def until(self, marker: str, timeout: float = WAIT) -> list[str]:
        lines, deadline = [], time.monotonic() + timeout
        while True:
            try:
                line = self.queue.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"never saw {marker!r}; got:\n{''.join(self.seen)[-3000:]}") from None
            lines.append(line)
            self.seen.append(line)
            if marker in line:
                return lines


@pytest.mark.slow  # grades prng (the stubs, then one function) in a real `grade watch`
def test_watch_prints_plain_lines_when_stdout_is_a_pipe(tmp_path):
    """One line per verdict that changed, no escape codes; the first look checks the topic, a save
    re-checks the function that changed (and only it), a comment-only save checks nothing."""
    import signal

    ws = _workspace(tmp_path)
    proc = _watch(ws)
    out = Lines(proc)
    try:
        first = out.until("prng so far")
        assert any("none of the 4 functions written yet" in line for line in first), first
        _solve(ws / "exercises" / "prng.py", "derive_keys")
        saved = out.until("prng so far")
        assert any("re-checking derive_keys (changed)" in line for line in saved), saved
        assert any(line.startswith("pass    prng.derive_keys:correct 3/3") for line in saved), saved
        assert not any("dropout" in line or "noisy_walk" in line for line in saved), saved  # not re-checked
        with (ws / "exercises" / "prng.py").open("a") as f:
            f.write("\n# a comment changes no function\n")
        out.until("no function changed")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=WAIT) == 130  # idle: it stops, and says so (130: as a shell reports Ctrl-C)
        out.until("stopped watching", timeout=10)
    finally:
        _end(proc)
    assert not any("\x1b" in line for line in out.seen)


def _watch(ws: Path) -> subprocess.Popen:
    """`grade watch prng` on a pipe, in a process group of its own (`_end` ends every process of it)."""
    return subprocess.Popen(
        [sys.executable, "-m", "jaxlings", "watch", "prng", "--interval", "0.2"],
        cwd=ws,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def _end(proc: subprocess.Popen) -> None:
    """Kill what is left of `proc`'s process group (its workers too), whatever the test's outcome."""
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


@pytest.mark.slow  # grades prng's stubs in a real `grade watch`
def test_ctrl_c_stops_watch_at_once_in_the_middle_of_a_check(tmp_path):
    """Ctrl-C while a check runs: the watch ends without waiting for it (its verdict is never
    printed), where `q` would wait (the docs' promise: Ctrl-C stops it at once)."""
    import signal

    ws = _workspace(tmp_path)
    proc = _watch(ws)
    out = Lines(proc)
    try:
        out.until("prng so far")
        _solve(ws / "exercises" / "prng.py", "dropout")
        out.until("re-checking dropout")  # the check has started
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=WAIT) == 130  # it left the check behind
        printed = list(out.seen)
        while True:
            try:
                printed.append(out.queue.get(timeout=1))
            except queue.Empty:
                break
        assert not any(line.startswith(("pass    prng.dropout", "fail    prng.dropout")) for line in printed), printed
    finally:
        _end(proc)


# -- a real terminal: tmux -----------------------------------------------------------------------------


class Tmux:
    """A tmux server of its own (private socket, no config) with one detached 100x30 session."""

    def __init__(self, tmp_path: Path, command: str, cwd: Path) -> None:
        self.socket = f"jaxlings-watch-{os.getpid()}-{time.monotonic_ns()}"
        env = {**os.environ, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TMUX": ""}
        env.pop("TMUX")
        self.env = env
        self.run("new-session", "-d", "-s", "w", "-x", "100", "-y", "30", "-c", str(cwd), command)

    def run(self, *args: str) -> str:
        done = subprocess.run(
            [TMUX, "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def screen(self, *, history: bool = False, ansi: bool = False) -> str:
        return self.run("capture-pane", "-p", "-t", "w", *(["-S", "-"] if history else []), *(["-e"] if ansi else []))

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "w", *keys)

    def wait_for(self, *texts: str, timeout: float = WAIT) -> str:
        """The screen once it shows every one of `texts` (polled)."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if all(t in screen for t in texts):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"the screen never showed {texts}:\n{screen}")
            time.sleep(0.2)

    def close(self) -> None:
        subprocess.run([TMUX, "-L", self.socket, "kill-server"], capture_output=True, env=self.env, timeout=60)


def screenshot(ansi: str, target: Path, tmp_path: Path) -> None:
    """The terminal capture `ansi` as a picture: rich's HTML export, rendered by headless Chromium."""
    console = Console(record=True, width=100, file=open(os.devnull, "w"), force_terminal=True, color_system="truecolor")
    console.print(Text.from_ansi(ansi.rstrip("\n")))
    page = tmp_path / "watch.html"
    page.write_text(console.export_html(theme=MONOKAI))
    target.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'chromium'}",
            f"--screenshot={target}",
            "--window-size=980,640",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0 and target.is_file(), done.stderr[-2000:]


def png_facts(path: Path) -> tuple[int, int, int]:
    """(width, height, distinct byte values of its pixels) of a PNG, read without an image library."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    pos, pixels = 8, b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        if data[pos + 4 : pos + 8] == b"IDAT":
            pixels += data[pos + 8 : pos + 8 + length]
        pos += 12 + length
    return width, height, len(set(zlib.decompress(pixels)))


needs_terminal_tools = pytest.mark.skipif(
    not (Path(TMUX).exists() and Path(CHROMIUM).exists()),
    reason="tmux and chromium are needed (apt-get install tmux chromium; .ci/run does)",
)


@pytest.mark.slow  # grades prng (the stubs, then one function) in a real `grade watch`
@needs_terminal_tools
def test_watch_redraws_one_screen_in_a_real_terminal(tmp_path):
    """In tmux (100x30): the first check, a save re-checked, the screen redrawn in place (its header
    once in the whole scrollback), h shows a hint, n moves on, q quits and gives the terminal back."""
    ws = _workspace(tmp_path)
    grade = f"{sys.executable} -m jaxlings"
    command = f"bash --norc --noprofile -c '{grade} watch prng --interval 0.2; echo \"watch exited: $?\"; stty -a; sleep 3600'"
    term = Tmux(tmp_path, command, ws)
    try:
        term.wait_for("none of the 4 functions written yet", watch.KEYS)
        _solve(ws / "exercises" / "prng.py", "derive_keys")
        screen = term.wait_for("re-checked derive_keys")
        row = _line(screen.splitlines(), "derive_keys", "4/4")
        assert row.count("✓") == 3 and "▶" not in row, screen
        assert _line(screen.splitlines(), "▶", "dropout")  # on to the first unfinished one
        assert term.screen(history=True).count(watch.HEADER) == 1  # redrawn in place, never scrolled
        term.keys("h")
        hint = PRNG.exercise("dropout").hints[0]
        screen = term.wait_for("hint 1/", "for dropout:", hint.split()[0])
        assert '"prng.dropout": 1' in (ws / ".jaxlings" / "hints.json").read_text()
        screenshot(term.screen(ansi=True), SCREENSHOT, tmp_path)
        width, height, shades = png_facts(SCREENSHOT)
        assert (width, height) == (980, 640) and shades > 20 and SCREENSHOT.stat().st_size > 20_000
        term.keys("n")
        deadline = time.monotonic() + 60
        while not _marked(term.screen(), "monte_carlo_pi") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _marked(term.screen(), "monte_carlo_pi"), term.screen()
        term.keys("q")
        after = term.wait_for("watch exited: 0", timeout=60)
        assert "stopped watching" in after
        settings = after.split("watch exited: 0", 1)[1]
        assert " icanon" in settings and " echo " in settings and "-icanon" not in settings  # restored
        assert term.screen(history=True).count(watch.HEADER) == 1
    finally:
        term.close()


def _marked(screen: str, exercise: str) -> bool:
    """Whether the table's ▶ is on `exercise`'s row."""
    return any(line.lstrip().startswith("▶") and exercise in line for line in screen.splitlines())


def test_without_a_topic_named_it_watches_the_first_unfinished_one(tmp_path):
    assert watch.first_unfinished(tmp_path) == topics.ORDER[0]  # nothing checked yet
    first = topics.load_public(topics.ORDER[0])
    passed = {f"{first.name}.{ex.name}:{c.name}": "passed" for ex in first.exercises for c in ex.checks}
    (tmp_path / ".jaxlings").mkdir()
    (tmp_path / ".jaxlings" / "last_check.json").write_text(json.dumps(passed))
    assert watch.first_unfinished(tmp_path) == topics.ORDER[1]
