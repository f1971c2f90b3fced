"""ONE trajectory, in memory: graded against its task, and many such results summed up.

Layers, each using only those below it (enforced by import-linter, see ``pyproject.toml``):

- ``reward``: ``grade_trajectory``, one trajectory graded by a plain call (the reward-function entry point),
  and ``grade_trajectories``, its batch form;
- ``loaded``: one item a reader read, graded against its task, or its error row (``grade_loaded``, ``error_row``);
- ``case``: the waterfall over one trajectory's turns, the escalation bookkeeping, the final verdict
  (``grade_case``, ``GradedCase``);
- ``attribution`` (check results -> the verdict and the first failure stage), ``scoring`` (the scores),
  ``replay`` (calls re-executed in an executable environment: ``Replayer``);
- ``aggregate``: results -> ``summary.json`` (pass rates with CIs, failure stages, breakdowns, leaderboard).

Nothing here reads or writes a run's files: that is ``pipelines.run``.
"""

from pipelines.grade.aggregate import Aggregator, natural_order
from pipelines.grade.attribution import attribute_trajectory, attribute_turn
from pipelines.grade.case import CHECK_ORDER, GradedCase, grade_case
from pipelines.grade.loaded import error_row, grade_loaded
from pipelines.grade.replay import Replayer
from pipelines.grade.reward import grade_trajectories, grade_trajectory
from pipelines.grade.scoring import TurnFacts, compute_scores

# reward: one trajectory by a plain call
__all__ = ["grade_trajectories", "grade_trajectory"]
# loaded: one read item
__all__ += ["error_row", "grade_loaded"]
# case: the waterfall over one trajectory
__all__ += ["CHECK_ORDER", "GradedCase", "grade_case"]
# attribution, scoring, replay
__all__ += ["Replayer", "TurnFacts", "attribute_trajectory", "attribute_turn", "compute_scores"]
# aggregate: many results -> the summary
__all__ += ["Aggregator", "natural_order"]
