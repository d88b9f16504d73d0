"""replaybook._text: the shared timestamp parser every loader uses."""

import pandas as pd
import pytest

from replaybook._text import to_utc


def test_to_utc_offsets_and_fraction_digits():
    out = to_utc(["2026-09-13T12:00:05+02:00", "2026-09-13T10:00:05.123456789Z", "2026-09-13T10:00:05Z"])
    assert str(out.dtype) == "datetime64[ns, UTC]"
    assert out[0] == pd.Timestamp("2026-09-13T10:00:05Z")
    assert out[1].value % 1_000_000_000 == 123_456_789
    assert out[2] == pd.Timestamp("2026-09-13T10:00:05Z")


def test_to_utc_outside_nanosecond_range_is_nat_not_an_exception():
    # a forged or broken clock must end in a quarantine row, not abort the whole load
    out = to_utc(["1500-09-13T10:00:05.600Z", "3000-09-13T10:00:05Z", "2262-04-11T23:47:16.854775807Z",
                  "1677-09-21T00:12:43.145224193Z", None, "not a time"])
    assert out.isna().tolist() == [True, True, False, False, True, True]
    assert out[2] == pd.Timestamp.max.tz_localize("UTC")


def test_int_or_none_keeps_only_what_int64_holds():
    from replaybook._text import int_or_none

    assert int_or_none(2**63 - 1) == 2**63 - 1
    assert int_or_none(-(2**63)) == -(2**63)
    assert int_or_none(2**63) is None
    assert int_or_none(True) is None
    assert int_or_none(3.0, integral_float=True) == 3
    assert int_or_none(1e300, integral_float=True) is None


def test_to_utc_takes_rfc3339_t_and_z_in_lower_case():
    """RFC 3339 §5.6: "T" and "Z" may be lower case; door lines so written were quarantined."""
    from replaybook._text import to_utc

    got = to_utc(["2026-09-13t10:00:05z", "2026-09-13T10:00:05.25z", "2026-09-13t12:00:05+02:00", "junk", None])
    assert [None if pd.isna(t) else t.isoformat() for t in got] == [
        "2026-09-13T10:00:05+00:00", "2026-09-13T10:00:05.250000+00:00", "2026-09-13T10:00:05+00:00", None, None]


def test_a_leap_second_is_the_first_second_of_the_next_minute():
    """RFC 3339 §5.6 allows second 60; such a line had been set aside as "not an RFC 3339
    date-time".  POSIX time (``calendar.timegm``) counts it as the next minute's first second."""
    import calendar

    from replaybook._text import to_utc

    got = to_utc(["2016-12-31T23:59:60Z", "2016-12-31t23:59:60.25z", "2016-12-31T23:59:60.123456789+01:00",
                  "2016-12-31T23:59:61Z", "2016-12-31T23:59:60", "x:60"])
    assert [None if pd.isna(t) else t.isoformat() for t in got] == [
        "2017-01-01T00:00:00+00:00", "2017-01-01T00:00:00.250000+00:00", "2016-12-31T23:00:00.123456789+00:00",
        None, "2017-01-01T00:00:00+00:00", None]  # 61 is no second; no offset: UTC, as for every other second
    assert got[0].timestamp() == calendar.timegm((2016, 12, 31, 23, 59, 60))


def test_a_door_call_in_a_leap_second_is_loaded_not_set_aside(tmp_path):
    import json

    from replaybook.sources.door import load_door

    p = tmp_path / "agent" / "s.jsonl"
    p.parent.mkdir()
    p.write_text("".join(json.dumps({"ts": ts, "session": "s", "tool": "read", "decision": "allow", "seq": i}) + "\n"
                         for i, ts in enumerate(["2016-12-31T23:59:59.5Z", "2016-12-31T23:59:60.5Z",
                                                 "2017-01-01T00:00:01Z"], 1)))
    res = load_door(p)
    assert res.quarantine.empty
    assert res.frame["seq"].tolist() == [1, 2, 3]
    assert res.frame["ts"].iloc[1].isoformat() == "2017-01-01T00:00:00.500000+00:00"


def test_utf8_error_place_counts_characters_as_an_editor_shows_them():
    from replaybook._text import utf8_error_place

    data = b'{\n   "label": "\xc3\xa9\xc3\xa9\xc3\xa9\xff"\n}'
    with pytest.raises(UnicodeDecodeError) as e:
        data.decode("utf-8")
    assert utf8_error_place(data, e.value) == (2, 17)  # (byte 20 of the line: three é take two bytes each)


def test_a_date_time_a_frame_cannot_hold_is_told_from_one_that_is_no_date_time():
    """Year 9999 and year 1 had been called "not a date-time": they are valid RFC 3339 times
    beyond the nanosecond range (1677-09-21 to 2262-04-11 UTC) a frame holds."""
    from replaybook._text import beyond_time_range, time_words

    beyond = "is a date-time beyond the times a frame holds (1677-09-21 to 2262-04-11 UTC)"
    for t in ("9999-12-31T23:59:05.500Z", "2262-04-11T23:47:20Z", "0001-01-01T00:00:00Z",
              "0001-01-01T00:00:00+05:00", "1677-09-21T00:00:00Z"):
        assert time_words(t) == beyond, t
    for t in ("yesterday", "2026-02-30T10:00:00Z", "", "9999", None, 1735689600):
        assert time_words(t) == "is not a date-time" and not beyond_time_range(t), t


def test_a_year_a_date_or_a_time_without_seconds_is_not_a_date_time():
    """``"2025"`` had been read as 2025-01-01T00:00:00Z and ``"2021-10-19"`` as that midnight —
    an instant the log never named, loaded with no note.  A date-time needs the date, hours,
    minutes and seconds (RFC 3339, and the door log's schema, which already set ``"2026"`` aside)."""
    from replaybook._text import time_words

    partial = ["2025", "2025-10", "2025-10-01", "2021-10-19T02Z", "2025-10-01T02", "2025-10-01T02:03Z",
               "2025-10-01T02:03", "2025-10-01T02:03+02:00", "20251001T020304Z", "2025-274", "9999-12-31"]
    assert to_utc(partial).isna().all()
    for t in partial:
        assert time_words(t) == "is not a date-time", t
    full = ["2025-10-01T02:03:04Z", "2025-10-01 02:03:04", "2025-10-01T02:03:04.5+0000", "2025-10-01T02:03:04+01",
            "2025-10-01T02:03:04 +00:00", "2025-10-01T02:03:04.123456789-07:00", " 2025-10-01T02:03:04Z "]
    assert [t.isoformat() for t in to_utc(full)] == [
        "2025-10-01T02:03:04+00:00", "2025-10-01T02:03:04+00:00", "2025-10-01T02:03:04.500000+00:00",
        "2025-10-01T01:03:04+00:00", "2025-10-01T02:03:04+00:00", "2025-10-01T09:03:04.123456789+00:00",
        "2025-10-01T02:03:04+00:00"]
