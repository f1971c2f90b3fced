"""ONE run over files: ``judge grade`` from its inputs to the outputs in ``--out``.

Layers, top to bottom, each using only those below it (enforced by import-linter, see
``pyproject.toml``):

- ``resume`` (``judge resume``: the options rebuilt from the run's recipe), ``gold`` (``judge gold export``
  from a finished run), ``convert`` (``judge convert``: a run's trajectory input written as native JSONL);
- ``grading``: ``run_grading``, the run's phases in order;
- ``publish``: outputs staged, moved into ``--out``, ``manifest.json`` last;
- ``escalation``: the rounds of judge questions, journaled;
- ``merge``: shards in, merged in input order, checkpointed; rebuilt on resume;
- ``executors`` (this process, worker processes, Ray) and ``task_shards`` (tasks loaded by workers);
- ``shards``: one shard of the trajectories graded (the unit of work of every executor);
- ``inputs`` (the run's inputs loaded once), ``folder`` (what ``--out`` may hold), ``state`` (``.judge-run/``:
  what an interrupted run continues from);
- ``options`` (what a run is asked and gives back), ``lines`` / ``stream`` (the trajectories cut into
  shards of whole lines), ``spool`` (inputs read once, pipes spooled).

One trajectory in memory is ``pipelines.grade``; this package uses it, never the other way round.
"""

from pipelines.run.convert import Converted, ConvertOptions, convert_trajectories
from pipelines.run.executors import Executor, default_workers, make_executor
from pipelines.run.folder import MANIFEST, OUTPUTS, REPORT_HTML, REPORT_MD, RESULTS, SUMMARY, TABLES, RunDirectory
from pipelines.run.grading import run_grading
from pipelines.run.lines import SHARD_BYTES, LineShards, RawShard
from pipelines.run.options import BatchWait, GradeOptions, InputErrorsFound, JudgingProgress, NoTasks, Progress, RunOutcome
from pipelines.run.resume import in_directory, load_recipe, options_from
from pipelines.run.spool import STDIN, InputChanged, TaskInput, display_name
from pipelines.run.state import STATE_DIR, RunDirError, RunState

# grading: the run
__all__ = ["run_grading"]
# options: what a run is asked and gives back
__all__ += ["BatchWait", "GradeOptions", "InputErrorsFound", "JudgingProgress", "NoTasks", "Progress", "RunOutcome"]
# convert: what a run reads from an input, written as native files
__all__ += ["ConvertOptions", "Converted", "convert_trajectories"]
# resume: a run continued from its state alone
__all__ += ["in_directory", "load_recipe", "options_from"]
# folder and state: --out and .judge-run/
__all__ += ["MANIFEST", "OUTPUTS", "REPORT_HTML", "REPORT_MD", "RESULTS", "STATE_DIR", "SUMMARY", "TABLES", "RunDirError", "RunDirectory", "RunState"]
# executors: where shards are graded
__all__ += ["Executor", "default_workers", "make_executor"]
# inputs: read once, cut into shards
__all__ += ["SHARD_BYTES", "STDIN", "InputChanged", "LineShards", "RawShard", "TaskInput", "display_name"]
