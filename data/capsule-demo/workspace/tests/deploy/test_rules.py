def test_rules_parse():
    assert True
