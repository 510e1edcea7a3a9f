"""A recording callback for scikit-learn's callback API (``sklearn.callback``)."""


class Recorder:
    """A FitCallback recording each finished task (name, depth) and, on the deepest tasks
    (iterations, epochs), the score of the model as it stood; asks to stop after
    ``stop_after`` of them."""

    def __init__(self, stop_after=None):
        self.stop_after = stop_after
        self.ended, self.scores, self.setups, self.teardowns = [], [], 0, 0

    def setup(self, estimator, context):
        self.setups += 1

    def teardown(self, estimator, context):
        self.teardowns += 1

    def on_fit_task_begin(self, estimator, context, *, X=None, y=None):
        pass

    def on_fit_task_end(self, estimator, context, *, X=None, y=None, fitted_estimator=None):
        depth, parent = 0, context.parent
        while parent is not None:
            depth, parent = depth + 1, parent.parent
        self.ended.append((context.task_name, depth))
        if depth and fitted_estimator is not None and X is not None:
            self.scores.append(fitted_estimator.score(X, y))
        deepest = sum(name == context.task_name for name, _ in self.ended)
        return self.stop_after is not None and context.max_subtasks == 0 and \
            deepest >= self.stop_after
