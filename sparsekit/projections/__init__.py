"""Row-wise Euclidean projections onto the sparsemax family of polytopes, with JVPs."""
from ._checks import POLYTOPES
from ._dispatch import jvp, project
from ._polytopes import (project_at_least_one, project_at_most_one, project_box,
                         project_budget, project_capped_simplex, project_knapsack)
from ._simplex import project_simplex, sparsemax

__all__ = ["POLYTOPES", "jvp", "project", "project_at_least_one", "project_at_most_one",
           "project_box", "project_budget", "project_capped_simplex", "project_knapsack",
           "project_simplex", "sparsemax"]
