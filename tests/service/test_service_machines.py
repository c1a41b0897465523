"""Workers of two kinds against one course: Celery's routing by queue sends each job to a machine
that can grade it (`jobs.queue_for`). A submission holding a topic graded on the accelerator goes
to the accelerator's queue (`JAXLINGS_ACCELERATOR`), one holding only topics graded on the CPU to
the CPUs'; each `grade worker` takes its kind's (`--machine`). CI has no accelerator: the
accelerator here is the CPU played as one (`exclusive`, `jaxlings.grading.device`), whose gradings say
so in their results (`extra_data.device`)."""

from __future__ import annotations

import pytest

from helpers.service import BROKEN, api, course, graded, post_zip, zip_of  # noqa: F401
from jaxlings.service import config, jobs


def test_a_job_goes_to_the_queue_of_a_machine_that_grades_its_topics():
    cpu_only = config.Settings()
    on_tpu = config.Settings(accelerator="tpu", queue="course")
    assert jobs.queue_for(cpu_only, ["jit_basics"]) == "jaxlings"
    assert jobs.queue_for(on_tpu, ["jit_basics", "ising"]) == "course.tpu"  # graded where its device topic can be
    assert jobs.queue_for(on_tpu, ["ising", "sharding"]) == "course"  # CPU topics only
    assert jobs.queue_name(on_tpu, "cpu") == "course" and jobs.queue_name(on_tpu, "gpu") == "course.gpu"
    assert jobs.machine_of(config.Settings(machine="tpu")) == "tpu"
    with pytest.raises(ValueError, match="accelerator must be one of tpu, gpu, exclusive or empty, not 'tpu1'"):
        config.Settings(accelerator="tpu1")
    with pytest.raises(ValueError, match="machine must be one of"):
        config.from_env({"JAXLINGS_MACHINE": "h200"})


@pytest.mark.slow
def test_an_accelerator_worker_and_a_cpu_worker_share_a_course(course):
    course.env["JAXLINGS_ACCELERATOR"] = "exclusive"
    course.serve()
    course.worker(JAXLINGS_MACHINE="cpu")
    course.worker(JAXLINGS_MACHINE="exclusive")
    client = api(course, course.token("erin"))
    on_device = post_zip(client, zip_of({"prng.py": BROKEN})).json()["id"]  # prng: an accelerator topic
    on_cpu = post_zip(client, zip_of({"sharding.py": BROKEN})).json()["id"]  # sharding: graded on the CPU
    for sub in (on_device, on_cpu):
        assert graded(client, sub, 240)["status"] == "done", course.log("worker.log")
    device_doc = client.get(f"/api/submissions/{on_device}/results.json").json()
    cpu_doc = client.get(f"/api/submissions/{on_cpu}/results.json").json()
    assert device_doc["extra_data"]["device"]["topics"] == ["prng"] and device_doc["score"] == 0
    assert "device" not in cpu_doc["extra_data"] and cpu_doc["score"] == 0
    log = course.log("worker.log")
    assert (
        "grading on cpu: jobs from queue jaxlings\n" in log
        and "grading on exclusive: jobs from queue jaxlings.exclusive" in log
    )
