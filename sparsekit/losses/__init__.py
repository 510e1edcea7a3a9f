"""Loss functions: Fenchel-Young (sparsemax family), logistic, softmax double-sum."""
from ._fenchel_young import fenchel_young_loss, fenchel_young_loss_and_grad, sparsemax_loss
