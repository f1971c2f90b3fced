"""``judge grade --judge-mode batch`` and ``judge resume`` end to end, over the real SDKs and the
loopback server's batch endpoints: the run waits (exit 5) with its batch ids journaled, resumes
round by round, and writes the outputs an online run of the same judges writes, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines.cli import EXIT_WAITING, app
from tests.pipelines.helpers import NEWS_CALL, WINNER_CALL, WINNER_TASK
from tests.servers import BatchPlan, MalformedArguments, Reply

runner = CliRunner()
OUTPUTS = ("results.jsonl", "summary.json", "report.md")
CALL, NEWS, TASK = WINNER_CALL, NEWS_CALL, WINNER_TASK
TRAJECTORIES = [
    {"task_id": "t", "trajectory_id": "exact", "steps": [CALL], "final_answer": "Usain Bolt"},
    {"task_id": "t", "trajectory_id": "paraphrase", "steps": [CALL], "final_answer": "Bolt, the Jamaican sprinter, won it."},
    {"task_id": "t", "trajectory_id": "wrong-args", "steps": [dict(CALL, arguments={"year": 2008})], "final_answer": "Usain Bolt"},
]
# an alternative path with a paraphrased answer: answer, then sufficiency, then grounding (three rounds)
ROUNDS = [{"task_id": "t", "trajectory_id": "news", "steps": [NEWS], "final_answer": "Bolt won it, said the news."}]
LABELS = {"AnswerCorrectnessVerdict": "correct", "TrajectorySufficiencyVerdict": "sufficient", "GroundednessVerdict": "supported"}
THREE = ["--judge", "openai:judge-a", "--judge", "anthropic:judge-b", "--judge", "openai:judge-c"]


def _write(tmp: Path, trajectories: list[dict], *, array: bool = False) -> tuple[Path, Path]:
    (tmp / "tasks.jsonl").write_text(json.dumps(TASK) + "\n")
    path = tmp / ("traj.json" if array else "traj.jsonl")
    path.write_text(json.dumps(trajectories, indent=1) if array else "".join(json.dumps(t) + "\n" for t in trajectories))
    return tmp / "tasks.jsonl", path


# what each passing verdict quotes (its evidence is checked against the material: judge.core._evidence)
QUOTES = {
    "AnswerCorrectnessVerdict": (("gold_answers", "Usain Bolt"),),
    "TrajectorySufficiencyVerdict": (("gold_answers", "Bolt"),),  # the gold's name, which the news call's result gives
    "GroundednessVerdict": (("tool_outputs", "Bolt wins gold"),),
}


def _by_rubric(body: dict) -> Reply:
    tool = (body.get("tools") or [{}])[0]
    name = (tool.get("function") or {}).get("name") or tool.get("name")
    return Reply(LABELS[name], quotes=QUOTES[name], candidate_answer="Bolt" if name != "TrajectorySufficiencyVerdict" else None)


def _grade(files, out: Path, *extra: str, code: int = 0):
    """``judge grade`` without control items unless asked (these tests count the calls; test_controls has them in batch mode)."""
    tasks, traj = files
    controls = [] if "--controls" in extra else ["--controls", "off"]
    res = runner.invoke(app, ["grade", "--tasks", str(tasks), "--trajectories", str(traj), "--out", str(out), "--workers", "1", *controls, *extra])
    assert res.exit_code == code, res.output
    return res


def _resume(out: Path, *extra: str, code: int = 0):
    res = runner.invoke(app, ["resume", str(out), "--workers", "1", *extra])
    assert res.exit_code == code, res.output
    return res


def _finish(out: Path, limit: int = 10) -> list[str]:
    """Resume until the run finishes; the output of each resume."""
    said = []
    for _ in range(limit):
        res = runner.invoke(app, ["resume", str(out), "--workers", "1"])
        said.append(res.output)
        if res.exit_code == 0:
            return said
        assert res.exit_code == EXIT_WAITING, res.output
    raise AssertionError("the run never finished")


def _said(res) -> str:
    return " ".join(res.output.split())


def _same_outputs(a: Path, b: Path) -> None:
    for name in OUTPUTS:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def _chat_calls(server) -> int:
    return server.calls(path="/v1/chat/completions") + server.calls(path="/v1/messages")


def _manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


def test_a_batch_run_waits_then_resume_writes_what_an_online_run_writes(server, tmp_path):
    server.set_default("judge-a", Reply("correct")).set_default("judge-b", Reply("correct")).set_default("judge-c", Reply("incorrect"))
    files = _write(tmp_path, TRAJECTORIES)
    _grade(files, tmp_path / "online", *THREE, "--cache", str(tmp_path / "online.sqlite3"))
    assert _chat_calls(server) == 3
    server.reset_log()

    out = tmp_path / "batch"
    res = _grade(files, out, *THREE, "--cache", str(tmp_path / "batch.sqlite3"), "--judge-mode", "batch", code=EXIT_WAITING)
    assert "waiting for batch" in _said(res) and f"judge resume {out}" in _said(res)
    assert _chat_calls(server) == 0 and len(server.batches.created) == 3
    assert not (out / "results.jsonl").exists() and not (out / "manifest.json").exists()
    state = json.loads((out / ".judge-run" / "state.json").read_text())
    assert state["phase"] == "waiting"
    journal = [json.loads(line) for line in (out / ".judge-run" / "decisions.jsonl").read_text().splitlines()]
    assert [b["id"] for e in journal for b in e["batches"]] == server.batches.created  # each journaled as it was created
    assert {e["questions"] for e in journal} == {1}
    for batch_id in server.batches.created:
        assert batch_id in res.output

    still = _resume(out, code=EXIT_WAITING)  # every batch answers "in progress" to its first poll
    assert "still running" in still.output and "in_progress" in still.output
    assert not (out / "results.jsonl").exists()
    _resume(out)
    assert _chat_calls(server) == 0
    _same_outputs(tmp_path / "online", out)
    assert not (out / ".judge-run").exists()
    manifest = _manifest(out)
    assert manifest["complete"] is True and manifest["judges"]["stats"]["mode"] == "batch"
    assert sorted(b["id"] for b in manifest["judges"]["batches"]) == sorted(server.batches.created)
    assert {b["round"] for b in manifest["judges"]["batches"]} == {1}
    assert len(manifest["resumed_at"]) == 1  # a resume that only polled (still running) changes nothing


PAIR = ["--judge", "openai:judge-a", "--judge", "anthropic:judge-b"]


def _three_rounds_online(server, tmp_path: Path, responder) -> tuple[Path, Path]:
    """Two judges answering by ``responder``, batches that end at their first poll, the ROUNDS
    trajectory graded online (into ``online``): the input files."""
    for model in ("judge-a", "judge-b"):
        server.set_responder(model, responder)
    server.batches.default_plan = BatchPlan(polls=0)
    files = _write(tmp_path, ROUNDS)
    _grade(files, tmp_path / "online", *PAIR, "--cache", str(tmp_path / "online.sqlite3"))
    return files


def test_each_escalation_round_goes_out_as_a_new_batch(server, tmp_path):
    files = _three_rounds_online(server, tmp_path, _by_rubric)
    online_calls = _chat_calls(server)
    assert online_calls == 6  # three rounds, two judges
    out = tmp_path / "batch"
    first = _grade(files, out, *PAIR, "--cache", str(tmp_path / "batch.sqlite3"), "--judge-mode", "batch", code=EXIT_WAITING)
    assert "escalation round 1" in first.output
    said = _finish(out)
    assert len(said) == 3 and "escalation round 2" in said[0] and "escalation round 3" in said[1]
    _same_outputs(tmp_path / "online", out)
    assert _chat_calls(server) == online_calls  # no live call in batch mode
    rounds = sorted((b["round"], b["api"]) for b in _manifest(out)["judges"]["batches"])
    assert rounds == [(1, "anthropic"), (1, "openai"), (2, "anthropic"), (2, "openai"), (3, "anthropic"), (3, "openai")]
    result = json.loads((out / "results.jsonl").read_text())
    assert (result["verdict"], result["decided_by"]) == ("pass", "judge:panel")


def test_a_tie_goes_to_the_tie_breaker_in_a_new_batch_of_the_same_round(server, tmp_path):
    server.set_default("judge-a", Reply("correct")).set_default("judge-b", Reply("incorrect")).set_default("judge-t", Reply("correct"))
    server.batches.default_plan = BatchPlan(polls=0)
    judges = ["--judge", "openai:judge-a", "--judge", "anthropic:judge-b", "--tie-breaker", "openai:judge-t"]
    files = _write(tmp_path, TRAJECTORIES)
    _grade(files, tmp_path / "online", *judges, "--cache", str(tmp_path / "online.sqlite3"))
    out = tmp_path / "batch"
    _grade(files, out, *judges, "--cache", str(tmp_path / "batch.sqlite3"), "--judge-mode", "batch", code=EXIT_WAITING)
    assert len(server.batches.created) == 2  # the panel's two judges; the tie-breaker only once there is a tie
    said = _finish(out)
    assert len(said) == 2 and "escalation round 1, submitted 1" in said[0] and "judge-t" in said[0]
    _same_outputs(tmp_path / "online", out)
    para = next(r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines()) if r["trajectory_id"] == "paraphrase")
    assert "tie broken by openai:judge-t" in para["turns"][0]["checks"][2]["decision"]["reason"]
    assert [b["round"] for b in _manifest(out)["judges"]["batches"]] == [1, 1, 1]


def test_rejected_batch_answers_are_reasked_in_new_batches_and_the_outputs_are_an_online_runs(server, tmp_path):
    """Every first answer fails the verdict schema; the answer to instructor's re-ask is right.
    Online, each question costs two calls; in batch mode each round's re-asks go out as a second
    batch of the round, and the outputs are the online run's (three rounds: six batch waits)."""

    def rejected_then_by_rubric(body: dict) -> object:
        return _by_rubric(body) if "Validation Error" in json.dumps(body.get("messages")) else MalformedArguments()

    files = _three_rounds_online(server, tmp_path, rejected_then_by_rubric)
    assert _chat_calls(server) == 12  # three rounds, two judges, each asked twice
    out = tmp_path / "batch"
    _grade(files, out, *PAIR, "--cache", str(tmp_path / "batch.sqlite3"), "--judge-mode", "batch", code=EXIT_WAITING)
    said = _finish(out)
    assert len(said) == 6 and all("escalation round" in s for s in said[:5])
    _same_outputs(tmp_path / "online", out)
    assert _chat_calls(server) == 12  # none in batch mode
    assert [b["round"] for b in _manifest(out)["judges"]["batches"]] == [1] * 4 + [2] * 4 + [3] * 4  # per round: questions, then re-asks
    result = json.loads((out / "results.jsonl").read_text())
    assert (result["verdict"], result["decided_by"]) == ("pass", "judge:panel")


