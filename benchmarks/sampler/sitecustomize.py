"""A sampling profiler for every Python process started with this folder first on PYTHONPATH and
PROFILE_SAMPLES set to a folder (`PROFILE=1 bash benchmarks/on_tpu.sh course`): where a device
run spends its time, grader and workers alike, with nothing added to the code they run.

Every 10 ms each thread's stack is read; its signature is its innermost three frames, then every
frame of the project's own files (`jaxlings/`), and, while JAX compiles, the name of the
function compiled. <pid>.txt gets the signatures by time spent, most first; <pid>.timeline.txt
each thread's changes of signature with the wall-clock time, so that the processes' timelines
line up. Both are rewritten every 2 s: a worker may be killed, not ended."""

import collections
import os
import sys
import threading
import time

_OUT = os.environ.get("PROFILE_SAMPLES")


def _label(frame):
    code = frame.f_code
    return f"{os.path.basename(code.co_filename)}:{code.co_name}:{frame.f_lineno}"


def _where(frame):
    inner, ours, compiling = [], [], None
    while frame is not None:
        code = frame.f_code
        if len(inner) < 3:
            inner.append(_label(frame))
        elif "/jaxlings/" in code.co_filename and "sampler" not in code.co_filename:
            ours.append(_label(frame))
        if code.co_name == "_pjit_call_impl_python" and compiling is None:
            compiling = frame.f_locals.get("name")
        frame = frame.f_back
    text = " < ".join(inner + (["..."] if ours else []) + ours[:8])
    return f"COMPILING {compiling}: {text}" if compiling else text


def _sample():
    me = threading.get_ident()
    counts = collections.Counter()
    last: dict = {}
    timeline = []
    started = time.monotonic()
    written = started
    path = os.path.join(_OUT, f"{os.getpid()}")
    while True:
        time.sleep(0.01)
        names = {t.ident: t.name for t in threading.enumerate()}
        for ident, frame in sys._current_frames().items():
            if ident == me:
                continue
            where = _where(frame)
            counts[(names.get(ident, "?"), where)] += 1
            if last.get(ident) != where and len(timeline) < 20000:
                last[ident] = where
                timeline.append(f"{time.time():.3f} [{names.get(ident, '?')}] {where}")
        now = time.monotonic()
        if now - written > 2:
            written = now
            head = f"{' '.join(sys.argv)[:300]}\n{now - started:.1f} s sampled\n"
            with open(path + ".part", "w") as f:
                f.write(head)
                for (name, where), n in counts.most_common(80):
                    f.write(f"{n * 0.01:8.2f} s  [{name}] {where}\n")
            os.replace(path + ".part", path + ".txt")
            with open(path + ".part", "w") as f:
                f.write(head + "\n".join(timeline) + "\n")
            os.replace(path + ".part", path + ".timeline.txt")


if _OUT:
    os.makedirs(_OUT, exist_ok=True)
    threading.Thread(target=_sample, name="sampler", daemon=True).start()

# the sitecustomize this one shadows (a machine's own), run as it would have been
_here = os.path.dirname(os.path.abspath(__file__))
for _p in sys.path:
    _f = os.path.join(_p or ".", "sitecustomize.py")
    if os.path.abspath(_p or ".") != _here and os.path.isfile(_f):
        import importlib.util

        _spec = importlib.util.spec_from_file_location("_shadowed_sitecustomize", _f)
        _mod = importlib.util.module_from_spec(_spec)
        _spec.loader.exec_module(_mod)
        break
