"""Rubric files: the built-ins exported and read back unchanged (same version, same prompts), a
user's rubric overriding or adding by name, and every unsafe or broken template rejected with the
file and the line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import rubrics
from rubrics import RubricExample, RubricFileError, read_rubric_file, read_rubric_folder, rubric_set, sample_material, write_rubric_files

ANSWER_BLOCK = '{{ data("answer", answer) }}'


@pytest.fixture
def exported(tmp_path: Path) -> Path:
    folder = tmp_path / "builtin"
    write_rubric_files(rubrics.RUBRICS, folder)
    return folder


def _variant(exported: Path, tmp_path: Path, name: str, edit) -> Path:
    """A folder holding only answer_correctness.j2 (edited) and the shared partial."""
    folder = tmp_path / name
    folder.mkdir()
    shutil.copy(exported / "_data_rules.j2", folder)
    text = (exported / "answer_correctness.j2").read_text(encoding="utf-8")
    (folder / "answer_correctness.j2").write_text(edit(text), encoding="utf-8")
    return folder


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if needle in line)


def test_exported_builtins_read_back_identical(exported: Path):
    assert sorted(p.name for p in exported.iterdir()) == ["_data_rules.j2"] + [f"{n}.j2" for n in sorted(rubrics.RUBRICS)]
    table = read_rubric_folder(exported)
    assert sorted(table) == sorted(rubrics.RUBRICS)
    for name, rubric in table.items():
        builtin = rubrics.RUBRICS[name]
        assert rubric.version == builtin.version
        assert rubric.verdict_schema.model_json_schema() == builtin.verdict_schema.model_json_schema()
        assert rubric.labels == builtin.labels and dict(rubric.label_scores) == dict(builtin.label_scores)
        material = sample_material(builtin.check, "A")
        assert rubric.render(material) == builtin.render(material)
        assert rubric.source_path == exported / f"{name}.j2"
    # writing again over identical files is a no-op; over an edited file it refuses
    write_rubric_files(rubrics.RUBRICS, exported)
    (exported / "groundedness.j2").write_text((exported / "groundedness.j2").read_text() + "\n{# edited #}\n")
    with pytest.raises(FileExistsError, match=r"groundedness\.j2"):
        write_rubric_files(rubrics.RUBRICS, exported)


def test_override_by_name_changes_version_and_prompt(exported: Path, tmp_path: Path):
    strict = _variant(exported, tmp_path, "strict", lambda t: t.replace("Rules:", "Rules:\n- Units must be stated explicitly.", 1))
    table = rubric_set(strict)
    assert sorted(table) == sorted(rubrics.RUBRICS)
    custom, builtin = table["answer_correctness"], rubrics.RUBRICS["answer_correctness"]
    assert custom.version != builtin.version and table["groundedness"] is rubrics.RUBRICS["groundedness"]
    system, _ = custom.render(sample_material("answer", "A"))
    assert "Units must be stated explicitly." in system["content"]
    # the shared partial is looked up in the folder first: editing it is a new version too
    (strict / "_data_rules.j2").write_text((strict / "_data_rules.j2").read_text() + "\nBe brief.\n")
    assert read_rubric_folder(strict)["answer_correctness"].version != custom.version


def test_a_new_name_adds_a_rubric_with_a_sidecar_header(tmp_path: Path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "tone.j2").write_text(
        '{% block system %}Judge the tone of the answer. Labels: {{ labels | join(", ") }}.{% endblock %}\n'
        '{% block user %}{{ data("question", question) }}\n{{ data("gold_answers", gold_answers) }}\n{{ data("answer", answer) }}{% endblock %}\n'
    )
    (folder / "tone.toml").write_text(
        'name = "tone"\ncheck = "answer"\n[labels.polite]\nscore = 1\noutcome = "match"\n[labels.rude]\nscore = 0\noutcome = "mismatch"\n'
    )
    table = rubric_set(folder)
    assert set(table) == {*rubrics.RUBRICS, "tone"}
    tone = table["tone"]
    assert tone.labels == ["polite", "rude"] and tone.positive_label == "polite"
    assert tone.verdict_schema.__name__ == "ToneVerdict"
    system, user = tone.render({"question": "q", "gold_answers": ["a"], "answer": "hello"})
    assert system["content"] == "Judge the tone of the answer. Labels: polite, rude." and '<data name="answer">"hello"</data>' in user["content"]
    (folder / "tone.j2").write_text("+++\nname = 'tone'\n+++\n" + (folder / "tone.j2").read_text())
    with pytest.raises(RubricFileError, match="header is given twice"):
        read_rubric_folder(folder)


def test_examples_in_the_header_reproduce_the_in_memory_version(tmp_path: Path):
    base = rubrics.RUBRICS["answer_correctness"]
    tuned = base.with_examples([RubricExample(label="incorrect", material={"question": "q <x>", "gold_answers": ["4"], "answer": None}, item_id="g7")])
    assert tuned.version != base.version
    [path] = [p for p in write_rubric_files({"answer_correctness": tuned}, tmp_path / "tuned") if p.name == "answer_correctness.j2"]
    back = read_rubric_file(path)
    assert back.version == tuned.version and back.examples[0].item_id == "g7"
    material = sample_material("answer", "B")
    assert back.render(material) == tuned.render(material)
    assert 'Example 1: <data name="example_material">' in back.render(material)[0]["content"]


REJECTED = {
    "raw output": (
        lambda t: t.replace(ANSWER_BLOCK, "Answer: {{ answer }}"),
        "Answer: {{ answer }}",
        "'answer' is case content and is output outside a data block",
    ),
    "a slice": (lambda t: t.replace(ANSWER_BLOCK, ANSWER_BLOCK + " starts {{ answer[:3] }}"), "starts {{", "outside a data block"),
    "a loop variable": (
        lambda t: t.replace(ANSWER_BLOCK, ANSWER_BLOCK + "\n{% for g in gold_answers %}- {{ g | upper }}{% endfor %}"),
        "{% for g in",
        "'g' is case content",
    ),
    "a set variable": (lambda t: t.replace(ANSWER_BLOCK, ANSWER_BLOCK + "\n{% set a = answer %}{{ a }}"), "{% set a", "'a' is case content"),
    "a macro": (
        lambda t: t.replace(ANSWER_BLOCK, ANSWER_BLOCK + "\n{% macro show(x) %}{{ x }}{% endmacro %}{{ show(answer) }}"),
        "{{ show(",
        "outside a data block",
    ),
    "material in the system block": (
        lambda t: t.replace("Task: decide", '{{ data("q", question) }} Task: decide'),
        "Task: decide",
        "system message must not depend",
    ),
    "an undefined name": (
        lambda t: t.replace(ANSWER_BLOCK, '{{ data("answer", final_answer) }}'),
        "final_answer",
        "cannot render the material of check 'answer'",
    ),
    "a syntax error": (lambda t: t.replace(ANSWER_BLOCK, '{{ data("answer", answer }}'), 'data("answer", answer }}', "template syntax error"),
    "a header type error": (lambda t: t.replace('outcome = "match"', 'outcome = "yes"', 1), 'outcome = "yes"', "labels.correct.outcome"),
    "invalid TOML": (lambda t: t.replace('outcome = "match"', "outcome = match", 1), "outcome = match", "not valid TOML"),
    "a check the built-in does not serve": (lambda t: t.replace('check = "answer"', 'check = "calls"'), 'check = "calls"', "serves check 'answer'"),
}


@pytest.mark.parametrize("case", sorted(REJECTED))
def test_unsafe_or_broken_templates_are_rejected_with_file_and_line(exported: Path, tmp_path: Path, case: str):
    edit, needle, message = REJECTED[case]
    folder = _variant(exported, tmp_path, "bad", edit)
    path = folder / "answer_correctness.j2"
    with pytest.raises(RubricFileError) as err:
        rubric_set(folder)
    assert message in str(err.value)
    assert err.value.path == str(path.resolve()) or err.value.path == str(path)
    assert err.value.line == _line_of(path, needle), str(err.value)
    assert str(err.value).startswith(f"{err.value.path}:{err.value.line}: ")


def test_a_template_that_never_shows_a_material_key_is_rejected(exported: Path, tmp_path: Path):
    folder = _variant(exported, tmp_path, "blind", lambda t: t.replace(ANSWER_BLOCK, ""))
    with pytest.raises(RubricFileError, match=r"never shows material \['answer'\]"):
        rubric_set(folder)


def test_folder_level_errors(tmp_path: Path, exported: Path):
    with pytest.raises(RubricFileError, match="not found"):
        rubric_set(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RubricFileError, match="no rubric files"):
        rubric_set(tmp_path / "empty")
    twice = _variant(exported, tmp_path, "twice", lambda t: t)
    shutil.copy(twice / "answer_correctness.j2", twice / "copy.j2")
    with pytest.raises(RubricFileError, match=r"already defined by answer_correctness\.j2"):
        rubric_set(twice)
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "x.j2").write_text("{% block system %}{% endblock %}{% block user %}{% endblock %}")
    with pytest.raises(RubricFileError, match=r"x\.j2:1: no header"):
        rubric_set(bare)


def test_grade_with_a_rubric_folder_records_its_versions(exported: Path, tmp_path: Path):
    """`judge grade --rubrics DIR`: the panel uses the folder's rubric, every decision and the
    manifest record its version and file; a bad folder stops the run before grading (exit 4)."""
    import json

    from typer.testing import CliRunner

    from pipelines.cli import app

    sample = Path(__file__).resolve().parents[2] / "data" / "sample"
    strict = _variant(exported, tmp_path, "strict", lambda t: t.replace("Rules:", "Rules:\n- Units must be stated explicitly.", 1))
    custom = read_rubric_folder(strict)["answer_correctness"]
    out = tmp_path / "run"
    args = ["grade", "--tasks", str(sample / "tasks.jsonl"), "--trajectories", str(sample / "trajectories.jsonl"), "--no-replay"]
    res = CliRunner().invoke(app, [*args, "--judge", "mock:pick", "--no-cache", "--rubrics", str(strict), "--out", str(out)])
    assert res.exit_code == 0, res.output
    judges = json.loads((out / "manifest.json").read_text())["judges"]
    assert judges["rubrics"]["answer_correctness"] == custom.version != rubrics.RUBRICS["answer_correctness"].version
    assert judges["rubric_sources"]["answer_correctness"] == str(strict.resolve() / "answer_correctness.j2")
    assert judges["rubric_sources"]["groundedness"] == "builtin"
    decisions = [
        c["decision"]
        for line in (out / "results.jsonl").read_text().splitlines()
        for t in json.loads(line).get("turns", [])
        for c in t["checks"]
        if c.get("decision") and c["decision"]["rubric"] == "answer_correctness"
    ]
    assert decisions and {d["rubric_version"] for d in decisions} == {custom.version}
    broken = _variant(exported, tmp_path, "broken", lambda t: t.replace(ANSWER_BLOCK, "{{ answer }}"))
    res = CliRunner().invoke(app, [*args, "--judge", "mock:pick", "--rubrics", str(broken), "--out", str(tmp_path / "no")])
    assert res.exit_code == 4 and "answer_correctness.j2:" in res.output.replace("\n", "")
    assert not (tmp_path / "no").exists()


def _secret(tmp_path: Path, text: str = "SECRET-KEY-4242 must never reach a judge") -> Path:
    outside = tmp_path / "elsewhere"
    outside.mkdir(exist_ok=True)
    secret = outside / "secret.j2"
    secret.write_text(text, encoding="utf-8")
    return secret


def test_a_partial_that_links_out_of_the_folder_is_refused_naming_it(exported: Path, tmp_path: Path):
    """Hostile sweep 5: a partial that is a symbolic link to a file outside the rubric folder was
    accepted and its text went out in every judge request. It is refused, naming the link."""
    folder = _variant(exported, tmp_path, "linked", lambda t: t)
    (folder / "_data_rules.j2").unlink()
    (folder / "_data_rules.j2").symlink_to(_secret(tmp_path))
    with pytest.raises(RubricFileError) as err:
        rubric_set(folder)
    assert err.value.path == str(folder / "_data_rules.j2")
    assert "outside the rubric folder" in str(err.value) and "SECRET" not in str(err.value)
    # the same through `judge rubrics check`: exit 4, the file named, nothing of its text printed
    from typer.testing import CliRunner

    from pipelines.cli import app

    res = CliRunner().invoke(app, ["rubrics", "check", str(folder)])
    flat = "".join(res.output.split())  # rich wraps long lines anywhere
    assert res.exit_code == 4 and f"{folder}/_data_rules.j2:alinkto" in flat and "outsidetherubricfolder" in flat and "SECRET" not in res.output


def test_a_partial_unused_by_any_rubric_that_links_out_is_refused_too(exported: Path, tmp_path: Path):
    folder = _variant(exported, tmp_path, "spare", lambda t: t)
    (folder / "_spare.j2").symlink_to(_secret(tmp_path))
    with pytest.raises(RubricFileError, match="outside the rubric folder") as err:
        read_rubric_folder(folder)
    assert err.value.path == str(folder / "_spare.j2")


def test_a_template_or_header_that_links_out_is_refused(exported: Path, tmp_path: Path):
    folder = tmp_path / "template"
    folder.mkdir()
    shutil.copy(exported / "_data_rules.j2", folder)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    shutil.copy(exported / "answer_correctness.j2", outside / "answer_correctness.j2")
    (folder / "answer_correctness.j2").symlink_to(outside / "answer_correctness.j2")
    with pytest.raises(RubricFileError, match="outside the rubric folder") as err:
        read_rubric_folder(folder)
    assert err.value.path == str(folder / "answer_correctness.j2")
    with pytest.raises(RubricFileError, match="outside the rubric folder"):  # read as one file, too
        read_rubric_file(folder / "answer_correctness.j2")
    # a sidecar header (its label descriptions reach the verdict schema) linked out of the folder
    mine = tmp_path / "sidecar"
    mine.mkdir()
    (mine / "tone.j2").write_text('{% block system %}Tone.{% endblock %}\n{% block user %}{{ data("answer", answer) }}{% endblock %}\n')
    (outside / "tone.toml").write_text(
        'name = "tone"\ncheck = "answer"\n[labels.a]\nscore = 1\noutcome = "match"\n[labels.b]\nscore = 0\noutcome = "mismatch"\n'
    )
    (mine / "tone.toml").symlink_to(outside / "tone.toml")
    with pytest.raises(RubricFileError, match="outside the rubric folder") as err:
        read_rubric_file(mine / "tone.j2")
    assert err.value.path == str(mine / "tone.toml")


def test_an_include_through_a_linked_subfolder_is_refused(exported: Path, tmp_path: Path):
    secret = _secret(tmp_path)
    folder = _variant(exported, tmp_path, "subfolder", lambda t: t.replace(ANSWER_BLOCK, ANSWER_BLOCK + '\n{% include "more/secret.j2" %}'))
    (folder / "more").symlink_to(secret.parent, target_is_directory=True)
    with pytest.raises(RubricFileError, match="outside the rubric folder") as err:
        rubric_set(folder)
    assert err.value.path == str(folder / "more" / "secret.j2")


def test_links_that_stay_inside_the_folder_are_accepted(exported: Path, tmp_path: Path):
    """Not over-refusing: a link to a file of the same folder (or the folder itself given as a
    link) is the folder's own text."""
    folder = _variant(exported, tmp_path, "inside", lambda t: t)
    (folder / "shared").mkdir()
    (folder / "_data_rules.j2").rename(folder / "shared" / "_data_rules.j2")
    (folder / "_data_rules.j2").symlink_to(folder / "shared" / "_data_rules.j2")
    alias = tmp_path / "alias"
    alias.symlink_to(folder, target_is_directory=True)
    for given in (folder, alias):
        table = rubric_set(given)
        assert table["answer_correctness"].version == rubrics.RUBRICS["answer_correctness"].version
