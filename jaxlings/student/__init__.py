"""The student's tools: the workspace (`grade init`), `grade watch`, hints, progress, the report
and boxes a student reads, the notebook grader (`notebook`). They run the grading core on the
student's machine and reach the course's service only over HTTP (`jaxlings.student.client`).
"""
