"""What the report figures draw, read back from the matplotlib figure before it becomes SVG:
the per-rating box plots group rows by their own rating level (lowest first), and the heatmap
shows the matrix as given (positive = red, cell text at its own row and column)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from capeval.metaeval import figures  # noqa: E402
from capeval.stats.correlation import correlation_matrix  # noqa: E402


@pytest.fixture
def drawn(monkeypatch):
    """The figure each call would have serialised."""
    figs = []
    monkeypatch.setattr(figures, "to_svg", lambda fig, salt: figs.append(fig) or "<svg/>")
    return figs


def test_rating_groups_follow_the_rows_ratings(drawn):
    human = np.array([1, 4, 2, 4, 3, 1, 2, 4, 3, 4.0])
    # the metric's score is 10 x the rating plus a row-specific offset: group means are known
    offset = np.arange(10) / 100
    metric = 10 * human + offset
    figures.rating_distributions({"m": metric}, human, salt="t")
    ax = drawn[0].axes[0]
    (means,) = [ln for ln in ax.lines if ln.get_marker() == "o"]
    levels = [1.0, 2.0, 3.0, 4.0]
    np.testing.assert_allclose(means.get_xdata(), [0, 1, 2, 3])
    np.testing.assert_allclose(means.get_ydata(), [metric[human == v].mean() for v in levels])
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == [f"{v:g}\nn={(human == v).sum()}" for v in levels]


def test_heatmap_shows_the_matrix_unchanged_positive_red(drawn):
    m = np.array([[1.0, 0.9], [-0.7, np.nan]])
    figures.heatmap(["r0", "r1"], ["c0", "c1"], m, salt="t")
    ax = drawn[0].axes[0]
    im = ax.images[0]
    shown = np.ma.filled(im.get_array().astype(float), np.nan)
    np.testing.assert_array_equal(shown, m)
    red, _, blue, _ = im.cmap(im.norm(0.9))
    assert red > blue  # positive correlations are red
    red, _, blue, _ = im.cmap(im.norm(-0.7))
    assert blue > red
    texts = {(round(t.get_position()[0]), round(t.get_position()[1])): t.get_text() for t in ax.texts}
    assert texts == {(0, 0): "1.00", (1, 0): "0.90", (0, 1): "-0.70", (1, 1): "n/a"}


def test_metric_matrix_keeps_the_sign():
    x = np.array([0.1, 0.4, 0.2, 0.9, 0.5])
    names, m = correlation_matrix({"a": x, "neg": -x, "same": 2 * x + 1}, "pearson")
    assert names == ["a", "neg", "same"]
    np.testing.assert_allclose(m, [[1, -1, 1], [-1, 1, -1], [1, -1, 1]], atol=1e-12)
