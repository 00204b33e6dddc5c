"""JsonlFile: the one reader/writer of lwm's JSONL rows (trajectories, samples, predictions, judgements)."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from lwm.data.jsonl import JsonlFile


class Row(BaseModel):
    id: str
    value: int | None = None


def test_the_last_row_of_an_id_wins_and_ids_resume(tmp_path):
    file = JsonlFile(tmp_path / "rows.jsonl", Row)
    for row in (Row(id="a", value=1), Row(id="b", value=2), Row(id="a", value=3)):
        file.append(row)
    file.close()
    assert {i: r.value for i, r in file.by_id().items()} == {"a": 3, "b": 2} and file.ids() == {"a", "b"}


def test_a_line_cut_by_a_kill_is_named_skipped_and_ended_before_the_next_append(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"id": "a", "value": 1}\n{"id": "b", "val')
    file = JsonlFile(path, Row)
    file.append(Row(id="c"))
    file.close()
    problems: list[str] = []
    assert [r.id for r in file.rows(problems)] == ["a", "c"]
    assert len(problems) == 1 and problems[0].startswith(f"{path}:2: skipped")


def test_bad_bytes_and_wrong_rows_are_named_not_raised(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"id": "a"}\n\xff\xfe garbage\n{"value": 1}\n\n{"id": "d"}\n')
    problems: list[str] = []
    assert [r.id for r in JsonlFile(path, Row).rows(problems)] == ["a", "d"]
    assert [p.split(": skipped")[0] for p in problems] == [f"{path}:2", f"{path}:3"]


def test_deep_nesting_and_huge_lines_are_named_once_with_where_and_why(tmp_path, caplog):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"[" * 100_000 + b"\n" + b'{"id": "' + b"x" * 100_000 + b'"}\n{"value": 1}\n')
    problems: list[str] = []
    assert [len(r.id) for r in JsonlFile(path, Row).rows(problems)] == [100_000]
    assert problems[0].startswith(f"{path}:1: skipped: Invalid JSON: recursion limit exceeded")
    assert problems[1:] == [f"{path}:3: skipped: id: Field required"]
    assert not caplog.records  # said once, by the caller that collects problems, not logged as well


def test_exclude_none_leaves_absent_fields_out_and_write_all_replaces(tmp_path):
    file = JsonlFile(tmp_path / "rows.jsonl", Row, exclude_none=True)
    assert file.write_all([Row(id="x"), Row(id="y", value=0)]) == 2
    assert file.path.read_text() == '{"id":"x"}\n{"id":"y","value":0}\n'
    assert list(JsonlFile(tmp_path / "missing.jsonl", Row)) == []


def test_appends_from_many_threads_keep_every_row_whole(tmp_path):
    """Episodes of a batch finish in parallel threads; the first appends raced to open the file (EBADF)."""
    from concurrent.futures import ThreadPoolExecutor

    for attempt in range(5):
        file = JsonlFile(tmp_path / f"rows{attempt}.jsonl", Row, sync=True)
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(file.append, [Row(id=str(k), value=k) for k in range(64)]))
        file.close()
        problems: list[str] = []
        assert {r.id for r in file.rows(problems)} == {str(k) for k in range(64)} and not problems
        assert len((tmp_path / f"rows{attempt}.jsonl").read_text().splitlines()) == 64


HOSTILE = [b"\xff\xfe\x80 not utf-8", b"[" * 100_000, b'{"id": ' + b"[" * 100_000, b"x" * 100_000,
           b'{"id": "z", "value": "NaN"}', b"\x00\x00", b'{"id": "\xed\xa0\x80"}']


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(junk=st.lists(st.one_of(st.binary(max_size=200), st.sampled_from(HOSTILE)), max_size=6))
def test_readers_never_crash_and_keep_every_good_row_whatever_the_bytes_between(tmp_path, junk):
    """Fuzzing the one reader every lwm file goes through: trajectories, samples, predictions, judgements."""
    path = tmp_path / "fuzz.jsonl"
    lines = [b'{"id": "first", "value": 1}', *junk, b'{"id": "last", "value": 2}']
    path.write_bytes(b"\n".join(line.replace(b"\n", b" ") for line in lines) + b"\n")
    problems: list[str] = []
    rows = JsonlFile(path, Row).by_id(problems)
    assert rows["first"].value == 1 and rows["last"].value == 2
    assert all(p.startswith(f"{path}:") and ": skipped: " in p and len(p) < 400 for p in problems)
    shown = [line.replace(b"\n", b" ").decode("utf-8", errors="replace").strip() for line in junk]
    bad = sum(1 for line in shown if line and not line.startswith('{"id"'))
    assert len(problems) >= bad


def test_reorder_puts_rows_in_the_given_order_with_or_without_the_lines_just_written(tmp_path):
    """Rows finish out of order under concurrency; ``reorder`` puts them in data order. With the lines a run wrote
    (``only``: the file held nothing else) it writes them without reading the file; otherwise older rows, a
    rerun's newer row of an id and keys not listed are kept as ``by_id`` reads them."""
    fresh = JsonlFile(tmp_path / "fresh.jsonl", Row)
    written = {r.id: fresh.append(r) for r in (Row(id="c", value=3), Row(id="a", value=1), Row(id="b", value=2))}
    fresh.close()
    fresh.reorder(["a", "b", "c"], written, only=True)
    assert [r.id for r in fresh] == ["a", "b", "c"]

    resumed = JsonlFile(tmp_path / "resumed.jsonl", Row)
    for row in (Row(id="z", value=0), Row(id="b", value=1)):
        resumed.append(row)
    resumed.close()
    with resumed.path.open("a") as handle:
        handle.write('{"id": "cut-by-a-ki')  # a line a kill cut short
    written = {r.id: resumed.append(r) for r in (Row(id="b", value=2), Row(id="a", value=1))}
    resumed.close()
    resumed.reorder(["a", "b"], written)
    assert [(r.id, r.value) for r in resumed] == [("a", 1), ("b", 2), ("z", 0)]
