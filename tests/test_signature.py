from capeval.signature import Signature, nrefs_field


def test_format_version_last_and_fields_in_order():
    sig = Signature.make("cider_d_coco", tok="ptb-py@0.1.0", nrefs=5, sigma=6.0, idf=False, skipped=None)
    text = str(sig)
    assert text.startswith("cider_d_coco|tok:ptb-py@0.1.0|nrefs:5|sigma:6.0|idf:no|version:")
    assert "skipped" not in text
    assert sig.as_dict()["nrefs"] == "5"


def test_nrefs_var():
    assert nrefs_field([["a"], ["a", "b"]]) == "var"
    assert nrefs_field([["a", "b"], ["c", "d"]]) == "2"
