"""Loss functions: Fenchel-Young (sparsemax family); softmax NLL, double-sum, One-vs-Each."""
from ._fenchel_young import fenchel_young_loss, fenchel_young_loss_and_grad, sparsemax_loss
from ._softmax import (double_sum_gradient, double_sum_objective, log_ove_bound, optimal_u,
                       ove_gradient, ove_objective, softmax_log_proba, softmax_nll,
                       softmax_scores)

__all__ = ["fenchel_young_loss", "fenchel_young_loss_and_grad", "sparsemax_loss",
           "double_sum_gradient", "double_sum_objective", "log_ove_bound", "optimal_u",
           "ove_gradient", "ove_objective", "softmax_log_proba", "softmax_nll",
           "softmax_scores"]
