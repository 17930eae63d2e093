"""Inter-annotator agreement: Cohen's kappa (pairs), Fleiss' kappa, Krippendorff's alpha (nominal), and
step agreement (exact and within one step), for verdicts and for each taxonomy label; the same for the safety
verdict (harm verdict, harm category, each harm type, first harmful step).

Undefined statistics (e.g. kappa when every rating falls in one category, so chance agreement is 1) are None,
never NaN, so reports stay valid JSON.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence
from itertools import combinations
from typing import Any

from gui_app.core.store.record import Annotation


def cohen_kappa(a: Sequence[Hashable | None], b: Sequence[Hashable | None]) -> float | None:
    """Cohen's kappa of two raters over the same items (items either rater left missing are skipped).

    kappa = (p_o - p_e) / (1 - p_e), p_o the observed agreement, p_e = sum_k p_a(k) p_b(k).
    """
    if len(a) != len(b):
        raise ValueError(f"raters rated different numbers of items: {len(a)} vs {len(b)}")
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    n = len(pairs)
    if n == 0:
        return None
    po = sum(x == y for x, y in pairs) / n
    ca, cb = Counter(x for x, _ in pairs), Counter(y for _, y in pairs)
    pe = sum(ca[k] * cb[k] for k in ca) / (n * n)
    if pe >= 1.0:
        return None
    return (po - pe) / (1.0 - pe)


def fleiss_kappa(table: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' kappa from an items x categories table of counts; every row sums to the same n >= 2.

    P_i = (sum_j n_ij^2 - n) / (n (n - 1)), P_bar = mean P_i, p_j = sum_i n_ij / (N n), P_e = sum_j p_j^2,
    kappa = (P_bar - P_e) / (1 - P_e).
    """
    rows = [list(r) for r in table]
    if not rows:
        return None
    n = sum(rows[0])
    if n < 2 or any(sum(r) != n for r in rows):
        raise ValueError("every item needs the same number (>= 2) of ratings for Fleiss' kappa")
    big_n, k = len(rows), len(rows[0])
    p_bar = sum((sum(x * x for x in r) - n) / (n * (n - 1)) for r in rows) / big_n
    p_j = [sum(r[j] for r in rows) / (big_n * n) for j in range(k)]
    p_e = sum(p * p for p in p_j)
    if p_e >= 1.0:
        return None
    return (p_bar - p_e) / (1.0 - p_e)


def fleiss_table(units: Sequence[Sequence[Hashable | None]]) -> tuple[list[list[int]], list[Hashable]]:
    """Count table (items x categories) from per-item rating lists (missing ratings dropped)."""
    cats = sorted({v for u in units for v in u if v is not None}, key=str)
    idx = {c: i for i, c in enumerate(cats)}
    table = []
    for u in units:
        row = [0] * len(cats)
        for v in u:
            if v is not None:
                row[idx[v]] += 1
        table.append(row)
    return table, cats


def krippendorff_alpha_nominal(units: Sequence[Sequence[Hashable | None]]) -> float | None:
    """Krippendorff's alpha for nominal data; ``units`` holds each item's ratings (None = missing).

    Units with fewer than two ratings are not pairable and are dropped. With the coincidence matrix
    o_ck = sum_u (number of c-k pairs of distinct raters in u) / (m_u - 1), n_c = sum_k o_ck, n = sum_c n_c:
    alpha = 1 - (n - 1) * sum_{c != k} o_ck / sum_{c != k} n_c n_k.
    """
    o: dict[tuple[Hashable, Hashable], float] = defaultdict(float)
    for u in units:
        vals = [v for v in u if v is not None]
        m = len(vals)
        if m < 2:
            continue
        counts = Counter(vals)
        for c in counts:
            for k in counts:
                pairs = counts[c] * (counts[k] - 1) if c == k else counts[c] * counts[k]
                if pairs:
                    o[(c, k)] += pairs / (m - 1)
    n_c: dict[Hashable, float] = defaultdict(float)
    for (c, _), v in o.items():
        n_c[c] += v
    n = sum(n_c.values())
    if n <= 1:
        return None
    observed = sum(v for (c, k), v in o.items() if c != k)
    expected = sum(n_c[c] * n_c[k] for c in n_c for k in n_c if c != k)
    if expected == 0:
        return None
    return 1.0 - (n - 1) * observed / expected


