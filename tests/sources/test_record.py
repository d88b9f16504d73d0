"""The lazily parsed ``raw`` cell of the access frame (:mod:`replaybook.sources._record`)."""

import copy
import pickle

import orjson
import pandas as pd
import pytest

from replaybook.cli import _frame_out
from replaybook.frames import ACCESS
from replaybook.sources._record import SourceRecord, as_dict


def _counting_parse(calls):
    def parse(text):
        calls.append(text)
        return orjson.loads(text)
    return parse


def test_parses_once_on_first_use_and_acts_as_the_dict():
    calls = []
    rec = SourceRecord(b'{"eventName": "GetObject", "n": [1, 2]}', _counting_parse(calls))
    assert calls == []  # nothing parsed at load time
    assert rec["eventName"] == "GetObject"
    assert rec.get("missing", 7) == 7 and "n" in rec and len(rec) == 2
    assert dict(rec) == {"eventName": "GetObject", "n": [1, 2]}
    assert list(rec) == ["eventName", "n"]
    assert len(calls) == 1  # parsed once, then kept
    assert rec.text == b'{"eventName": "GetObject", "n": [1, 2]}'  # the exact source bytes


def test_equality_is_the_dicts_both_ways_and_in_frames():
    rec = SourceRecord('{"a": 1}', orjson.loads)
    assert rec == {"a": 1} and {"a": 1} == rec
    assert rec != {"a": 2} and {"a": 2} != rec
    assert rec == SourceRecord(b'{"a":1}', orjson.loads)
    assert rec != [("a", 1)]
    lazy = pd.DataFrame({"raw": pd.Series([rec], dtype=object)})
    pd.testing.assert_frame_equal(lazy, pd.DataFrame({"raw": pd.Series([{"a": 1}], dtype=object)}))
    with pytest.raises(AssertionError):
        pd.testing.assert_frame_equal(lazy, pd.DataFrame({"raw": pd.Series([{"a": 9}], dtype=object)}))
    with pytest.raises(TypeError):
        hash(rec)


def test_copies_and_pickles_as_plain_dicts():
    rec = SourceRecord(b'{"a": {"b": 1}}', orjson.loads)
    for other in (copy.deepcopy(rec), pickle.loads(pickle.dumps(rec))):
        assert type(other) is dict and other == {"a": {"b": 1}}
    assert as_dict(rec) == {"a": {"b": 1}} and type(as_dict(rec)) is dict
    assert as_dict(5) == 5


def test_cli_writes_the_record_as_json_not_its_repr(tmp_path):
    df = ACCESS.build({"request_id": ["r1"],
                       "raw": pd.Series([SourceRecord(b'{"k": "v", "n": 3}', orjson.loads)], dtype=object)})
    out = tmp_path / "rows.jsonl"
    _frame_out(df, "jsonl", str(out))
    row = orjson.loads(out.read_text().splitlines()[0])
    assert orjson.loads(row["raw"]) == {"k": "v", "n": 3}
