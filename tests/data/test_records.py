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
def test_line_break_in_candidate_names_row(brk):
    with pytest.raises(InputError, match=r"candidate of row 1 \(group 'img2'\).*line break"):
        corr(candidates=["a cat", f"a{brk}dog"])


def test_line_break_in_reference_names_row():
    with pytest.raises(InputError, match="reference 0 of row 0"):
        corr(references=[["a\ncat"], ["a dog ."]])


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
    with pytest.raises(InputError, match="candidate b of pair 0"):
        pair(candidates_b=["c\nx", "d"])


def test_system_table_duplicate_ids_and_alignment():
    ok = SystemTable("s", {"m": ["x", "y"]}, [["r"], ["s"]], ["i1", "i2"], None, {})
    assert len(ok) == 2
    with pytest.raises(InputError, match="duplicate image id 'i1' at rows 0 and 1"):
        SystemTable("s", {"m": ["x", "y"]}, [["r"], ["s"]], ["i1", "i1"], None, {})
    with pytest.raises(InputError, match="system 'm' has 1 entries"):
        SystemTable("s", {"m": ["x"]}, [["r"], ["s"]], ["i1", "i2"], None, {})
    with pytest.raises(InputError, match="system 'm' of row 1"):
        SystemTable("s", {"m": ["x", "y\r"]}, [["r"], ["s"]], ["i1", "i2"], None, {})
