"""Compressed inputs (gzip, bzip2, xz, Zstandard) are graded as the text they hold.

Recognised by their first bytes, inflated into the run's spool with a cap; a corrupt, truncated or
runaway stream is refused naming the file. Inputs: the first trajectories of the bundled sample."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import json
import lzma
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard
from typer.testing import CliRunner

from pipelines.cli import EXIT_INPUT_ERROR, app
from pipelines.ingest import Limits, UnreadableInput, compression_of, inflate
from pipelines.run import GradeOptions, run_grading

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"
COMPRESS: dict[str, tuple[str, Callable[[bytes], bytes]]] = {
    "gzip": (".gz", gzip.compress),
    "bzip2": (".bz2", bz2.compress),
    "xz": (".xz", lzma.compress),
    "zstd": (".zst", zstandard.ZstdCompressor().compress),
}
runner = CliRunner()


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> tuple[Path, Path, Path]:
    """(tasks, trajectories, out): 40 sample trajectories graded uncompressed."""
    folder = tmp_path_factory.mktemp("plain")
    tasks, trajectories = folder / "tasks.jsonl", folder / "trajectories.jsonl"
    tasks.write_bytes((SAMPLE / "tasks.jsonl").read_bytes())
    trajectories.write_bytes(b"".join((SAMPLE / "trajectories.jsonl").read_bytes().splitlines(keepends=True)[:40]))
    run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=folder / "out"))
    return tasks, trajectories, folder / "out"


def _results(out: Path, given: Path, plain_name: Path) -> str:
    """results.jsonl with the compressed input's name put back to the plain one."""
    return (out / "results.jsonl").read_text().replace(json.dumps(str(given))[1:-1], json.dumps(str(plain_name))[1:-1])


@pytest.mark.parametrize("compression", sorted(COMPRESS))
def test_a_compressed_input_grades_as_its_text(plain, tmp_path, compression):
    tasks, trajectories, reference = plain
    suffix, compress = COMPRESS[compression]
    packed_tasks, packed = tmp_path / ("tasks.jsonl" + suffix), tmp_path / ("trajectories.jsonl" + suffix)
    packed_tasks.write_bytes(compress(tasks.read_bytes()))
    packed.write_bytes(compress(trajectories.read_bytes()))
    assert compression_of(packed.read_bytes()[:6]) == compression
    run_grading(GradeOptions(tasks=packed_tasks, trajectories=packed, out=tmp_path / "out"))
    assert _results(tmp_path / "out", packed, trajectories) == (reference / "results.jsonl").read_text()
    assert (tmp_path / "out" / "summary.json").read_bytes() == (reference / "summary.json").read_bytes()
    inputs = json.loads((tmp_path / "out" / "manifest.json").read_text())["inputs"]
    digests = {i["role"]: i["sha256"] for i in inputs}
    # the manifest names the file as given and hashes the text graded: the same as the plain run's
    assert digests["trajectories"] == hashlib.sha256(trajectories.read_bytes()).hexdigest()
    assert digests["tasks"] == hashlib.sha256(tasks.read_bytes()).hexdigest()
    assert {i["path"] for i in inputs} >= {str(packed), str(packed_tasks)}


def test_compression_is_recognised_by_content_not_name(plain, tmp_path):
    tasks, trajectories, reference = plain
    named_plain = tmp_path / "trajectories.jsonl.gz"  # plain text under a .gz name
    named_plain.write_bytes(trajectories.read_bytes())
    run_grading(GradeOptions(tasks=tasks, trajectories=named_plain, out=tmp_path / "a"))
    assert _results(tmp_path / "a", named_plain, trajectories) == (reference / "results.jsonl").read_text()
    unnamed = tmp_path / "trajectories.jsonl"  # gzip under a plain name
    unnamed.write_bytes(gzip.compress(trajectories.read_bytes()))
    run_grading(GradeOptions(tasks=tasks, trajectories=unnamed, out=tmp_path / "b"))
    assert _results(tmp_path / "b", unnamed, trajectories) == (reference / "results.jsonl").read_text()


