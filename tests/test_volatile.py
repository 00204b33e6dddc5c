"""Volatile values masked before two observations are compared (lwm.volatile): the rule judge and the guard."""

from lwm.volatile import mask


def test_times_ids_hashes_and_long_numbers_become_placeholders():
    assert mask("pid 12345 at 2026-12-03T08:51:19Z id 3f2a9c1b") == "pid <num> at <datetime> id <hex>"
    assert mask("Dec 5 06:41 a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11") == "<cal> <time> <uuid>"
    assert mask("exit 1, 3 files, port 80") == "exit 1, 3 files, port 80"  # short numbers say something


def test_words_that_look_like_hex_are_kept():
    assert mask("deadbeef acceded") == "deadbeef acceded"
    assert mask("1234567") == "<num>"
