"""The grading core: the engine and its topic sessions, the checks (`checks/`), the specs'
classes, the draws, the clock and its gate, answers and results, the accelerator's rules. It runs
in the grader's process, never in the student's (that is `jaxlings.worker`); it never imports
the course builder, the student's tools or the service (pyproject.toml's [tool.importlinter]).
"""
