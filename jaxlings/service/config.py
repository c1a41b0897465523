"""The service's settings: one dataclass, filled from JAXLINGS_* environment variables and flags.

Every field has an environment variable (the `ENV` table below, also printed in docs/service.md);
`grade serve` / `grade worker` flags override them. Defaults give the embedded set-up: everything
in one data folder, SQLite for the database and for Celery's broker and result backend, so that
a separate `grade worker` process receives jobs with no server running.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SANDBOX_MODES = ("on", "off", "auto")
ACCELERATORS = ("", "tpu", "gpu", "exclusive")
"""What a course grades its accelerator topics on: nothing (every worker grades everything on its
CPU), a TPU, a GPU, or `exclusive` (the CPU played as an accelerator: `jaxlings.grading.device`, tests)."""
MACHINES = ("", "cpu", "tpu", "gpu", "exclusive")
"""What a worker is: detected where empty (`jaxlings.grading.device.detect`), else as said."""


@dataclass(frozen=True)
class Settings:
    """What the API and the workers need to agree on (database, broker) and their limits."""

    data_dir: Path = Path("jaxlings-data")
    database_url: str = ""  # default: sqlite:///<data_dir>/jaxlings.db
    broker_url: str = ""  # default: sqla+sqlite:///<data_dir>/broker.db
    result_backend: str = ""  # default: db+sqlite:///<data_dir>/celery-results.db
    queue: str = "jaxlings"
    host: str = "127.0.0.1"
    port: int = 8000
    base_path: str = ""  # URL prefix, e.g. /services/jaxlings on JupyterHub
    public_url: str = ""  # how people reach the service (printed links); default http://host:port
    max_upload_bytes: int = 1 << 20
    max_unpacked_bytes: int = 4 << 20
    rate_limit: int = 10  # submissions per student per topic ...
    rate_window: int = 3600  # ... per this many seconds
    sandbox: str = "on"
    topics: tuple[str, ...] = ()  # topics a submission may hold (default: the whole course)
    lease_seconds: int = 120  # a grading job not heard of for this long is graded again
    heartbeat_seconds: int = 10
    sweep_seconds: int = 15
    hub_api_url: str = ""  # set when run as a JupyterHub service
    hub_api_token: str = ""
    hub_instructor_group: str = "instructors"
    # what one client may hold (app server and front; docs/service.md, "Threats and what holds")
    header_timeout: float = 10.0  # a connection's request line and headers must arrive within this
    body_timeout: float = 30.0  # a request's whole body must arrive within this (else 408)
    keep_alive: int = 5  # an idle keep-alive connection is closed after this many seconds
    max_header_bytes: int = 16384  # request line + headers
    max_connections: int = 256  # open connections per API process; past it, 503
    pages_at_once: int = 2  # costly views (code, diffs, similarity) one caller may have in flight; past it, 429
    similarity_wait: float = 10.0  # seconds a view waits for a similarity report worked out off the request path
    quota_bytes: int = 32 << 20  # stored upload bytes per student (distinct uploads)
    session_hours: float = 12.0  # a page session's lifetime
    send_timeout: float = 3.0  # a broker send gives up after this; the sweep sends it later
    max_attempts: int = 3  # gradings of one job that fail for an infrastructure reason before it is failed
    course_rules: str = ""  # the course's rules file (deadlines, late policy); default <data_dir>/course.toml
    accelerator: str = ""  # what grades the accelerator topics (ACCELERATORS): their jobs go to its queue
    machine: str = ""  # a worker's kind (MACHINES; default: detected): it takes the jobs of its kind's queue
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.sandbox not in SANDBOX_MODES:
            raise ValueError(f"sandbox must be one of {', '.join(SANDBOX_MODES)}, not {self.sandbox!r}")
        if self.accelerator not in ACCELERATORS:
            raise ValueError(f"accelerator must be one of tpu, gpu, exclusive or empty, not {self.accelerator!r}")
        if self.machine not in MACHINES:
            raise ValueError(f"machine must be one of cpu, tpu, gpu, exclusive or empty, not {self.machine!r}")
        if self.similarity_wait < 0:
            raise ValueError(f"similarity_wait must be 0 or more seconds, not {self.similarity_wait}")
        if self.base_path and (not self.base_path.startswith("/") or self.base_path.endswith("/")):
            raise ValueError(f"base path must start with / and not end with one: {self.base_path!r}")
        for name in (
            "max_upload_bytes",
            "rate_limit",
            "rate_window",
            "lease_seconds",
            "heartbeat_seconds",
            "header_timeout",
            "body_timeout",
            "keep_alive",
            "max_header_bytes",
            "max_connections",
            "pages_at_once",
            "quota_bytes",
            "session_hours",
            "send_timeout",
            "max_attempts",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")

    @property
    def db_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir.resolve() / 'jaxlings.db'}"

    @property
    def celery_broker(self) -> str:
        return self.broker_url or f"sqla+sqlite:///{self.data_dir.resolve() / 'broker.db'}"

    @property
    def celery_backend(self) -> str:
        return self.result_backend or f"db+sqlite:///{self.data_dir.resolve() / 'celery-results.db'}"

    @property
    def rules_path(self) -> Path:
        """Where the course's rules are read from (`jaxlings.grading.rules`; absent = no deadlines)."""
        return Path(self.course_rules) if self.course_rules else self.data_dir.resolve() / "course.toml"

    @property
    def secure(self) -> bool:
        """Whether people reach the service over https (cookies then carry `Secure`)."""
        return self.public_url.lower().startswith("https://")

    @property
    def origin(self) -> str:
        """scheme://host[:port] of the public URL: the only Origin a page's form may come from."""
        from urllib.parse import urlsplit

        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def url(self) -> str:
        """The service's address for people (links printed by the CLI and the pages)."""
        return (self.public_url or f"http://{self.host}:{self.port}").rstrip("/") + self.base_path

    def with_overrides(self, **values: Any) -> Settings:
        """A copy with the given fields replaced; None means 'not given' (a flag left out)."""
        given = {k: v for k, v in values.items() if v is not None}
        return dataclasses.replace(self, **given)

    def to_env(self) -> dict[str, str]:
        """These settings as environment variables, for a child process (a worker we start)."""
        env = {}
        for name, var in ENV.items():
            value = getattr(self, name)
            env[var] = ",".join(value) if isinstance(value, tuple) else str(value)
        return env


