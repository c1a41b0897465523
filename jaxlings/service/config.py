"""The service's settings: one pydantic-settings model, filled from JAXLINGS_* environment variables and flags.

Every field has an environment variable, JAXLINGS_ and its name in capitals (the `ENV` table below,
also printed in docs/service.md); `grade serve` / `grade worker` flags override them. Defaults give
the embedded set-up: everything in one data folder, SQLite for the database and for Celery's broker
and result backend, so that a separate `grade worker` process receives jobs with no server running.

`Settings(...)` holds the values given and the defaults, never the environment's: `from_env(environ)`
is the one reader of an environment (this process's, a child's, a test's), through pydantic-settings'
source (`Environment`), and says what is wrong with a bad value in one line naming its variable.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import ValidationError, ValidationInfo, field_validator
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

SANDBOX_MODES = ("on", "off", "auto")
ACCELERATORS = ("", "tpu", "gpu", "exclusive")
"""What a course grades its accelerator topics on: nothing (every worker grades everything on its
CPU), a TPU, a GPU, or `exclusive` (the CPU played as an accelerator: `jaxlings.grading.device`, tests)."""
MACHINES = ("", "cpu", "tpu", "gpu", "exclusive")
"""What a worker is: detected where empty (`jaxlings.grading.device.detect`), else as said."""
CHOICES = {"sandbox": SANDBOX_MODES, "accelerator": ACCELERATORS, "machine": MACHINES}
"""The settings that take one of a few words, and those words."""
POSITIVE = (
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
)
"""The settings that must be more than 0."""
HUB_FALLBACK = {
    "hub_api_url": "JUPYTERHUB_API_URL",
    "hub_api_token": "JUPYTERHUB_API_TOKEN",
    "base_path": "JUPYTERHUB_SERVICE_PREFIX",
}
"""JupyterHub's own variables, read for these fields when their JAXLINGS_* variable is not set."""


class Settings(BaseSettings):
    """What the API and the workers need to agree on (database, broker) and their limits."""

    model_config = SettingsConfigDict(env_prefix="JAXLINGS_", env_ignore_empty=True, frozen=True)

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
    topics: Annotated[tuple[str, ...], NoDecode] = ()  # topics a submission may hold (default: the whole course)
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

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The values given only: the environment is read by `from_env`, no .env file, no secrets folder."""
        return (init_settings,)

    @field_validator("topics", mode="before")
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        """A comma-separated list (as in JAXLINGS_TOPICS) as its names, blanks dropped."""
        return tuple(t.strip() for t in value.split(",") if t.strip()) if isinstance(value, str) else value

    @field_validator("sandbox", "accelerator", "machine")
    @classmethod
    def _one_of(cls, value: str, info: ValidationInfo) -> str:
        allowed = CHOICES[str(info.field_name)]
        if value not in allowed:
            named = ", ".join(a for a in allowed if a) + (" or empty" if "" in allowed else "")
            raise ValueError(f"{info.field_name} must be one of {named}, not {value!r}")
        return value

    @field_validator("similarity_wait")
    @classmethod
    def _similarity_wait(cls, value: float) -> float:
        if value < 0:
            raise ValueError(f"similarity_wait must be 0 or more seconds, not {value}")
        return value

    @field_validator("base_path")
    @classmethod
    def _base_path(cls, value: str) -> str:
        if value and (not value.startswith("/") or value.endswith("/")):
            raise ValueError(f"base path must start with / and not end with one: {value!r}")
        return value

    @field_validator(*POSITIVE)
    @classmethod
    def _positive(cls, value: float, info: ValidationInfo) -> float:
        if value <= 0:
            raise ValueError(f"{info.field_name} must be positive")
        return value

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
        """A copy with the given fields replaced; None means 'not given' (a flag left out). A bad
        value is a ValueError saying what is wrong in one line."""
        given = {k: v for k, v in values.items() if v is not None}
        return _checked({**self.model_dump(), **given})

    def to_env(self) -> dict[str, str]:
        """These settings as environment variables, for a child process (a worker we start)."""
        env = {}
        for name, var in ENV.items():
            value = getattr(self, name)
            env[var] = ",".join(value) if isinstance(value, tuple) else str(value)
        return env


ENV: dict[str, str] = {name: f"JAXLINGS_{name.upper()}" for name in Settings.model_fields}
"""field -> its environment variable. JupyterHub's own variables fill the hub fields when these are not set."""


class Environment(EnvSettingsSource):
    """pydantic-settings' JAXLINGS_* source over `environ` (default: this process's environment),
    with JupyterHub's service variables for the fields of `HUB_FALLBACK` whose own variable is not
    set, and the base path's trailing / dropped (JupyterHub's prefix ends with one). An empty
    variable counts as not set."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str] | None = None) -> None:
        self.environ = os.environ if environ is None else environ
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        """`environ`'s variables, as pydantic-settings' own source reads os.environ's."""
        return {
            name if self.case_sensitive else name.lower(): value
            for name, value in self.environ.items()
            if value or not self.env_ignore_empty
        }

    def __call__(self) -> dict[str, Any]:
        values = super().__call__()
        for name, var in HUB_FALLBACK.items():
            fallback = self.env_vars.get(var if self.case_sensitive else var.lower())
            if name not in values and fallback:
                values[name] = fallback
        if isinstance(values.get("base_path"), str):
            values["base_path"] = values["base_path"].rstrip("/")
        return values


def from_env(environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from the environment (JAXLINGS_*, then JupyterHub's service variables): this
    process's, or `environ`, which is then the only one read. A bad value is a ValueError naming
    its variable."""
    return _checked(Environment(Settings, environ)())


def _checked(values: dict[str, Any]) -> Settings:
    """Settings of `values` (defaults for the rest), or a ValueError saying in one line what is
    wrong with each bad one."""
    try:
        return Settings(**values)
    except ValidationError as exc:
        raise ValueError("; ".join(_problem(error) for error in exc.errors())) from None


def _problem(error: Any) -> str:
    """One validation error in words: a check's own message, or which variable is not of its type."""
    name = str(error["loc"][0]) if error["loc"] else "settings"
    if error["type"] == "value_error":
        return str(error["ctx"]["error"])
    field = Settings.model_fields.get(name)
    if field is None:
        return f"{name}: {error['msg']}"
    kind = getattr(field.annotation, "__name__", str(field.annotation))
    return f"{ENV[name]}={error['input']!r}: {name} must be a {kind}"