def test_compressed_standard_input_and_workers(plain, tmp_path):
    tasks, trajectories, reference = plain
    packed = gzip.compress(trajectories.read_bytes())
    res = runner.invoke(app, ["grade", "--tasks", str(tasks), "--trajectories", "-", "--out", str(tmp_path / "stdin")], input=packed)
    assert res.exit_code in (0, 1), res.output
    assert (tmp_path / "stdin" / "summary.json").read_bytes() == (reference / "summary.json").read_bytes()
    rows = [json.loads(line) for line in (tmp_path / "stdin" / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 40 and {r["source"]["file"] for r in rows} == {"-"}
    file = tmp_path / "t.jsonl.gz"
    file.write_bytes(packed)
    run_grading(GradeOptions(tasks=tasks, trajectories=file, out=tmp_path / "w2", workers=2, shard_lines=7))
    assert _results(tmp_path / "w2", file, trajectories) == (reference / "results.jsonl").read_text()


def test_a_runaway_stream_is_refused_at_the_cap(plain, tmp_path):
    tasks = plain[0]
    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(gzip.compress(b"\n" * 5_000_000))  # ~5 KB that inflates to 5 MB
    with pytest.raises(UnreadableInput, match=r"bomb\.jsonl\.gz: its gzip stream inflates to more than 1,000,000 bytes"):
        run_grading(GradeOptions(tasks=tasks, trajectories=bomb, out=tmp_path / "out", limits=Limits(max_inflated_bytes=1_000_000)))
    assert not list(tmp_path.glob("out/results.jsonl"))


@pytest.mark.parametrize(
    ("damage", "says"),
    [(lambda data: data[: len(data) // 2], "ends before its end marker"), (lambda data: data[:10] + b"\x00" * 50 + data[60:], "is not readable")],
    ids=["truncated", "corrupt"],
)
def test_a_broken_stream_names_the_file(plain, tmp_path, damage, says):
    tasks, trajectories, _ = plain
    broken = tmp_path / "runs.jsonl.gz"
    broken.write_bytes(damage(gzip.compress(trajectories.read_bytes())))
    res = runner.invoke(app, ["grade", "--tasks", str(tasks), "--trajectories", str(broken), "--out", str(tmp_path / "out")])
    assert res.exit_code == EXIT_INPUT_ERROR, res.output
    assert f"{broken}: its gzip stream {says}" in " ".join(res.output.split())


@pytest.mark.parametrize("compression", sorted(COMPRESS))
def test_every_compression_refuses_a_cut_stream(compression):
    """A stream cut anywhere short of its end marker is refused, never read as a shorter text
    (Zstandard's own stream reader ends quietly at a cut frame)."""
    text = (SAMPLE / "trajectories.jsonl").read_bytes()[:300_000]
    packed = COMPRESS[compression][1](text)
    out = io.BytesIO()
    assert inflate(io.BytesIO(packed), b"", compression, out, 1 << 30, "whole") == len(text) and out.getvalue() == text
    for cut in (len(packed) // 3, len(packed) - 1):
        with pytest.raises(UnreadableInput, match=f"cut: its {compression} stream ends before its end marker"):
            inflate(io.BytesIO(packed[:cut]), b"", compression, io.BytesIO(), 1 << 30, "cut")
    two = packed + COMPRESS[compression][1](b"more\n")  # concatenated streams / frames: all of them
    out = io.BytesIO()
    inflate(io.BytesIO(two[6:]), two[:6], compression, out, 1 << 30, "two")
    assert out.getvalue() == text + b"more\n"


def _partial(compression: str, packed: bytes) -> bytes:
    """What the library's incremental decompressor makes of a cut stream: all that can inflate."""
    if compression == "zstd":
        return zstandard.ZstdDecompressor().decompressobj().decompress(packed)
    decoder = {"gzip": lambda: zlib.decompressobj(31), "bzip2": bz2.BZ2Decompressor, "xz": lzma.LZMADecompressor}[compression]()
    return decoder.decompress(packed)


@pytest.mark.parametrize(("compression", "keep"), [("gzip", 0.5), ("xz", 0.5), ("bzip2", 0.8)])  # zstd's reader always counted each step
def test_a_cut_stream_says_how_much_inflated(compression, keep, tmp_path):
    """The bundled 666-line sample cut short (gzip: in half, 315 whole lines inflate; bzip2 past its
    first 900 kB block), and the refusal says how much inflated (it said "after 0 inflated bytes":
    only whole 1 MiB reads were counted). As documented, nothing of it is graded (exit 3, no results)."""
    text = (SAMPLE / "trajectories.jsonl").read_bytes()
    packed = COMPRESS[compression][1](text)
    cut = packed[: int(len(packed) * keep)]
    readable = _partial(compression, cut)
    assert readable and text.startswith(readable)
    out = io.BytesIO()
    with pytest.raises(
        UnreadableInput, match=f"cut: its {compression} stream ends before its end marker \\(truncated\\?\\) after {len(readable):,} inflated bytes"
    ):
        inflate(io.BytesIO(cut), b"", compression, out, 1 << 30, "cut")
    assert out.getvalue() == readable
    if compression == "gzip":
        assert readable.count(b"\n") == 315
        broken = tmp_path / "runs.jsonl.gz"
        broken.write_bytes(cut)
        res = runner.invoke(app, ["grade", "--tasks", str(SAMPLE / "tasks.jsonl"), "--trajectories", str(broken), "--out", str(tmp_path / "out")])
        assert res.exit_code == EXIT_INPUT_ERROR and f"after {len(readable):,} inflated bytes" in " ".join(res.output.split())
        assert not (tmp_path / "out" / "results.jsonl").exists()


def test_compressed_labels_keep_their_default_source(plain, tmp_path):
    tasks, trajectories, _ = plain
    first = json.loads(trajectories.read_text().splitlines()[0])
    labels = tmp_path / "human.jsonl"
    labels.write_text(json.dumps({"trajectory_id": first["trajectory_id"], "label": "pass"}) + "\n")
    packed = tmp_path / "human.jsonl.xz"
    packed.write_bytes(lzma.compress(labels.read_bytes()))
    for given, out in ((labels, "plain"), (packed, "packed")):
        run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, labels=given, out=tmp_path / out))
    assert (tmp_path / "packed" / "results.jsonl").read_bytes() == (tmp_path / "plain" / "results.jsonl").read_bytes()
    assert b"labels:human" in (tmp_path / "plain" / "results.jsonl").read_bytes()
