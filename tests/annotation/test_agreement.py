"""Agreement statistics against values worked out by hand and against textbook examples."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gui_app.core.annotation import agreement as ag
from gui_app.core.store.record import Annotation
from gui_app.core.store.backends import open_store

N = None


def test_cohen_kappa_by_hand():
    # a = S S F F U, b = S F F F U: agree on 4 of 5 -> p_o = 0.8
    # marginals a: S2 F2 U1, b: S1 F3 U1 -> p_e = (2*1 + 2*3 + 1*1) / 25 = 9/25 = 0.36
    # kappa = (0.8 - 0.36) / (1 - 0.36) = 0.44 / 0.64 = 0.6875
    assert ag.cohen_kappa(list("SSFFU"), list("SFFFU")) == pytest.approx(0.6875)
    # missing ratings are skipped pairwise: the same plus two items only one rater saw
    assert ag.cohen_kappa([*"SSFFU", "S", N], [*"SFFFU", N, "F"]) == pytest.approx(0.6875)
    # one category only: p_e = 1, kappa undefined
    assert ag.cohen_kappa(list("SSS"), list("SSS")) is None
    assert ag.cohen_kappa([N], ["S"]) is None


def test_cohen_kappa_textbook():
    # Wikipedia "Cohen's kappa" example: 50 proposals, yes/yes 20, yes/no 5, no/yes 10, no/no 15.
    # p_o = 35/50 = 0.7; p_yes = 25/50 * 30/50 = 0.3, p_no = 25/50 * 20/50 = 0.2, p_e = 0.5; kappa = 0.4
    a = ["y"] * 25 + ["n"] * 25
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    assert ag.cohen_kappa(a, b) == pytest.approx(0.4)


def test_fleiss_kappa_by_hand():
    # 3 items x 3 raters, categories (S, F): [3,0], [2,1], [0,3]
    # P_1 = (9 - 3) / 6 = 1, P_2 = (4 + 1 - 3) / 6 = 1/3, P_3 = 1 -> P_bar = 7/9
    # p_S = 5/9, p_F = 4/9 -> P_e = 25/81 + 16/81 = 41/81
    # kappa = (63/81 - 41/81) / (40/81) = 22/40 = 0.55
    assert ag.fleiss_kappa([[3, 0], [2, 1], [0, 3]]) == pytest.approx(0.55)
    with pytest.raises(ValueError, match="same number"):
        ag.fleiss_kappa([[3, 0], [1, 1]])


def test_fleiss_kappa_textbook():
    # Fleiss (1971) as tabulated on Wikipedia: 10 subjects, 14 raters, 5 categories;
    # P_bar = 0.378, P_e = 0.213, kappa = 0.210
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    assert ag.fleiss_kappa(table) == pytest.approx(0.210, abs=5e-4)


def test_krippendorff_alpha_by_hand():
    # units SSS, SSF, FFF. Coincidences: SSS adds o_SS += 3*2/2 = 3; SSF adds o_SS += 2*1/2 = 1,
    # o_SF = o_FS += 2*1/2 = 1; FFF adds o_FF += 3. So o_SS=4, o_FF=3, o_SF=o_FS=1; n_S=5, n_F=4, n=9.
    # alpha = 1 - (n-1) * (o_SF + o_FS) / (n_S n_F + n_F n_S) = 1 - 8 * 2 / 40 = 0.6
    assert ag.krippendorff_alpha_nominal([list("SSS"), list("SSF"), list("FFF")]) == pytest.approx(0.6)
    # a unit with a single rating is not pairable and changes nothing
    assert ag.krippendorff_alpha_nominal([list("SSS"), list("SSF"), list("FFF"), ["S", N, N]]) == pytest.approx(0.6)
    assert ag.krippendorff_alpha_nominal([["S", "S"]]) is None  # no disagreement possible: undefined


def test_krippendorff_alpha_textbook():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", nominal example with missing data:
    # 4 observers, 12 units -> alpha = 0.743
    a = [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N]
    b = [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3]
    c = [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N]
    d = [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N]
    assert ag.krippendorff_alpha_nominal(list(zip(a, b, c, d, strict=True))) == pytest.approx(0.743, abs=5e-4)


def test_step_agreement_by_hand():
    # item 1 steps 3, 3, 4: pairs (3,3) d=0, (3,4) d=1, (3,4) d=1; item 2 steps 2, -, 5: (2,5) d=3
    # 4 pairs: exact 1/4, within one 3/4
    st = ag.step_agreement([[3, 3, 4], [2, N, 5]])
    assert st == {"n_pairs": 4, "exact": 0.25, "within_one": 0.75}
    assert ag.step_agreement([[1, N]])["exact"] is None


def test_report_from_the_store(store_location):
    s = open_store(store_location)  # from SQLite and from PostgreSQL alike
    # verdicts per item: t1 S S S, t2 S S F, t3 F F F (raters a b c) -> Fleiss 0.55, alpha 0.6 (above)
    # label x:1 present: t1 a b, t2 a, t3 none -> counts (T, F): [2,1], [1,2], [0,3]
    #   P = 1/3, 1/3, 1 -> P_bar = 5/9; p_T = 3/9, p_F = 6/9 -> P_e = 1/9 + 4/9 = 5/9 -> kappa 0
    data = {("t1", "a"): ("success", ["x:1"], 3), ("t1", "b"): ("success", ["x:1"], 3),
            ("t1", "c"): ("success", [], 4), ("t2", "a"): ("success", ["x:1"], 2),
            ("t2", "b"): ("success", [], None), ("t2", "c"): ("failure", [], 5),
            ("t3", "a"): ("failure", [], None), ("t3", "b"): ("failure", [], None),
            ("t3", "c"): ("failure", [], None)}
    for (t, who), (v, labs, step) in data.items():
        s.save(Annotation(t, who, verdict=v, labels=labs, root_cause_step=step))
    s.save(Annotation("t1", "boss", role="adjudicator", verdict="failure"))  # ignored by agreement
    rep = ag.report(s.annotations())
    assert rep["annotators"] == ["a", "b", "c"] and rep["n_trajectories"] == 3
    v = rep["verdict"]
    assert v["fleiss"] == {"kappa": pytest.approx(0.55), "n_items": 3, "n_raters": 3}
    assert v["krippendorff_alpha"] == pytest.approx(0.6)
    # Cohen a vs b: S S F vs S S F -> 1.0; a vs c: S S F vs S F F -> p_o = 2/3, p_e = (2*1 + 1*2)/9 = 4/9,
    # kappa = (2/3 - 4/9) / (5/9) = 0.4
    cohen = {(p["a"], p["b"]): p["kappa"] for p in v["cohen"]}
    assert cohen[("a", "b")] == pytest.approx(1.0) and cohen[("a", "c")] == pytest.approx(0.4)
    assert v["percent_agreement"] == pytest.approx(2 / 3)
    lab = rep["labels"]["x:1"]
    assert lab["fleiss"]["kappa"] == pytest.approx(0.0, abs=1e-12)
    assert lab["prevalence"] == pytest.approx(3 / 9)
    assert rep["root_cause_step"] == {"n_pairs": 4, "exact": 0.25, "within_one": 0.75}
    text = ag.format_report(rep)
    assert "fleiss=0.550" in text and "label x:1" in text
    s.close()


pairs = st.lists(st.tuples(st.sampled_from("xyz"), st.sampled_from("xyz")), min_size=2, max_size=40)


@settings(max_examples=60, deadline=None)
@given(pairs)
def test_properties_linking_the_three_statistics(data):
    a, b = [x for x, _ in data], [y for _, y in data]
    k = ag.cohen_kappa(a, b)
    assert k == ag.cohen_kappa(b, a)  # symmetric
    if k is not None:
        assert -1.0 <= k <= 1.0
    # Fleiss' kappa with two raters is Scott's pi; Krippendorff's alpha (nominal, no missing data) is Scott's pi
    # with the small-sample correction: alpha = 1 - (1 - pi) (2N - 1) / (2N)  (Krippendorff 2004)
    pi = ag.fleiss_kappa(ag.fleiss_table(data)[0])
    alpha = ag.krippendorff_alpha_nominal(data)
    if pi is not None and alpha is not None:
        n = len(data)
        assert alpha == pytest.approx(1 - (1 - pi) * (2 * n - 1) / (2 * n))
    if a == b and len(set(a)) > 1:
        assert k == pytest.approx(1.0) and alpha == pytest.approx(1.0)
