from replaybook.canonical import canonical_args, canonical_args_cached, canonical_args_text


def test_key_order_and_whitespace_do_not_matter():
    a = canonical_args({"sql": "SELECT 1", "path": "demo/cars.parquet"})
    b = canonical_args_text('{ "path" : "demo/cars.parquet",\n "sql":"SELECT 1" }')
    assert a == b == '{"path":"demo/cars.parquet","sql":"SELECT 1"}'


def test_integral_floats_equal_ints_but_bools_stay_bools():
    assert canonical_args({"n": 1.0, "m": -0.0, "x": 0.5}) == '{"m":0,"n":1,"x":0.5}'
    assert canonical_args({"n": True}) == '{"n":true}'
    assert canonical_args({"n": True}) != canonical_args({"n": 1})


def test_nested_objects_sorted_arrays_keep_order():
    assert canonical_args({"b": [3, 1, {"z": 1, "a": 2.0}], "a": {"y": None, "x": "1"}}) == (
        '{"a":{"x":"1","y":null},"b":[3,1,{"a":2,"z":1}]}'
    )


def test_unicode_nfc_and_missing_arguments():
    decomposed = "cafe\u0301"
    composed = "caf\u00e9"
    assert canonical_args({"q": decomposed}) == canonical_args({"q": composed})
    assert canonical_args(None) == "{}"


def test_non_json_floats_and_lone_surrogates_are_safe():
    # bare tokens, never strings: the string "Infinity" is other arguments than the number
    assert canonical_args({"a": float("nan"), "b": float("inf"), "c": -float("inf")}) == \
        '{"a":NaN,"b":Infinity,"c":-Infinity}'
    assert canonical_args({"b": float("inf")}) != canonical_args({"b": "Infinity"})
    assert canonical_args_cached({"b": float("nan")}) == '{"b":NaN}'  # (orjson writes it as null: not a cache key)
    assert canonical_args_cached({"b": None}) == '{"b":null}'
    out = canonical_args({"s": "x\udcb2"})
    out.encode("utf-8")  # would raise on a lone surrogate
    assert out == '{"s":"x\ufffd"}'


def test_integers_beyond_64_bits_are_written_exactly():
    # orjson cannot write them; the key must still be stable and exact, not a crash
    big = 123456789012345678901234567890
    assert canonical_args({"b": big, "a": 1.0}) == '{"a":1,"b":123456789012345678901234567890}'
    assert canonical_args({"b": big + 1}) != canonical_args({"b": big})


def test_deep_nesting_that_parsers_return_is_canonicalised():
    # orjson parses up to 1,024 levels; canonicalising such arguments must not abort a load
    import orjson

    text = '{"a":' * 1000 + "1" + "}" * 1000
    key = canonical_args(orjson.loads(text))
    assert key == text


def test_numbers_beyond_the_double_range_compare_by_their_exact_value():
    """Every parser reads 1e400 as infinity: 1e400 and 1e401 had agreed, and with the string
    "Infinity" too."""
    keys = {t: canonical_args_text(t) for t in (
        '{"n":1e400}', '{"n":10E+399}', '{"n":0.1e401}', '{"n":1e401}', '{"n":"Infinity"}', '{"n":Infinity}',
        '{"n":-2.50e999}', '{"n":1e400,"big":123456789012345678901234567890}')}
    assert keys['{"n":1e400}'] == keys['{"n":10E+399}'] == keys['{"n":0.1e401}'] == '{"n":1E400}'
    assert keys['{"n":1e401}'] == '{"n":1E401}'
    assert keys['{"n":"Infinity"}'] == '{"n":"Infinity"}' and keys['{"n":Infinity}'] == '{"n":Infinity}'
    assert keys['{"n":-2.50e999}'] == '{"n":-25E998}'
    assert keys['{"n":1e400,"big":123456789012345678901234567890}'] == \
        '{"big":123456789012345678901234567890,"n":1E400}'  # (the writer for long integers too)
    assert canonical_args_text('{"n":1e-400}') == '{"n":0}'  # (underflow reads as the double 0, as before)



def test_integral_doubles_of_any_size_equal_their_integer():
    """1e19 is exactly the integer 10**19 as a double; below 2**63 that had held and above not,
    so the same value written two ways agreed or not by its size."""
    assert canonical_args_text('{"n":1e19}') == canonical_args_text('{"n":10000000000000000000}') == \
        '{"n":10000000000000000000}'
    assert canonical_args_text('{"n":9.223372036854775808e18}') == canonical_args_text('{"n":9223372036854775808}')
    assert canonical_args_text('{"n":-1.5e20}') == '{"n":-150000000000000000000}'
    # a double is the value it reads as: 2**63 + 1 is not a double, so it does not agree with one
    assert canonical_args_text('{"n":9.223372036854775809e18}') != canonical_args_text('{"n":9223372036854775809}')
    # non-integral values stay doubles
    assert canonical_args_text('{"n":1.5e-7}') == '{"n":1.5e-7}'


def test_arguments_given_as_text_parse_the_one_way_every_loader_parses_them():
    from replaybook.canonical import arguments_from_text

    assert arguments_from_text(' { "b": 1.0, "a": [1] } ') == {"b": 1.0, "a": [1]}
    assert arguments_from_text("   ") == {} and arguments_from_text("") == {}
    assert arguments_from_text('{"n": 123456789012345678901234567890}') == {"n": 123456789012345678901234567890}
    assert canonical_args(arguments_from_text('{"n": 1e400}')) == '{"n":1E400}'  # beyond doubles: exact
    # a lone-surrogate escape, or a lone surrogate already decoded into the text, leaves none behind
    assert arguments_from_text('{"p": "x\\ud800"}') == {"p": "x\ufffd"}
    assert arguments_from_text('{"p": "x\ud800"}') == {"p": "x\ufffd"}
    import pytest

    for bad in ("{not json", "[" * 100_000):
        with pytest.raises(ValueError):
            arguments_from_text(bad)
