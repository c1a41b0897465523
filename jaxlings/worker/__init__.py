"""The only grader code that runs in a student's process (and the only code bound into the sandbox).

It imports nothing of `jaxlings` outside this subpackage (a test checks it): the grading
core, the topic specs and their hidden cases stay out of the student's reach.

- `harness`: the worker process; imports one module and answers the grader's requests.
- `wire`: the data-only message format between grader and workers.
- `messages`: the requests, one typed shape per op, and the transforms a request applies.
- `program`: exporting a jitted call as StableHLO (student side) and analysing and running
  such an export (trusted side: only the reference worker analyses a student's program).
"""
