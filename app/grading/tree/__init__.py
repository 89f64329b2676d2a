"""The criteria tree behind the ``criteria_tree`` strategy: model, checks, AI tests, scoring.

Importing the package registers the built-in test kinds, so a tree validates as soon as
anything in it has been imported.
"""

from app.grading.tree import ai, checks, model, program

__all__ = ["ai", "checks", "model", "program"]