def test_an_expired_batch_leaves_the_case_unresolved_never_failed(server, tmp_path):
    server.batches.plan(BatchPlan(polls=0, end="expired", answer=0))
    files = _write(tmp_path, TRAJECTORIES)
    out = tmp_path / "batch"
    _grade(files, out, "--judge", "openai:judge-a", "--judge-mode", "batch", code=EXIT_WAITING)
    _resume(out)
    rows = {r["trajectory_id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    para = rows["paraphrase"]
    assert (para["verdict"], para["decided_by"]) == ("unresolved", "unresolved")
    vote = para["turns"][0]["checks"][2]["decision"]["votes"][0]
    assert (vote["abstained"], vote["abstain_reason"]) == (True, "batch_expired") and vote.get("label") is None
    assert (rows["exact"]["verdict"], rows["wrong-args"]["verdict"]) == ("pass", "fail")  # decided deterministically, untouched
    assert json.loads((out / "summary.json").read_text())["counts"]["unresolved"] == 1


def test_a_finished_batch_run_makes_a_rerun_free(server, tmp_path):
    server.batches.default_plan = BatchPlan(polls=0)
    files = _write(tmp_path, TRAJECTORIES)
    cache = ["--cache", str(tmp_path / "c.sqlite3")]
    _grade(files, tmp_path / "first", *THREE, *cache, "--judge-mode", "batch", code=EXIT_WAITING)
    _resume(tmp_path / "first")
    server.reset_log()
    _grade(files, tmp_path / "again", *THREE, *cache, "--judge-mode", "batch")  # nothing to send: finishes at once
    _grade(files, tmp_path / "online", *THREE, *cache)
    assert server.requests == []
    again = json.loads((tmp_path / "again" / "results.jsonl").read_text().splitlines()[1])
    assert all(v["cached"] for v in again["turns"][0]["checks"][2]["decision"]["votes"])


def test_resume_wait_polls_until_the_batches_end(server, tmp_path):
    server.batches.default_plan = BatchPlan(polls=3)
    files = _write(tmp_path, TRAJECTORIES)
    out = tmp_path / "batch"
    _grade(files, out, "--judge", "anthropic:judge-b", "--judge-mode", "batch", code=EXIT_WAITING)
    res = _resume(out, "--wait", "--poll-interval", "0")
    assert res.output.count("in_progress") == 3
    assert (out / "manifest.json").exists()


def test_resume_cancel_keeps_what_was_answered(server, tmp_path):
    server.batches.default_plan = BatchPlan(polls=5)
    files = _write(tmp_path, TRAJECTORIES)
    out = tmp_path / "batch"
    _grade(files, out, "--judge", "openai:judge-a", "--judge-mode", "batch", code=EXIT_WAITING)
    res = _resume(out, "--cancel")
    assert "cancellation requested" in res.output
    para = next(r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines()) if r["trajectory_id"] == "paraphrase")
    assert para["verdict"] == "unresolved"
    assert para["turns"][0]["checks"][2]["decision"]["votes"][0]["abstain_reason"] == "batch_cancelled"


def test_a_refused_submission_exits_and_resume_sends_what_did_not_go_out(server, tmp_path):
    server.batches.refuse_next(400)
    server.batches.default_plan = BatchPlan(polls=0)
    files = _write(tmp_path, TRAJECTORIES)
    out = tmp_path / "batch"
    res = _grade(files, out, "--judge", "openai:judge-a", "--judge-mode", "batch", code=1)
    assert "scripted refusal" in _said(res) and f"judge resume {out}" in _said(res)
    assert (out / ".judge-run" / "state.json").exists() and server.batches.created == []
    _resume(out, code=EXIT_WAITING)
    assert len(server.batches.created) == 1
    _resume(out)
    assert (out / "manifest.json").exists()


def test_a_submission_refused_part_way_keeps_the_batches_that_went_out(server, tmp_path):
    server.set_default("judge-a", Reply("correct")).set_default("judge-b", Reply("correct")).set_default("judge-c", Reply("incorrect"))
    server.batches.default_plan = BatchPlan(polls=0)
    files = _write(tmp_path, TRAJECTORIES)
    _grade(files, tmp_path / "online", *THREE, "--cache", str(tmp_path / "online.sqlite3"))
    server.batches.refuse.extend([None, 400])  # anthropic's batch goes out, then openai:judge-a's is refused
    out = tmp_path / "batch"
    _grade(files, out, *THREE, "--cache", str(tmp_path / "batch.sqlite3"), "--judge-mode", "batch", code=1)
    journal = [json.loads(line) for line in (out / ".judge-run" / "decisions.jsonl").read_text().splitlines()]
    assert [b["api"] for e in journal for b in e["batches"]] == ["anthropic"]
    _resume(out, code=EXIT_WAITING)  # collects anthropic's answers, sends the two OpenAI batches
    assert server.batches.created == ["msgbatch_0001", "batch_0002", "batch_0003"]
    assert server.batches.answered["judge-b"] == 1  # never asked twice
    _resume(out)
    _same_outputs(tmp_path / "online", out)


def test_a_json_array_input_resumes_too(server, tmp_path):
    server.batches.default_plan = BatchPlan(polls=0)
    files = _write(tmp_path, TRAJECTORIES, array=True)
    _grade(files, tmp_path / "online", "--judge", "openai:judge-a", "--cache", str(tmp_path / "online.sqlite3"))
    out = tmp_path / "batch"
    _grade(files, out, "--judge", "openai:judge-a", "--judge-mode", "batch", code=EXIT_WAITING)
    _resume(out)
    _same_outputs(tmp_path / "online", out)


def test_a_changed_input_is_refused_on_resume(server, tmp_path):
    server.batches.default_plan = BatchPlan(polls=0)
    files = _write(tmp_path, TRAJECTORIES, array=True)
    out = tmp_path / "batch"
    _grade(files, out, "--judge", "openai:judge-a", "--judge-mode", "batch", code=EXIT_WAITING)
    files[1].write_text(files[1].read_text().replace("Jamaican", "fast"))
    res = _resume(out, code=2)
    assert "does not hold the bytes" in _said(res)


def test_resume_runs_in_the_directory_the_run_was_started_in(server, tmp_path, monkeypatch):
    server.batches.default_plan = BatchPlan(polls=0)
    _write(tmp_path, TRAJECTORIES)
    monkeypatch.chdir(tmp_path)
    relative = (Path("tasks.jsonl"), Path("traj.jsonl"))
    _grade(relative, Path("online"), "--judge", "openai:judge-a", "--cache", "online.sqlite3")
    _grade(relative, Path("batch"), "--judge", "openai:judge-a", "--cache", "batch.sqlite3", "--judge-mode", "batch", code=EXIT_WAITING)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    _resume(tmp_path / "batch")
    assert Path.cwd() == elsewhere
    _same_outputs(tmp_path / "online", tmp_path / "batch")  # rows name the inputs as they were given
    assert (tmp_path / "batch.sqlite3").exists() and not (elsewhere / "batch.sqlite3").exists()


def test_batch_costs_are_at_batch_prices(server, tmp_path):
    config = tmp_path / "judges.toml"
    config.write_text('[prices."openai:judge-a"]\ninput_per_1m = 2.0\noutput_per_1m = 8.0\n')
    server.batches.default_plan = BatchPlan(polls=0)
    files = _write(tmp_path, TRAJECTORIES)
    common = ["--judge", "openai:judge-a", "--config", str(config)]
    _grade(files, tmp_path / "online", *common, "--cache", str(tmp_path / "online.sqlite3"))
    _grade(files, tmp_path / "batch", *common, "--cache", str(tmp_path / "batch.sqlite3"), "--judge-mode", "batch", code=EXIT_WAITING)
    _resume(tmp_path / "batch")
    online, batch = (json.loads((tmp_path / d / "summary.json").read_text())["judges"] for d in ("online", "batch"))
    assert online["calls"] == batch["calls"] == 1
    assert batch["cost_usd"] == pytest.approx(online["cost_usd"] / 2) and online["cost_usd"] > 0
    prices = _manifest(tmp_path / "batch")["judges"]["stats"]["prices"]
    assert prices["openai:judge-a"] == {"input_per_1m": 1.0, "output_per_1m": 4.0, "batch_input_per_1m": None, "batch_output_per_1m": None}


def test_batch_mode_refuses_standard_input(tmp_path):
    tasks, _ = _write(tmp_path, TRAJECTORIES)
    res = runner.invoke(
        app, ["grade", "--tasks", str(tasks), "--trajectories", "-", "--out", str(tmp_path / "o"), "--judge", "openai:a", "--judge-mode", "batch"], input=""
    )
    assert res.exit_code == 2 and "standard input" in res.output


def test_resume_says_why_there_is_nothing_to_resume(server, tmp_path):
    files = _write(tmp_path, TRAJECTORIES)
    _grade(files, tmp_path / "done")
    res = _resume(tmp_path / "done", code=2)
    assert "holds a complete run" in _said(res)
    (tmp_path / "empty").mkdir()
    assert "holds no interrupted or waiting run" in _said(_resume(tmp_path / "empty", code=2))


def test_grade_resume_continues_a_waiting_run_too(server, tmp_path):
    server.batches.default_plan = BatchPlan(polls=0)
    files = _write(tmp_path, TRAJECTORIES)
    out = tmp_path / "batch"
    args = ["--judge", "openai:judge-a", "--judge-mode", "batch"]
    _grade(files, out, *args, code=EXIT_WAITING)
    changed = _grade(files, out, "--judge", "openai:judge-a", "--resume", code=2)  # online mode cannot collect the batches
    assert "judges" in _said(changed)
    _grade(files, out, *args, "--resume")
    assert (out / "manifest.json").exists()


def test_judge_resume_continues_an_interrupted_online_run_from_its_folder(server, tmp_path, monkeypatch):
    from pipelines.run import RunState

    for model in ("judge-a", "judge-b"):
        server.set_responder(model, _by_rubric)
    judges = ["--judge", "openai:judge-a", "--judge", "anthropic:judge-b"]
    files = _write(tmp_path, ROUNDS)
    _grade(files, tmp_path / "online", *judges, "--cache", str(tmp_path / "online.sqlite3"))
    server.reset_log()
    original = RunState.append_round

    def dying(self, entry):
        original(self, entry)
        raise KeyboardInterrupt  # killed right after the first round was journaled

    out = tmp_path / "run"
    with monkeypatch.context() as m:
        m.setattr(RunState, "append_round", dying)
        killed = runner.invoke(
            app, ["grade", "--tasks", str(files[0]), "--trajectories", str(files[1]), "--out", str(out), "--workers", "1", "--controls", "off", *judges]
        )
    assert killed.exit_code != 0 and _chat_calls(server) == 2
    _resume(out)
    assert _chat_calls(server) == 6  # the journaled round is never asked again
    _same_outputs(tmp_path / "online", out)


def test_a_run_is_worked_on_by_one_process_at_a_time(server, tmp_path):
    from pipelines.run import RunState

    server.batches.default_plan = BatchPlan(polls=0)
    files = _write(tmp_path, TRAJECTORIES)
    out = tmp_path / "batch"
    _grade(files, out, "--judge", "openai:judge-a", "--judge-mode", "batch", code=EXIT_WAITING)
    other = RunState(out / ".judge-run")
    other.hold()  # another process resuming this run right now
    try:
        res = _resume(out, code=2)
        assert "another process is working on this run" in _said(res) and server.batches.created == ["batch_0001"]
    finally:
        other.release()
    _resume(out)


def test_max_cost_caps_the_run_across_its_resumes(server, tmp_path):
    """--max-cost is the run's budget, not each resume's: a resume counts what the journaled rounds
    spent, so a three-round batch run capped between one and two rounds' cost launches two rounds,
    as an online run with the same cap does (each resume alone spends one round: under the cap)."""
    config = tmp_path / "judges.toml"
    config.write_text("".join(f'[prices."{j}"]\ninput_per_1m = 2.0\noutput_per_1m = 8.0\n' for j in ("openai:judge-a", "anthropic:judge-b")))
    for model in ("judge-a", "judge-b"):
        server.set_responder(model, _by_rubric)
    server.batches.default_plan = BatchPlan(polls=0)
    judges = ["--judge", "openai:judge-a", "--judge", "anthropic:judge-b", "--config", str(config)]
    files = _write(tmp_path, ROUNDS)
    _grade(files, tmp_path / "free", *judges, "--cache", str(tmp_path / "free.sqlite3"), "--judge-mode", "batch", code=EXIT_WAITING)
    _finish(tmp_path / "free")
    free = json.loads((tmp_path / "free" / "summary.json").read_text())["judges"]
    assert free["calls"] == 6
    per_round = free["cost_usd"] / 3  # the server answers every rubric with the same tokens

    out = tmp_path / "capped"
    cap = f"{1.5 * per_round:.8f}"
    _grade(files, out, *judges, "--cache", str(tmp_path / "capped.sqlite3"), "--judge-mode", "batch", "--max-cost", cap, code=EXIT_WAITING)
    _finish(out)
    capped = json.loads((out / "summary.json").read_text())["judges"]
    assert capped["calls"] == 4 and capped["cost_usd"] == pytest.approx(2 * per_round)
    row = json.loads((out / "results.jsonl").read_text())
    decisions = [c["decision"] for c in row["turns"][0]["checks"] if c.get("decision")]
    assert [d["rubric"] for d in decisions] == ["trajectory_sufficiency", "answer_correctness", "groundedness"]
    assert [v["abstain_reason"] for v in decisions[-1]["votes"]] == ["budget", "budget"]  # the third round was never sent
    assert row["verdict"] == "unresolved"

    online = tmp_path / "online"  # online prices are twice the batch prices: the same cap in rounds
    _grade(files, online, *judges, "--cache", str(tmp_path / "online.sqlite3"), "--max-cost", f"{3 * per_round:.8f}")
    online_row = json.loads((online / "results.jsonl").read_text())
    assert (online_row["verdict"], online_row["decided_by"]) == (row["verdict"], row["decided_by"])
    assert json.loads((online / "summary.json").read_text())["judges"]["calls"] == 4
