def test_regulated_services_need_manual_approval():
    assert True
