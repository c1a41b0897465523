"""course/jupyterhub_config.py loads in JupyterHub and names only real settings and scopes."""

from __future__ import annotations

import pytest

from conftest import ROOT

CONFIG = ROOT / "course" / "jupyterhub_config.py"


@pytest.fixture(scope="module")
def hub():
    from jupyterhub.app import JupyterHub

    app = JupyterHub()
    app.load_config_file(str(CONFIG))
    return app


def test_every_setting_is_a_configurable_trait(hub):
    from jupyterhub.auth import Authenticator
    from jupyterhub.spawner import Spawner

    classes = {cls.__name__: cls for cls in [type(hub), Authenticator, Spawner]}
    assert set(hub.config) <= set(classes), set(hub.config) - set(classes)
    for section, values in hub.config.items():
        known = classes[section].class_trait_names(config=True)
        assert set(values) <= set(known), f"{section}: unknown {set(values) - set(known)}"


def test_roles_use_scopes_jupyterhub_knows_and_groups_follow_nbgrader(hub):
    from jupyterhub.scopes import _check_scopes_exist

    cfg = hub.config.JupyterHub
    for role in cfg.load_roles:
        _check_scopes_exist(role["scopes"], who_for=f"role {role['name']}")
    assert set(cfg.load_groups) == {"formgrade-jaxlings", "nbgrader-jaxlings"}
    [service] = cfg.services
    assert service["name"] == "jaxlings" and service["user"] == "grader-jaxlings"
