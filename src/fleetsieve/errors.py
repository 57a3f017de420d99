"""The one exception type FleetSieve raises for bad user input.

The CLI turns it into a single line on stderr and exit code 2, so its message
must name the file, the row or key, and the problem.
"""

from __future__ import annotations


class InputError(ValueError):
    """Bad user input: a spec, grid, trace or option that cannot be used."""

    def __init__(self, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}" if where else problem)
