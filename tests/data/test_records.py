"""Record-type validation: bad rows are refused with an error naming the row (no data needed)."""
import numpy as np
import pytest

from capeval.data import CorrelationTable, PairwiseTable, SystemTable
from capeval.errors import InputError


def corr(**kw):
    base = dict(name="t", candidates=["a cat", "a dog"], references=[["a cat ."], ["a dog ."]],
                human=[1.0, 2.0], groups=["img1", "img2"], statistic="kendall_tau_c", protocol={})
    base.update(kw)
    return CorrelationTable(**base)


def test_correlation_table_ok_and_float_ratings():
    t = corr(human=[1, 2])
    assert len(t) == 2 and t.human.dtype == float


def test_nan_rating_names_row_and_group():
    with pytest.raises(InputError, match=r"row 1 \(group 'img2'\)"):
        corr(human=[1.0, float("nan")])


def test_inf_rating_refused():
    with pytest.raises(InputError, match="row 0"):
        corr(human=[np.inf, 1.0])


@pytest.mark.parametrize("brk", ["\n", "\r", "\u2028", "\x0b"])
def test_line_break_in_candidate_is_read_as_a_space_and_counted(brk):
    t = corr(candidates=["a cat", f"a{brk}dog"])
    assert t.candidates == ["a cat", "a dog"]
    assert t.protocol == {"breaks": "space:1"}
    [lb] = t.line_breaks
    assert lb.where == "t: candidate of row 1 (group 'img2')" and lb.text == f"a{brk}dog"


@pytest.mark.parametrize("ch", ["\x1c", "\x1d", "\x1e", "\x85"])
def test_characters_the_jar_reads_inside_a_line_are_kept_and_not_counted(ch):
    # Only Python's splitlines ends a line at these; the tokenizer reads them as the jar does, so
    # the text is unchanged and the protocol must not claim a break was read as a space.
    t = corr(candidates=["a cat", f"a{ch}dog"], references=[[f"a{ch}cat ."], ["a dog ."]])
    assert t.candidates == ["a cat", f"a{ch}dog"] and t.references[0] == [f"a{ch}cat ."]
    assert t.protocol == {} and t.line_breaks == []


def test_line_break_in_reference_is_read_as_a_space_and_counted():
    t = corr(references=[["a\r\ncat", "a cat\n"], ["a dog ."]])
    assert t.references == [["a  cat", "a cat "], ["a dog ."]]
    assert t.protocol == {"breaks": "space:2"}
    assert [lb.where for lb in t.line_breaks] == ["t: reference 0 of row 0 (group 'img1')",
                                                  "t: reference 1 of row 0 (group 'img1')"]


def test_plain_tables_keep_their_protocol_and_shared_lists():
    shared = ["a cat ."]
    t = corr(references=[shared, shared])
    assert t.protocol == {} and t.line_breaks == [] and t.references[0] is shared


def test_empty_reference_is_dropped_and_counted_empty_candidate_refused():
    t = corr(references=[["a cat .", "", "  "], ["a dog .", "a dog ."]])
    assert t.references == [["a cat ."], ["a dog .", "a dog ."]]  # duplicates kept as released
    assert t.protocol == {"empty_refs": "dropped:2"}
    with pytest.raises(InputError, match=r"every reference of row 1 \(group 'img2'\) is empty"):
        corr(references=[["x"], ["", "\n"]])
    with pytest.raises(InputError, match=r"candidate of row 0 \(group 'img1'\) is empty; every row") as e:
        corr(candidates=[" ", "a dog"])
    assert "allow-empty" not in str(e.value)


def test_replace_keeps_the_count():
    import dataclasses

    t = corr(candidates=["a\ncat", "a dog"])
    again = dataclasses.replace(t, protocol={**t.protocol, "data": "modified"})
    assert again.protocol == {"breaks": "space:1", "data": "modified"} and again.candidates == ["a cat", "a dog"]


def test_length_mismatch_and_empty_refs():
    with pytest.raises(InputError, match="human has 1 entries for 2 rows"):
        corr(human=[1.0])
    with pytest.raises(InputError, match="row 1.*no reference list"):
        corr(references=[["x"], []])


def pair(**kw):
    base = dict(name="p", candidates_a=["a", "b"], candidates_b=["c", "d"], references=[["r"], ["s"]],
                labels=[0, 1], categories=["HC", "HI"], protocol={})
    base.update(kw)
    return PairwiseTable(**base)


def test_pairwise_labels_checked():
    assert pair(labels=[0.5, 1]).labels.tolist() == [0.5, 1.0]
    with pytest.raises(InputError, match="label of pair 1 is 2.0"):
        pair(labels=[0, 2])
    p = pair(candidates_a=["a\u2028", "b"], candidates_b=["c\nx", "d"], references=[["r"], ["s\r\n", ""]])
    assert (p.candidates_a, p.candidates_b, p.references) == (["a ", "b"], ["c x", "d"], [["r"], ["s  "]])
    assert p.protocol == {"breaks": "space:3", "empty_refs": "dropped:1"}
    assert [lb.where for lb in p.line_breaks] == ["p: candidate a of pair 0 (HC)", "p: candidate b of pair 0 (HC)",
                                                  "p: reference 0 of pair 1 (HI)"]


def test_system_table_duplicate_ids_and_alignment():
    ok = SystemTable("s", {"m": ["x", "y"]}, [["r"], ["s"]], ["i1", "i2"], None, {})
    assert len(ok) == 2
    with pytest.raises(InputError, match="duplicate image id 'i1' at rows 0 and 1"):
        SystemTable("s", {"m": ["x", "y"]}, [["r"], ["s"]], ["i1", "i1"], None, {})
    with pytest.raises(InputError, match="system 'm' has 1 entries"):
        SystemTable("s", {"m": ["x"]}, [["r"], ["s"]], ["i1", "i2"], None, {})
    t = SystemTable("s", {"m": ["x", "y\r"]}, [["r"], ["s"]], ["i1", "i2"], None, {})
    assert t.systems == {"m": ["x", "y "]} and t.protocol == {"breaks": "space:1"}
    assert t.line_breaks[0].where == "s: system 'm' of row 1 (group 'i2')"
