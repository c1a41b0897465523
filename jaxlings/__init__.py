"""jaxlings' grader: specs, sandboxed workers, checks, results, and the `grade` CLI."""

__version__ = "0.1.0"