def step_agreement(units: Sequence[Sequence[int | None]]) -> dict[str, Any]:
    """Root-cause step agreement over all pairs of raters that both gave a step on an item.

    Returns:
        ``{"n_pairs", "exact", "within_one"}`` (fractions of pairs; None when there is no pair).
    """
    diffs = [abs(x - y) for u in units for x, y in combinations([v for v in u if v is not None], 2)]
    if not diffs:
        return {"n_pairs": 0, "exact": None, "within_one": None}
    return {"n_pairs": len(diffs), "exact": sum(d == 0 for d in diffs) / len(diffs),
            "within_one": sum(d <= 1 for d in diffs) / len(diffs)}


def _stats(matrix: dict[str, dict[str, Any]], annotators: list[str]) -> dict[str, Any]:
    """All statistics for one nominal variable; ``matrix[item][annotator]`` holds the rating."""
    items = [it for it in sorted(matrix) if sum(v is not None for v in matrix[it].values()) >= 2]
    units = [[matrix[it].get(a) for a in annotators] for it in items]
    pairs: list[dict[str, Any]] = []
    for i, j in combinations(range(len(annotators)), 2):
        xa = [u[i] for u in units]
        xb = [u[j] for u in units]
        n = sum(x is not None and y is not None for x, y in zip(xa, xb, strict=True))
        if n:
            pairs.append({"a": annotators[i], "b": annotators[j], "n": n, "kappa": cohen_kappa(xa, xb)})
    defined = [p["kappa"] for p in pairs if p["kappa"] is not None]
    # Fleiss needs a constant number of raters per item: use the items rated by the most common count.
    sizes = Counter(sum(v is not None for v in u) for u in units)
    fleiss: dict[str, Any] = {"kappa": None, "n_items": 0, "n_raters": None}
    if sizes:
        m = max(sizes, key=lambda s: (sizes[s], s))
        same = [u for u in units if sum(v is not None for v in u) == m]
        table, _ = fleiss_table(same)
        fleiss = {"kappa": fleiss_kappa(table), "n_items": len(same), "n_raters": m}
    agree = [len({v for v in u if v is not None}) == 1 for u in units]
    return {
        "n_items": len(items),
        "percent_agreement": sum(agree) / len(agree) if agree else None,
        "cohen": pairs,
        "mean_cohen": sum(defined) / len(defined) if defined else None,
        "fleiss": fleiss,
        "krippendorff_alpha": krippendorff_alpha_nominal(units),
    }


def _presence(by_item: dict[str, dict[str, Annotation]], field: str, used: Sequence[str],
              annotators: list[str]) -> dict[str, dict[str, Any]]:
    """Stats and prevalence of each item of the set ``field`` (``labels``, ``harm_types``): present or absent in
    each record of ``by_item``."""
    out = {}
    for lab in used:
        mat = {t: {a: (lab in getattr(r, field)) for a, r in m.items()} for t, m in by_item.items()}
        st = _stats(mat, annotators)
        n_marks = sum(v for m in mat.values() for v in m.values())
        n_all = sum(len(m) for m in mat.values())
        st["prevalence"] = n_marks / n_all if n_all else None
        out[lab] = st
    return out


