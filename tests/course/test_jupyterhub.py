"""course/jupyterhub_config.py on a real JupyterHub: the hub starts with it, and an
instructor's formgrader (the course's service) generates, releases and autogrades a topic.

The hub runs on loopback with JupyterHub's dummy authenticator and a probe service whose
token stands in for an instructor; everything else is the course's own config. It needs
configurable-http-proxy (npm), which `make setup` installs into .venv when npm is present.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from helpers.grading import ROOT
from helpers.service import free_port, hub_on_loopback
from jaxlings.grading import topics

CONFIG = ROOT / "course" / "jupyterhub_config.py"
TOPIC = "at_updates"
TOKEN = "jaxlings-probe-token-0123456789"
BIN = Path(sys.executable).parent
PROXY_PATH = os.pathsep.join([str(BIN), str(BIN.parent / "node_modules" / ".bin"), os.environ["PATH"]])


def test_every_setting_is_a_configurable_trait():
    from jupyterhub.app import JupyterHub
    from jupyterhub.auth import Authenticator
    from jupyterhub.spawner import Spawner

    hub = JupyterHub()
    hub.load_config_file(str(CONFIG))
    classes = {cls.__name__: cls for cls in [JupyterHub, Authenticator, Spawner]}
    assert set(hub.config) <= set(classes), set(hub.config) - set(classes)
    for section, values in hub.config.items():
        known = classes[section].class_trait_names(config=True)
        assert set(values) <= set(known), f"{section}: unknown {set(values) - set(known)}"


TEST_CONFIG = """
c = get_config()
load_subconfig({config!r})
course = c.JupyterHub.services[0]
course.pop("user")  # no system accounts here: the service runs as whoever runs the test
course["cwd"] = {course!r}
course["command"] = ["jupyterhub-singleuser", "--ServerApp.root_dir={course}"] + {root_flag!r}
course["environment"]["PATH"] = {path!r}
c.JupyterHub.services.append({{"name": "probe", "api_token": {token!r}}})
c.JupyterHub.load_roles.append({{"name": "probe", "services": ["probe"], "scopes": [
    "list:groups", "read:groups", "list:services", "read:services", "access:services!service=jaxlings"]}})
c.JupyterHub.authenticator_class = "dummy"
c.JupyterHub.spawner_class = "simple"
{loopback}"""


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """(base url of the course's formgrader API, course root, exchange) on a running hub."""
    if not shutil.which("configurable-http-proxy", path=PROXY_PATH):
        pytest.skip("configurable-http-proxy is not installed (npm install -g configurable-http-proxy)")
    tmp = tmp_path_factory.mktemp("hub")
    course, exchange = tmp / "course", tmp / "exchange"
    shutil.copytree(ROOT / "course" / "source" / TOPIC, course / "source" / TOPIC)
    exchange.mkdir()
    config = (ROOT / "course" / "nbgrader_config.py").read_text() + f"\nc.Exchange.root = {str(exchange)!r}\n"
    (course / "nbgrader_config.py").write_text(config)
    port = free_port()
    (tmp / "test_config.py").write_text(
        TEST_CONFIG.format(
            config=str(CONFIG),
            course=str(course),
            path=PROXY_PATH,
            token=TOKEN,
            loopback=hub_on_loopback(tmp, port),
            root_flag=["--allow-root"] if os.geteuid() == 0 else [],
        )
    )
    log = open(tmp / "hub.log", "w")
    proc = subprocess.Popen(
        [str(BIN / "jupyterhub"), "-f", str(tmp / "test_config.py")],
        cwd=tmp,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PATH": PROXY_PATH},
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    api = f"{base}/services/jaxlings/formgrader/api"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if requests.get(f"{api}/assignments", headers=auth(), timeout=15).status_code == 200:
                    break
            except (requests.ConnectionError, requests.Timeout):  # not up yet, or slow to answer on a busy machine
                pass
            assert proc.poll() is None and time.monotonic() < deadline, (tmp / "hub.log").read_text()[-4000:]
            time.sleep(1)
        yield base, course, exchange
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        # the user's server runs in a session of its own and outlives a hub that did not stop it:
        # left behind, it holds its port and the next run's hub cannot start one
        subprocess.run(["pkill", "-KILL", "-f", f"--ServerApp.root_dir={course}"], check=False)
        log.close()


def auth() -> dict:
    return {"Authorization": f"token {TOKEN}"}


@pytest.mark.slow
def test_the_hub_loads_the_course_groups_and_service(hub):
    base, _, _ = hub
    groups = requests.get(f"{base}/hub/api/groups", headers=auth(), timeout=30).json()
    members = {g["name"]: set(g["users"]) for g in groups}
    assert members == {"formgrade-jaxlings": {"instructor1"}, "nbgrader-jaxlings": {"student1", "student2"}}
    services = requests.get(f"{base}/hub/api/services", headers=auth(), timeout=30).json()
    assert "jaxlings" in services


@pytest.mark.slow
def test_the_formgrader_releases_and_autogrades_a_topic(hub):
    base, course, exchange = hub
    api = f"{base}/services/jaxlings/formgrader/api"

    def post(path: str) -> dict:
        reply = requests.post(f"{api}/{path}", headers=auth(), timeout=900)
        assert reply.status_code == 200, reply.text
        body = reply.json()
        assert body.get("success", True), body.get("log", body)
        return body

    post(f"assignment/{TOPIC}/assign")  # the formgrader's "Generate"
    post(f"assignment/{TOPIC}/release")
    assert (exchange / "jaxlings" / "outbound" / TOPIC / f"{TOPIC}.ipynb").is_file()
    student = {"first_name": "Alice", "last_name": "A", "email": None, "lms_user_id": None}
    assert requests.put(f"{api}/student/alice", json=student, headers=auth(), timeout=30).status_code == 200
    submitted = course / "submitted" / "alice" / TOPIC
    submitted.mkdir(parents=True)
    shutil.copy(course / "source" / TOPIC / f"{TOPIC}.ipynb", submitted)  # the solutions, handed in
    post(f"submission/{TOPIC}/alice/autograde")
    [row] = requests.get(f"{api}/submissions/{TOPIC}", headers=auth(), timeout=30).json()
    spec = topics.load(TOPIC)
    total = sum(ex.points for ex in spec.exercises)
    timed = sum(check.points for ex in spec.exercises for check in ex.checks if check.timed)
    assert (row["student"], row["autograded"], row["max_score"]) == ("alice", True, total)
    # every point but the speed band's, which reads this busy machine's clock (the test never hinges on it)
    assert total - timed <= row["score"] <= total