# field -> environment variable. JupyterHub's own variables fill the hub fields when present.
ENV: dict[str, str] = {
    "data_dir": "JAXLINGS_DATA_DIR",
    "database_url": "JAXLINGS_DATABASE_URL",
    "broker_url": "JAXLINGS_BROKER_URL",
    "result_backend": "JAXLINGS_RESULT_BACKEND",
    "queue": "JAXLINGS_QUEUE",
    "host": "JAXLINGS_HOST",
    "port": "JAXLINGS_PORT",
    "base_path": "JAXLINGS_BASE_PATH",
    "public_url": "JAXLINGS_PUBLIC_URL",
    "max_upload_bytes": "JAXLINGS_MAX_UPLOAD_BYTES",
    "max_unpacked_bytes": "JAXLINGS_MAX_UNPACKED_BYTES",
    "rate_limit": "JAXLINGS_RATE_LIMIT",
    "rate_window": "JAXLINGS_RATE_WINDOW",
    "sandbox": "JAXLINGS_SANDBOX",
    "topics": "JAXLINGS_TOPICS",
    "lease_seconds": "JAXLINGS_LEASE_SECONDS",
    "heartbeat_seconds": "JAXLINGS_HEARTBEAT_SECONDS",
    "sweep_seconds": "JAXLINGS_SWEEP_SECONDS",
    "hub_api_url": "JAXLINGS_HUB_API_URL",
    "hub_api_token": "JAXLINGS_HUB_API_TOKEN",
    "hub_instructor_group": "JAXLINGS_HUB_INSTRUCTOR_GROUP",
    "header_timeout": "JAXLINGS_HEADER_TIMEOUT",
    "body_timeout": "JAXLINGS_BODY_TIMEOUT",
    "keep_alive": "JAXLINGS_KEEP_ALIVE",
    "max_header_bytes": "JAXLINGS_MAX_HEADER_BYTES",
    "max_connections": "JAXLINGS_MAX_CONNECTIONS",
    "pages_at_once": "JAXLINGS_PAGES_AT_ONCE",
    "similarity_wait": "JAXLINGS_SIMILARITY_WAIT",
    "quota_bytes": "JAXLINGS_QUOTA_BYTES",
    "session_hours": "JAXLINGS_SESSION_HOURS",
    "send_timeout": "JAXLINGS_SEND_TIMEOUT",
    "max_attempts": "JAXLINGS_MAX_ATTEMPTS",
    "course_rules": "JAXLINGS_COURSE_RULES",
    "accelerator": "JAXLINGS_ACCELERATOR",
    "machine": "JAXLINGS_MACHINE",
}
HUB_FALLBACK = {
    "hub_api_url": "JUPYTERHUB_API_URL",
    "hub_api_token": "JUPYTERHUB_API_TOKEN",
    "base_path": "JUPYTERHUB_SERVICE_PREFIX",
}


def from_env(environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from the environment (JAXLINGS_*, then JupyterHub's service variables)."""
    environ = os.environ if environ is None else environ
    types = {f.name: str(f.type) for f in dataclasses.fields(Settings)}  # strings: `from __future__ import annotations`
    values: dict[str, Any] = {}
    for name, var in ENV.items():
        raw = environ.get(var) or environ.get(HUB_FALLBACK.get(name, ""), "")
        if raw == "":
            continue
        if name == "base_path":
            raw = raw.rstrip("/")
        values[name] = _parse(name, types[name], raw, var)
    return Settings(**values)


def _parse(name: str, kind: str, raw: str, var: str) -> Any:
    """One environment variable's text as the field's type, or a ValueError naming the variable."""
    try:
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
        if kind == "Path":
            return Path(raw)
        if kind.startswith("tuple"):
            return tuple(t.strip() for t in raw.split(",") if t.strip())
        return raw
    except ValueError:
        raise ValueError(f"{var}={raw!r}: {name} must be a {kind}") from None
