"""JupyterHub configuration for running jaxlings as an nbgrader course (an example to adapt).

One course, `jaxlings`, graded from a shared grader account, on one machine:

- `grader-jaxlings` (a system account) owns the course root, a clone of this repository's
  `course/` folder (with jaxlings installed in the environment its kernels use). Its Jupyter
  server runs as a hub-managed service named after the course; nbgrader's formgrader there
  is where instructors release, collect, autograde, give feedback and export.
- Instructors are in the group `formgrade-jaxlings` (nbgrader finds the course's service by
  this name) and may open that service; they use their own servers too.
- Students are in the group `nbgrader-jaxlings` and use the Assignments tab of their own
  server to fetch and submit; the exchange directory (set in /etc/jupyter/nbgrader_config.py,
  see docs/jupyterhub.md) carries the files between the two.

Replace the user names and the authenticator with your institution's; nothing else here is
specific to a site. The walkthrough is docs/jupyterhub.md.
"""

c = get_config()  # noqa: F821  (JupyterHub provides it)

COURSE = "jaxlings"
INSTRUCTORS = ["instructor1"]
STUDENTS = ["student1", "student2"]

c.Authenticator.allowed_users = set(INSTRUCTORS + STUDENTS)
c.Authenticator.admin_users = set()

# Group names are nbgrader's convention: formgrade-<course> and nbgrader-<course>.
c.JupyterHub.load_groups = {
    f"formgrade-{COURSE}": {"users": INSTRUCTORS},
    f"nbgrader-{COURSE}": {"users": STUDENTS},
}

c.JupyterHub.load_roles = [
    {   # instructors may open the course's grader server (the formgrader)
        "name": f"formgrade-{COURSE}",
        "groups": [f"formgrade-{COURSE}"],
        "scopes": [f"access:services!service={COURSE}", "list:services", f"read:services!service={COURSE}"],
    },
    {   # students' Assignments tab lists the courses they are in through the hub's services API
        "name": f"nbgrader-{COURSE}",
        "groups": [f"nbgrader-{COURSE}"],
        "scopes": ["list:services", f"read:services!service={COURSE}"],
    },
    {   # single-user servers act with their owner's permissions (for nbgrader's course list)
        "name": "server",
        "scopes": ["inherit"],
    },
]

# The course's own Jupyter server: the formgrader, run as the grader account in the course root.
c.JupyterHub.services = [
    {
        "name": COURSE,
        "url": "http://127.0.0.1:9999",
        "command": ["jupyterhub-singleuser", "--ServerApp.root_dir=/home/grader-jaxlings/course"],
        "user": f"grader-{COURSE}",
        "cwd": "/home/grader-jaxlings/course",
        "environment": {"JUPYTERHUB_DEFAULT_URL": "/formgrader"},
    },
]

# A grade cell grades in fresh JAX worker processes; give single-user servers room for them.
c.Spawner.mem_limit = "8G"  # where the spawner enforces it (systemd, docker, kubernetes)
c.Spawner.default_url = "/lab"
