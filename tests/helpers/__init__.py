"""Helpers shared by the test files (imported as `helpers.grading`, `helpers.service`, ...; no tests here)."""