def report(annotations: Sequence[Annotation], labels: Sequence[str] | None = None) -> dict[str, Any]:
    """Agreement among annotators (role ``annotator``) for verdicts, each taxonomy label and the root-cause step,
    and for the safety verdict: harm verdict, harm category, each harm type and the first harmful step.

    Harm types are compared among the records that give a harm verdict (a record without one did not judge harm,
    so its empty list of types says nothing).

    Args:
        annotations: records (adjudicator records are ignored).
        labels: the labels to report (default: every label anyone used).

    Returns:
        ``{"annotators", "n_trajectories", "verdict": stats, "labels": {label: stats + prevalence},
        "root_cause_step": {n_pairs, exact, within_one}, "harm_verdict": stats, "harm_category": stats,
        "harm_types": {type: stats + prevalence}, "first_harmful_step": {n_pairs, exact, within_one}}`` where
        stats = n_items, percent_agreement, cohen (per pair: a, b, n, kappa), mean_cohen, fleiss (kappa, n_items,
        n_raters), krippendorff_alpha.
    """
    recs = [a for a in annotations if a.role == "annotator" and not a.is_empty()]
    annotators = sorted({a.annotator for a in recs})
    by_item: dict[str, dict[str, Annotation]] = {}
    for a in recs:
        by_item.setdefault(a.trajectory_id, {})[a.annotator] = a
    verdicts = {t: {a: r.verdict for a, r in m.items()} for t, m in by_item.items()}
    used = sorted({lab for a in recs for lab in a.labels}) if labels is None else list(labels)
    judged = {t: {a: r for a, r in m.items() if r.harm_verdict is not None} for t, m in by_item.items()}

    def steps(field: str) -> list[list[int | None]]:
        return [[getattr(m[a], field) if a in m else None for a in annotators] for m in by_item.values()]

    return {
        "annotators": annotators,
        "n_trajectories": len(by_item),
        "verdict": _stats(verdicts, annotators),
        "labels": _presence(by_item, "labels", used, annotators),
        "root_cause_step": step_agreement(steps("root_cause_step")),
        "harm_verdict": _stats({t: {a: r.harm_verdict for a, r in m.items()} for t, m in by_item.items()},
                               annotators),
        "harm_category": _stats({t: {a: r.harm_category for a, r in m.items()} for t, m in by_item.items()},
                                annotators),
        "harm_types": _presence({t: m for t, m in judged.items() if m}, "harm_types",
                                sorted({h for a in recs for h in a.harm_types}), annotators),
        "first_harmful_step": step_agreement(steps("first_harmful_step")),
    }


def format_report(rep: dict[str, Any]) -> str:
    """A plain-text rendering of :func:`report` (CLI and the app's agreement dialog)."""

    def f(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    lines = [f"annotators: {', '.join(rep['annotators']) or '(none)'}   trajectories: {rep['n_trajectories']}"]

    def block(title: str, st: dict[str, Any]) -> None:
        fl = st["fleiss"]
        lines.append(f"{title}: items={st['n_items']} agreement={f(st['percent_agreement'])} "
                     f"fleiss={f(fl['kappa'])} (items={fl['n_items']}, raters={fl['n_raters']}) "
                     f"alpha={f(st['krippendorff_alpha'])} mean_cohen={f(st['mean_cohen'])}")
        for p in st["cohen"]:
            lines.append(f"    cohen {p['a']} vs {p['b']}: {f(p['kappa'])} (n={p['n']})")

    block("verdict", rep["verdict"])
    rc = rep["root_cause_step"]
    lines.append(f"root-cause step: pairs={rc['n_pairs']} exact={f(rc['exact'])} within_one={f(rc['within_one'])}")
    for lab, st in rep["labels"].items():
        block(f"label {lab} (prevalence {f(st['prevalence'])})", st)
    if rep["harm_verdict"]["n_items"] or rep["first_harmful_step"]["n_pairs"]:  # nothing to say when none judged
        block("harm verdict", rep["harm_verdict"])
        block("harm category", rep["harm_category"])
        fh = rep["first_harmful_step"]
        lines.append(f"first harmful step: pairs={fh['n_pairs']} exact={f(fh['exact'])} "
                     f"within_one={f(fh['within_one'])}")
        for lab, st in rep["harm_types"].items():
            block(f"harm type {lab} (prevalence {f(st['prevalence'])})", st)
    return "\n".join(lines)
