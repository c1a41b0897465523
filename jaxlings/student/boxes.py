"""One check as a notebook shows it: an HTML box, and its plain-text twin.

A grade cell (`jaxlings.student.notebook`) displays one box per check: a coloured band whose class
names its kind (`progress.kind`: pass, partial, fail, pending, advice, waits), a title line
(mark, label, test name, points, which cases) and the grader's message, the same text as
`grade check` prints. The display carries both `text/html` and `text/plain`: JupyterLab and
nbgrader's feedback pages show the HTML; nbgrader's autograde, `nbconvert --to script` and
any reader without HTML read the plain line, which is the CLI's ("FAILED at_updates.x:jit
[public cases] 0/2: ...").

Styles are inline (an untrusted notebook drops `<style>` elements but keeps `style`
attributes), and the message wraps at spaces, never mid-word (`overflow-wrap: break-word`
only cuts a word longer than the whole line).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from jaxlings.grading.results import TestResult
from jaxlings.student import progress

CLASS = "jaxlings-check"


@dataclass(frozen=True)
class Style:
    """How one kind of verdict looks: its mark and label, and its colours (band, background)."""

    mark: str
    label: str
    band: str
    background: str


STYLES: dict[str, Style] = {
    "pass": Style("✓", "PASSED", "#1e8e3e", "#e6f4ea"),
    "partial": Style("~", "PARTIAL", "#b06000", "#fef7e0"),
    "fail": Style("✗", "FAILED", "#c5221f", "#fce8e6"),
    "pending": Style("…", "JUDGED ON SUBMISSION", "#1967d2", "#e8f0fe"),
    "advice": Style("!", "ADVICE", "#8430ce", "#f3e8fd"),
    "waits": Style("⋯", "WAITING", "#5f6368", "#f1f3f4"),
    "hint": Style("?", "HINT", "#0b8043", "#ffffff"),
}
"""Each kind distinct: an advisory finding (advice) never looks like a pass or a failure."""

PENDING_PREFIX = "judged on submission: "
CODE = re.compile(r"`([^`\n]+)`")


def kind(test: TestResult) -> str:
    """The box's kind: `progress.kind`, the one definition every screen uses."""
    return progress.kind(test)


def plain(test: TestResult, mode: str) -> str:
    """The box as one plain line, as the CLI states it: "FAILED name [public cases] 0/2: message"
    (a pass has no label, as before, so nbgrader's feedback reads alike)."""
    k = kind(test)
    label = "" if k == "pass" else f"{STYLES[k].label} "
    points = progress.points_text(test)
    return f"{label}{test.name} [{mode} cases]{' ' + points if points else ''}: {test.output}"


def _inline(text: str) -> str:
    """Escaped text with `code` spans as <code>."""
    return CODE.sub(lambda m: f"<code>{m[1]}</code>", html.escape(text, quote=False))


def message_html(message: str) -> str:
    """The message: its first line as prose; any lines after it (a source line and its caret)
    in a monospace block, kept as written."""
    first, _, rest = message.partition("\n")
    out = f'<div class="jaxlings-message" style="white-space:pre-wrap;overflow-wrap:break-word">{_inline(first)}</div>'
    if rest.strip():
        out += (
            '<pre class="jaxlings-detail" style="margin:4px 0 0;white-space:pre;overflow-x:auto;'
            f'background:transparent">{html.escape(rest, quote=False)}</pre>'
        )
    return out


def _box(k: str, title: str, message: str, points: str | None = None, mode: str | None = None) -> str:
    """A box of kind `k`: its mark and label, `title` (a test's name), its points and cases when
    given, and `message`."""
    s = STYLES[k]
    extra = ""
    if points is not None:
        extra += f' <span class="jaxlings-points">{points or "advice, no points"}</span>'
    if mode is not None:
        extra += f' <span class="jaxlings-mode" style="font-weight:400;color:#5f6368">· {mode} cases</span>'
    return (
        f'<div class="{CLASS} jaxlings-{k}" data-kind="{k}" style="border-left:6px solid {s.band};'
        f"background:{s.background};color:#202124;padding:6px 12px;margin:4px 0;border-radius:4px;"
        'font-family:system-ui,-apple-system,Segoe UI,sans-serif;font-size:14px;line-height:1.45">'
        f'<div class="jaxlings-title" style="font-weight:600;color:{s.band}">'
        f'<span class="jaxlings-mark">{s.mark} {s.label}</span> '
        f'<code style="color:#202124;background:transparent">{html.escape(title)}</code>{extra}</div>'
        f"{message_html(message)}</div>"
    )


def box_html(test: TestResult, mode: str) -> str:
    """The HTML box of one check."""
    k = kind(test)
    message = test.output.removeprefix(PENDING_PREFIX) if k == "pending" else test.output  # the label says it
    return _box(k, test.name, message, progress.points_text(test), mode)


def bundle(test: TestResult, mode: str) -> dict[str, str]:
    """The display's MIME bundle: the HTML box and its plain-text twin."""
    return {"text/html": box_html(test, mode), "text/plain": plain(test, mode)}


def note_bundle(k: str, title: str, message: str) -> dict[str, str]:
    """A box that is no test's verdict (a check the kernel could not grade, a hint), styled as `k`."""
    return {"text/html": _box(k, title, message), "text/plain": f"{STYLES[k].label} {title}: {message}"}
