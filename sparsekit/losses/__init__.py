"""Loss functions: Fenchel-Young (sparsemax family), logistic, softmax double-sum."""
