"""`grade export gradescope`: an autograder zip that runs the same engine on Gradescope.

The zip holds the grader's source (the `jaxlings` package, `solutions/`, `pyproject.toml`),
`setup.sh` (Gradescope runs it once when building the image: installs bubblewrap and the
grader) and `run_autograder` (run per submission: `grade grade` on /autograder/submission,
writing /autograder/results/results.json, which is already Gradescope's format, with its
`leaderboard` of the measured speed ratios: `--leaderboard`; Gradescope shows it when the
assignment's leaderboard is enabled, under the pseudonyms students give it there).
`AUTOGRADER_ROOT` and `JAXLINGS_PYTHON` let a test run it in an /autograder-shaped folder.
"""

from __future__ import annotations

import json
import shlex
import sys
import zipfile
from pathlib import Path

from jaxlings.grading import paths
from jaxlings.grading import topics as course

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image.
set -euo pipefail
cd "$(dirname "$0")"
apt-get update -qq
apt-get install -y -qq python3 python3-pip python3-venv bubblewrap >/dev/null
python3 -m venv /opt/jaxlings
/opt/jaxlings/bin/python -m pip install --quiet --upgrade pip
/opt/jaxlings/bin/python -m pip install --quiet .
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this for each submission: the hidden checks of `grade grade`, the same engine as
# the course server, writing Gradescope's results.json (with the measured speed ratios as its
# `leaderboard`, shown when the assignment's leaderboard is enabled).
set -euo pipefail
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
SRC="$ROOT/source"
PY="${{JAXLINGS_PYTHON:-/opt/jaxlings/bin/python}}"
mkdir -p "$ROOT/results"
export PYTHONPATH="$SRC${{PYTHONPATH:+:$PYTHONPATH}}"
export JAXLINGS_SOLUTIONS="$SRC/solutions"
cd "$SRC"
OUT="$ROOT/results/results.json"
LOG="$ROOT/results/grader.log"
# The sandbox is required: where bubblewrap cannot build one (an image without user namespaces),
# nothing is graded, and results.json says why, for the instructor to fix.
status=0
"$PY" -m jaxlings grade "$ROOT/submission" {topics}--sandbox on --leaderboard --json "$OUT" >"$LOG" 2>&1 || status=$?
cat "$LOG"
if [ "$status" -ne 0 ] && [ ! -s "$OUT" ]; then
  "$PY" -m jaxlings.service.gradescope "$LOG" "$OUT"
fi
exit "$status"
"""


def sources() -> dict[str, Path]:
    """The files the grader needs: name in the zip -> file here."""
    root = paths.PACKAGE_ROOT
    package = [p for p in (root / "jaxlings").rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    files = {p.relative_to(root).as_posix(): p for p in package}
    files.update({f"solutions/{p.name}": p for p in sorted(paths.solutions_dir().glob("*.py"))})
    files.update({name: root / name for name in ("pyproject.toml", "README.md") if (root / name).is_file()})
    return dict(sorted(files.items()))


def write_autograder(out: Path, topic_names: list[str]) -> Path:
    """Write the autograder zip to `out` (topics: those to grade, default every topic)."""
    chosen = [t.name for t in course.resolve(topic_names)] if topic_names else []
    flags = "".join(f"--topics {shlex.quote(t)} " for t in chosen)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, path in sources().items():
            archive.write(path, name)
        _script(archive, "setup.sh", SETUP)
        _script(archive, "run_autograder", RUN.format(topics=flags))
    return out


def _script(archive: zipfile.ZipFile, name: str, text: str) -> None:
    info = zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
    info.external_attr = 0o755 << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, text)


def failed(log: Path, out: Path) -> None:
    """Gradescope's results.json for a run that graded nothing: score 0, and the grader's error
    (its log from the `error:` line on, rich's wrapping undone; else the log's end)."""
    text = log.read_text(errors="replace") if log.is_file() else ""
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if line.startswith("error:")), None)
    said = " ".join(line.strip() for line in lines[first:]) if first is not None else text.strip()
    why = said[-2000:] or "the grader stopped without a message"
    out.write_text(
        json.dumps(
            {
                "score": 0,
                "output": f"This submission was not graded: the autograder could not run ({why}). "
                "Your instructor has been shown this message; resubmit once it is fixed.",
                "tests": [],
            }
        )
    )


if __name__ == "__main__":  # run_autograder's fallback: `python -m jaxlings.service.gradescope LOG OUT`
    failed(Path(sys.argv[1]), Path(sys.argv[2]))
