"""WideSearch item-level F1 of an answer table (lwm.rollout.table)."""

import pytest

from lwm.rollout.table import item_f1, normalize, parse_table

GOLD = [{"Call": "read", "Summary": "read from a file descriptor"},
        {"Call": "dup", "Summary": "duplicate a file descriptor"}]
COLUMNS, TEXT = ["Call", "Summary"], ["Summary"]


def test_an_exact_table_scores_one_whatever_its_markdown_dress():
    answer = "Here it is:\n\n| **call** | summary |\n|:--|--:|\n| `read` | Read from a file descriptor. |\n" \
             "| dup | duplicate a file descriptor |\n"
    assert item_f1(answer, GOLD, COLUMNS, TEXT) == 1.0


def test_items_are_cells_of_rows_matched_by_key():
    half = "| Call | Summary |\n|---|---|\n| read | read from a file descriptor |\n"
    assert item_f1(half, GOLD, COLUMNS, TEXT) == pytest.approx(2 * 1.0 * 0.5 / 1.5)  # precision 1, recall 2/4
    wrong = "| Call | Summary |\n|---|---|\n| read | write to a socket |\n| open | open a file |\n"
    assert item_f1(wrong, GOLD, COLUMNS, TEXT) == pytest.approx(2 * (1 / 4) * (1 / 4) / (1 / 2))


def test_free_text_cells_tolerate_small_wording_changes_only():
    close = "| Call | Summary |\n|---|---|\n| read | read from file descriptor |\n| dup | make a copy |\n"
    assert item_f1(close, GOLD, COLUMNS, TEXT) == pytest.approx(0.75)  # read's summary F1 >= 0.8; dup's is not


def test_no_table_or_a_json_one():
    assert item_f1("I could not find it.", GOLD, COLUMNS, TEXT) == 0.0
    assert item_f1('[{"Call": "read", "Summary": "read from a file descriptor"}, '
                   '{"call": "dup", "summary": "duplicate a file descriptor"}]', GOLD, COLUMNS, TEXT) == 1.0
    assert parse_table("| a |") == [] and normalize('  "Core." ') == "core"
