"""`grade watch`: one screen, redrawn in place, that re-checks a topic each time its file is saved.

What the screen shows (`view`, a pure function of a `TopicState`, so that tests need no terminal):
the topic's exercises with a mark per check, the one message that matters (the current
exercise's first failing check, in full), a hint when asked for, the re-check in progress
(which exercise, which check, for how long), the counts, and once the topic is done, the next
topic to open. Keys: h the next hint for the current exercise, n the next exercise, q quit.

The current exercise is the one whose function the student saved last, or moved to with n
(until that one is finished), else the first unfinished one. The screen is rich's `Live` without the alternate screen (`screen=False`):
it redraws the lines it wrote, so it works in tmux and over SSH, and what it showed last stays
in the terminal after q. Keys are read from stdin in cbreak mode (no echo, one key at a time,
Ctrl-C still interrupts); the terminal's settings are restored on every way out.

When stdout is not a terminal (a pipe, a log, CI) the screen is plain lines without colour:
one line per verdict that changed, then the counts ("prng so far: ..."), as a log reads best.

Re-checks run in a thread of their own so the screen and the keys stay live during one; only
the functions a save changed are re-checked (`jaxlings.student.changes`), and while the student
edits, a spare worker for the topic is started (`jaxlings.grading.spares`).
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import select
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from jaxlings import public as public_data
from jaxlings.grading import compile_cache, engine, topics
from jaxlings.grading.checks import ordered
from jaxlings.grading.results import Result, TestResult
from jaxlings.grading.spares import Spares
from jaxlings.grading.spec import Topic
from jaxlings.isolation import Limits
from jaxlings.student import changes, hints, progress, report

HEADER = "jaxlings watch"
KEYS = "h hint · n next exercise · q quit"
STOPPING = "stopping after the check in progress… (Ctrl-C to stop at once)"
# How each kind of verdict is marked on the screen (`progress.kind`), and in plain lines.
STYLES = {"pass": "green", "fail": "red", "partial": "yellow", "pending": "blue", "advice": "yellow", "waits": "dim"}
MARKS = {kind: (symbol, STYLES[kind]) for kind, symbol in progress.SYMBOLS.items()}
WORDS = {
    "pass": "pass",
    "fail": "FAIL",
    "partial": "PARTIAL",
    "pending": "pending",
    "advice": "advice",
    "waits": "waits",
}


# -- the state of one watched topic ----------------------------------------------------------------


@dataclass
class Run:
    """A re-check in progress: the exercises it checks, when it began, when its last verdict came."""

    exercises: tuple[str, ...]
    started: float
    last: float
    before: dict[str, tuple[Any, ...] | None]  # the verdicts it may change, as they were (`verdict`)
    done: set[str] = field(default_factory=set)  # names of the tests already in


@dataclass
class Shown:
    """A hint on the screen: for which exercise, its level of how many, its text."""

    exercise: str
    level: int
    levels: int
    text: str


@dataclass
class TopicState:
    """Everything the screen shows of one topic; changed only by the `Watcher`."""

    topic: Topic
    path: str  # the student's file, as they would type it
    tests: dict[str, TestResult] = field(default_factory=dict)
    cursor: str | None = None  # the exercise saved last or moved to with n (None: the first unfinished)
    run: Run | None = None
    hint: Shown | None = None
    note: str = ""  # what happened last, in words
    next_topic: str | None = None  # where to go once this topic is finished
    keys: bool = True  # whether keys are read (stdin is a terminal)
    stopping: bool = False


def known(state: TopicState) -> Mapping[str, str]:
    """Test name -> progress status of the verdicts on the screen."""
    return progress.statuses(state.tests.values())


def finished(state: TopicState, exercise: str | None = None) -> bool:
    """Whether the topic (or one exercise of it) has nothing left to do here."""
    return progress.counts(state.topic, known(state), exercise).finished


def current(state: TopicState) -> str:
    """The exercise the screen is about: the one saved last or moved to with n, else the first
    unfinished one (the last one when all are finished)."""
    names = [ex.name for ex in state.topic.exercises]
    if state.cursor in names:
        return state.cursor
    return next((n for n in names if not finished(state, n)), names[-1])


def message(state: TopicState) -> tuple[str, str] | None:
    """The one message that matters, as (title, text): the current exercise's first row that is
    not a pass (a whole-topic row, an import error say, stands for every exercise), followed by
    the message of each other check of the exercise that it refers to ("see this exercise's
    key_reuse check"): the screen shows one message, and advice must not point at one it hides."""
    ex = current(state)
    rows = [r for r in progress.rows(list(state.tests.values())) if r.kind not in ("pass", "pending")]
    for row in rows:
        if row.exercise not in (None, ex):
            continue
        if row.exercise is None:
            return f"{state.topic.name}.py", row.message
        text = row.message
        for other in rows:
            if other.exercise == ex and other.check not in (None, row.check) and f"{other.check} check" in text:
                text += f"\n\n{other.check}: {other.message}"
        return f"{ex}{'' if row.check is None else f': {row.check}'}", text
    return None


def running(state: TopicState) -> tuple[str, list[str]] | None:
    """(exercise, its checks still to come, in the order they run) that the re-check is on now:
    the first exercise it has begun and not finished, else the first it has not begun. The engine
    reports each check's verdict as it ends, so the first of them is the one running."""
    run = state.run
    if run is None:
        return None
    checks = [
        (ex.name, [c.name for c in ordered(ex.checks)]) for ex in state.topic.exercises if ex.name in run.exercises
    ]
    begun = [(ex, cs) for ex, cs in checks if any(f"{state.topic.name}.{ex}:{c}" in run.done for c in cs)]
    for ex, cs in begun + checks:
        left = [c for c in cs if f"{state.topic.name}.{ex}:{c}" not in run.done]
        if left:
            return ex, left
    return None


# -- the view: state -> what the terminal shows ----------------------------------------------------


def view(state: TopicState, now: float, *, width: int = 100, height: int = 30) -> RenderableType:
    """The whole screen for `state` at time `now` (monotonic seconds), fitted to `height` lines:
    the message is cut to the lines left over, never the header, the table or the keys."""
    top: list[RenderableType] = [_header(state), Text(""), _table(state), Text("")]
    bottom: list[RenderableType] = [Text(""), _status(state, now), _counts(state)]
    done = finished(state)
    if done:
        bottom.append(_next(state))
    bottom.append(Text(STOPPING if state.stopping else KEYS if state.keys else "Ctrl-C to stop", style="dim"))
    hint = _hint(state)
    used = _lines(top[:2], width) + len(state.topic.exercises) + 2 + _lines(bottom + hint, width)
    middle = _message(state, width, max(3, height - used))
    return Group(*top, *middle, *hint, *bottom)


def _header(state: TopicState) -> Text:
    text = Text()
    text.append(HEADER, style="bold")
    text.append(f"  {state.topic.name}: {state.topic.title}", style="bold cyan")
    text.append(f"  ({state.path})", style="dim")
    return text


def _check_names(topic: Topic) -> list[str]:
    """Every check name of the topic, the table's columns: in the order of the exercise with
    the most checks (correct, jit, speed, key_reuse), then any others."""
    widest_first = sorted(topic.exercises, key=lambda ex: -len(ex.checks))
    return list(dict.fromkeys(c.name for ex in widest_first for c in ex.checks))


def _table(state: TopicState) -> Table:
    """One row per exercise: ▶ on the current one, a mark per check, its points as `grade
    check`'s table counts them (a check judged on submission: 0 of its points until then)."""
    table = Table(box=None, pad_edge=False, show_edge=False, padding=(0, 1))
    columns = _check_names(state.topic)
    table.add_column("", width=1, no_wrap=True)
    table.add_column("exercise", no_wrap=True, style="bold")
    for name in columns:
        table.add_column(name, justify="center", no_wrap=True)
    table.add_column("points", justify="right", no_wrap=True)
    here = current(state)
    spot = running(state)
    for ex in state.topic.exercises:
        names = {c.name for c in ex.checks}
        on = spot[1][:1] if spot is not None and spot[0] == ex.name else []
        cells = [_cell(state, ex.name, c, c in on) if c in names else Text("") for c in columns]
        mine = [state.tests[n] for n in (f"{state.topic.name}.{ex.name}:{c}" for c in names) if n in state.tests]
        # as `grade check`'s table counts them: a check judged on submission scores 0 of its points here
        points = f"{sum(t.score for t in mine):g}/{sum(t.max_score for t in mine):g}" if mine else ""
        marker = Text("▶", style="bold cyan") if ex.name == here else Text(" ")
        table.add_row(marker, ex.name, *cells, Text(points, style="dim"))
    return table


def _cell(state: TopicState, exercise: str, check: str, now_running: bool) -> Text:
    """The mark of one check: ⋯ while it runs, else its verdict, blank before its first check."""
    if now_running:
        return Text("⋯", style="bold cyan")
    test = state.tests.get(f"{state.topic.name}.{exercise}:{check}")
    if test is None:
        return Text("")
    mark, style = MARKS[progress.kind(test)]
    return Text(mark, style=style)


def _message(state: TopicState, width: int, lines: int) -> list[RenderableType]:
    """The message that matters, wrapped to `width` and cut to `lines` lines (saying so)."""
    found = message(state)
    if found is None:
        if not state.tests:
            return [Text("checking for the first time…", style="dim")]
        ex = current(state)
        if finished(state, ex):
            return [Text(f"{ex}: every check that can be judged here passes", style="green")]
        return [Text(f"{ex}: not checked yet (save the file to check it)", style="dim")]
    title, text = found
    if state.keys:  # the key does what the command would, for the exercise on the screen
        text = re.sub(rf"(run )?`grade hint {state.topic.name}\.{current(state)}`", "press h", text)
    wrapped = [piece for line in text.splitlines() or [""] for piece in textwrap.wrap(line, width - 2) or [""]]
    if len(wrapped) > lines - 1:
        cut = len(wrapped) - (lines - 2)
        wrapped = [*wrapped[: lines - 2], f"… ({cut} more lines: `grade check {state.topic.name}` shows them all)"]
    body = Text("\n".join(f"  {w}" for w in wrapped))
    return [Text(f"✗ {title}", style="bold red"), body]


def _hint(state: TopicState) -> list[RenderableType]:
    """The hint asked for (after a blank line), while the screen is about its exercise."""
    shown = state.hint
    if shown is None or shown.exercise != current(state):
        return []
    text = Text()
    text.append(f"hint {shown.level}/{shown.levels} for {shown.exercise}: ", style="bold magenta")
    text.append(shown.text)
    if shown.level < shown.levels:
        text.append("  (h again for the next)", style="dim")
    return [Text(""), text]


def _lines(renderables: list[RenderableType], width: int) -> int:
    """How many terminal lines `renderables` (texts) take at `width` columns."""
    return sum(
        max(1, len(textwrap.wrap(r.plain, width))) if isinstance(r, Text) and r.plain else 1 for r in renderables
    )


def _status(state: TopicState, now: float) -> Text:
    """What the watcher is doing: which exercise and check it runs, for how long; else what
    happened last and what to do."""
    run = state.run
    if run is None:
        waiting = f"save {state.path} to check it again"
        return Text(f"{state.note}  ·  {waiting}" if state.note else waiting, style="dim")
    text = Text()
    spot = running(state)
    if spot is None:
        text.append("finishing the check", style="bold cyan")
    else:
        text.append(f"checking {spot[0]}: {spot[1][0]}", style="bold cyan")
        text.append(f"  {now - run.last:.1f} s")
        if spot[1][1:] and run.done:
            text.append(f"  (then {', '.join(spot[1][1:])})", style="dim")
    if not run.done:
        text.append(" (a worker for your module starts first)", style="dim")
    else:
        total = sum(len(ex.checks) for ex in state.topic.exercises if ex.name in run.exercises)
        text.append(f"  ·  {len(run.done)}/{total} checks done in {now - run.started:.1f} s", style="dim")
    return text


def _counts(state: TopicState) -> Text:
    counts = progress.counts(state.topic, known(state))
    return Text(f"{state.topic.name}: {progress.describe(counts)}")


def _next(state: TopicState) -> Text:
    """What to open once the topic is done."""
    text = Text()
    text.append(f"✓ {state.topic.name} done here. ", style="bold green")
    if state.next_topic is None:
        text.append("Every topic is done: send your work with `grade submit`.")
    else:
        nxt = state.next_topic
        text.append(f"Next: lessons/{nxt}.md, then `grade watch {nxt}` (exercises/{nxt}.py)")
    return text


# -- plain lines, for a stdout that is not a terminal ----------------------------------------------


def plain_line(row: progress.Row) -> str:
    """One verdict as a line: its kind in a word, what it is about, points, the message's first line."""
    what = (
        row.topic
        + ("" if row.exercise is None else f".{row.exercise}")
        + ("" if row.check is None else f":{row.check}")
    )
    first = row.message.strip().splitlines()[0] if row.message.strip() else ""
    return " ".join(p for p in (f"{WORDS[row.kind]:7}", what, row.points, first) if p)


def verdict(test: TestResult | None) -> tuple[Any, ...] | None:
    """What must differ for a test's line to be printed again."""
    return None if test is None else (progress.kind(test), test.score, test.output)


# -- keys --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def keys(stream: TextIO, put: Callable[[str], None]) -> Iterator[bool]:
    """Read single keys from `stream` (a terminal) in cbreak mode in a thread, handing each to
    `put`; yields whether keys are read. The terminal's settings are restored on the way out,
    whatever the way (an exception, Ctrl-C)."""
    if not _is_terminal(stream):
        yield False
        return
    fd = stream.fileno()
    import termios
    import tty

    saved = termios.tcgetattr(fd)
    stop_r, stop_w = os.pipe()

    def read() -> None:
        while True:
            ready, _, _ = select.select([fd, stop_r], [], [])
            if stop_r in ready:
                return
            try:
                data = os.read(fd, 32)
            except OSError:
                return
            if not data:
                return
            for ch in data.decode(errors="ignore"):
                put(ch)

    thread = threading.Thread(target=read, name="watch-keys", daemon=True)
    try:
        tty.setcbreak(fd, termios.TCSANOW)
        thread.start()
        yield True
    finally:
        os.write(stop_w, b"x")
        thread.join(timeout=1)
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
        os.close(stop_r)
        os.close(stop_w)


# -- the watcher ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KeyPressed:
    """A key the student pressed (the key reader's thread)."""

    ch: str


@dataclass(frozen=True)
class Verdict:
    """One check's verdict, as the re-check reaches it (the re-check's thread)."""

    test: TestResult


@dataclass(frozen=True)
class Finished:
    """A re-check of `topic` ended with `result`."""

    topic: str
    result: Result


@dataclass(frozen=True)
class Failed:
    """A re-check of `topic` could not run: `error` says why."""

    topic: str
    error: BaseException


Event = KeyPressed | Verdict | Finished | Failed
"""What reaches the watch loop from other threads (`Watcher.events`)."""


@dataclass(frozen=True)
class Noted:
    """The topic's note changed (a file missing, saved with no change, a re-check that failed)."""

    state: TopicState


@dataclass(frozen=True)
class Started:
    """A re-check of the topic started."""

    state: TopicState


@dataclass(frozen=True)
class Rechecked:
    """A re-check ended; `changed` are the verdicts that differ from before it."""

    state: TopicState
    changed: list[TestResult]


Notice = Noted | Started | Rechecked
"""What the watcher tells its listeners (the plain-lines view)."""


class Watcher:
    """Looks at the files, runs re-checks in a thread, handles keys, and keeps the topics' states;
    `show` is called after every change (the screen redraws; plain lines print)."""

    def __init__(self, specs: list[Topic], directory: Path, workdir: Path, *, keys: bool) -> None:
        self.specs = {t.name: t for t in specs}
        self.directory = directory
        self.workdir = workdir
        self.states = {n: TopicState(t, str(directory / f"{n}.py"), keys=keys) for n, t in self.specs.items()}
        self.active = next(iter(self.specs))
        self.events: queue.Queue[Event] = queue.Queue()
        self.lock = threading.RLock()
        self.seen: dict[str, tuple[float | None, changes.Snapshot | None]] = dict.fromkeys(self.specs, (None, None))
        self.spares = Spares()
        self.grading: threading.Thread | None = None
        self.quit = False
        self.listeners: list[Callable[[Notice], None]] = []

    @property
    def state(self) -> TopicState:
        return self.states[self.active]

    # events from other threads
    def key(self, ch: str) -> None:
        self.events.put(KeyPressed(ch))

    def _emit(self, notice: Notice) -> None:
        for listener in self.listeners:
            listener(notice)

    def on_key(self, ch: str) -> None:
        """h: the next hint of the current exercise; n: the next exercise; q: quit."""
        with self.lock:
            state = self.state
            if ch in "qQ":
                self.quit = True
                state.stopping = state.run is not None
            elif ch in "nN":
                names = [ex.name for ex in state.topic.exercises]
                state.cursor = names[(names.index(current(state)) + 1) % len(names)]
            elif ch in "hH":
                ex = state.topic.exercise(current(state))
                level, text = hints.next_hint(self.workdir, state.topic.name, ex)
                state.hint = Shown(ex.name, level, len(ex.hints), text)

    def look(self) -> None:
        """Start a re-check of the first watched file that changed (one at a time)."""
        for name, state in self.states.items():
            path = self.directory / f"{name}.py"
            mtime = path.stat().st_mtime if path.exists() else None
            if mtime == self.seen[name][0]:
                continue
            exercises = [ex.name for ex in state.topic.exercises]
            after = changes.snapshot(path.read_text(errors="replace")) if mtime is not None else None
            todo = exercises if after is None else changes.changed(self.seen[name][1], after, exercises)
            self.seen[name] = (mtime, after)
            with self.lock:
                self.active = name
                if mtime is None:
                    state.note = f"{state.path} is missing"
                elif not todo:
                    state.note = "saved, no function changed"
                else:
                    state.note = ""
                    if len(todo) < len(exercises):  # a save: the screen follows the function saved
                        state.cursor = todo[0]
                    self._start(state, todo)
            if todo and mtime is not None:
                return
            self._emit(Noted(state))

    def _start(self, state: TopicState, todo: list[str]) -> None:
        """Re-check `todo` of `state`'s topic in a thread; its verdicts and end come as events."""
        now = time.monotonic()
        before = {
            f"{state.topic.name}.{ex.name}:{c.name}": verdict(state.tests.get(f"{state.topic.name}.{ex.name}:{c.name}"))
            for ex in state.topic.exercises
            if ex.name in todo
            for c in ex.checks
        }
        state.run = Run(tuple(todo), now, now, before)
        if len(todo) < len(state.topic.exercises):
            state.note = f"re-checking {', '.join(todo)} (changed)"
        selection = [f"{state.topic.name}.{ex}" for ex in todo]

        def grade() -> None:
            try:
                specs = topics.resolve(selection, public=True)
                result = engine.grade(
                    self.directory,
                    specs,
                    public=True,
                    on_test=lambda t: self.events.put(Verdict(t)),
                    answers=public_data.replay,
                    jobs=engine.default_jobs(),
                    spares=self.spares,
                )
                self.events.put(Finished(state.topic.name, result))
            except BaseException as exc:  # noqa: BLE001 - shown on the screen, the watch goes on
                self.events.put(Failed(state.topic.name, exc))

        self.grading = threading.Thread(target=grade, name="watch-grade", daemon=True)
        self.grading.start()
        self._emit(Started(state))  # once the check runs: a Ctrl-C after this line leaves it behind

    def handle(self, event: Event) -> None:
        """Apply one event from the key reader or the re-check."""
        if isinstance(event, KeyPressed):
            self.on_key(event.ch)
            return
        with self.lock:
            match event:
                case Verdict(test):
                    state = self.states[test.topic]
                    if state.run is not None:
                        state.run.done.add(test.name)
                        state.run.last = time.monotonic()
                    state.tests[test.name] = test
                case Finished(name, result):
                    self._finish(self.states[name], result)
                case Failed(name, error):
                    state = self.states[name]
                    state.run = None
                    state.note = f"the check could not run: {error}"
                    self._emit(Noted(state))

    def _finish(self, state: TopicState, result: Result) -> None:
        """A re-check ended: keep its verdicts, remember them, start the next spare."""
        run, state.run = state.run, None
        seconds = result.execution_time
        before = run.before if run is not None else {}
        changed = [t for t in result.tests if verdict(t) != before.get(t.name)]
        for t in result.tests:
            state.tests[t.name] = t
        if run is not None:
            checked = ", ".join(run.exercises) if len(run.exercises) < len(state.topic.exercises) else state.topic.name
            state.note = f"re-checked {checked} in {seconds:.1f} s"
        if state.cursor is not None and finished(state, state.cursor):
            state.cursor = None
        report.save_last_check(self.workdir, result)
        state.next_topic = self._next_topic(state)
        self._emit(Rechecked(state, changed))
        path = self.directory / f"{state.topic.name}.py"
        if path.exists():
            self.spares.prepare(
                state.topic, path.read_text(errors="replace"), limits=Limits(), cache=compile_cache.student_public()
            )

    def _next_topic(self, state: TopicState) -> str | None:
        """The topic after this one that is not finished yet (from the last checks), in course order."""
        remembered = {
            k: v if isinstance(v, str) else ("passed" if v else "failed")
            for k, v in report.load_last_check(self.workdir).items()
        }
        later = topics.ORDER[topics.ORDER.index(state.topic.name) + 1 :]
        specs = [topics.load_public(n) for n in later]
        found = progress.next_unfinished(specs, remembered)
        return found[0] if found else None

    def loop(self, interval: float, show: Callable[[], None]) -> None:
        """Until q or Ctrl-C (then after the check in progress): look, grade, handle, show."""
        next_look = 0.0
        while not (self.quit and self.grading is None):
            busy = self.grading is not None and self.grading.is_alive()
            if not busy:
                self.grading = None
                if self.quit:
                    break
                if time.monotonic() >= next_look:
                    self.look()
                    next_look = time.monotonic() + interval
            try:
                event = self.events.get(timeout=0.1)
            except queue.Empty:
                continue
            self.handle(event)
            show()

    def close(self) -> None:
        self.spares.close()


def first_unfinished(workdir: Path) -> str:
    """The topic to watch when none is named: the first one not finished in the last checks."""
    specs = [topics.load_public(n) for n in topics.ORDER]
    found = progress.next_unfinished(specs, report.load_last_check(workdir))  # old true/false files: read as statuses
    return found[0] if found else topics.ORDER[0]


def run(names: list[str] | None, directory: Path, *, interval: float = 0.2, console: Console | None = None) -> None:
    """`grade watch`: the live screen on a terminal, plain lines elsewhere; until q or Ctrl-C."""
    console = console or Console()
    workdir = Path.cwd()
    specs = topics.resolve(names or [first_unfinished(workdir)], public=True)
    live = console.is_terminal and not console.is_dumb_terminal
    watcher = Watcher(specs, directory, workdir, keys=live and _is_terminal(sys.stdin))
    interrupted = False
    try:
        interrupted = _run_live(watcher, interval, console) if live else _run_plain(watcher, interval, console)
    finally:
        abandoned = watcher.grading is not None and watcher.grading.is_alive()
        if abandoned:  # Ctrl-C: the check in progress is left behind, its workers end with us
            console.file.flush()
            sys.stdout.flush()
            os._exit(130)
        watcher.close()
    if interrupted:
        sys.exit(130)  # as a shell reports a Ctrl-C


def _is_terminal(stream: TextIO) -> bool:
    try:
        return os.isatty(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return False


def _loop_until_quit(watcher: Watcher, interval: float, show: Callable[[], None]) -> None:
    """The loop, until q (after the check in progress) or Ctrl-C (at once: the check in progress
    is left behind, `run` ends the process without waiting for it)."""
    try:
        watcher.loop(interval, show)
    except KeyboardInterrupt:
        watcher.on_key("q")
        raise


def _run_live(watcher: Watcher, interval: float, console: Console) -> bool:
    """The screen, redrawn in place 4 times a second (the clocks move) and at every event;
    whether Ctrl-C ended it."""
    interrupted = False

    def render() -> RenderableType:
        with watcher.lock:
            return view(watcher.state, time.monotonic(), width=console.width, height=console.height)

    with keys(sys.stdin, watcher.key):
        with Live(
            get_renderable=render,
            console=console,
            screen=False,
            auto_refresh=True,
            refresh_per_second=4,
            vertical_overflow="crop",
        ) as screen:
            try:
                _loop_until_quit(watcher, interval, screen.refresh)
            except KeyboardInterrupt:
                interrupted = True
    console.print("stopped watching", style="dim")
    return interrupted


def _run_plain(watcher: Watcher, interval: float, console: Console) -> bool:
    """Plain lines: what is watched, each re-check's start, each verdict that changed, the counts;
    whether Ctrl-C ended it."""
    interrupted = False
    out = Console(file=console.file, no_color=True, highlight=False, soft_wrap=True, emoji=False, markup=False)

    def listen(notice: Notice) -> None:
        match notice:
            case Noted(state) if state.note:
                out.print(f"{state.path}: {state.note}")
            case Started(state):
                out.print(f"{state.path}: {state.note or 'checking every function'}")
            case Rechecked(state, changed):
                _print_recheck(out, state, changed)

    watcher.listeners.append(listen)
    files = ", ".join(s.path for s in watcher.states.values())
    out.print(f"watching {files}; save a file to check it (Ctrl-C stops)")
    try:
        _loop_until_quit(watcher, interval, lambda: None)
    except KeyboardInterrupt:
        interrupted = True
    out.print("stopped watching")
    return interrupted


def _print_recheck(out: Console, state: TopicState, changed: list[TestResult]) -> None:
    """A re-check's end in plain lines: each verdict that changed, the counts, what is next."""
    rows = progress.rows(changed)
    for row in rows:
        out.print(plain_line(row))
    if not rows:
        out.print(f"{state.topic.name}: no verdict changed")
    counts = progress.counts(state.topic, known(state))
    out.print(f"{state.topic.name} so far: {progress.describe(counts)} ({state.note})")
    if counts.finished:
        nxt = state.next_topic
        out.print(
            f"{state.topic.name} done here. "
            + (f"Next: `grade watch {nxt}`" if nxt else "Every topic is done: `grade submit`")
        )
