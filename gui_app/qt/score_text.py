"""The score in words: the verdict, p(success) against the threshold, the first deviation, the harm verdict.

The timeline shows it above its plot, the compared run's pane in its header. It lives apart from the timeline so
that naming a score's words does not import pyqtgraph (the app paints its library before it builds the timeline).
"""

from __future__ import annotations

import html

from gui_app.core.scoring.score import Safety, Score
from gui_app.core.trajectory.model import step_text

HARM_RGB = (220, 40, 40)
HARM_COLOUR = "#%02x%02x%02x" % HARM_RGB
# p(success) is drawn in the colour of the model's verdict: success green, failure red, unknown grey.
VERDICT_COLOURS = {"success": (90, 200, 110), "failure": (240, 96, 96), "unknown": (150, 150, 160)}


def score_summary(score: Score | None, env_success: bool | None) -> tuple[str, str]:
    """The score in words, as rich text and its plain tooltip: the verdict next to p_success and the threshold,
    a ⚠ when the model and the environment disagree, the predicted first deviation and the judge's own words for
    it (``rationale``: an external judge's reason, or the log's evidence that placed the step), "unknown" when the model
    cannot judge the run, which model gave the score and, on a line of its own, the harm verdict
    (:func:`safety_summary`) when the score has one."""
    env = "unknown" if env_success is None else ("success" if env_success else "failure")
    if score is None:
        return ("<span style='color:#999'>Not scored · Ctrl+R scores this run with the reward model</span> · "
                f"environment: <b>{env}</b>", "The reward model has not scored this trajectory yet")
    p = "?" if score.p_success is None else f"{score.p_success:.2f}"
    t = "?" if score.threshold is None else f"{score.threshold:.2f}"
    verdict = score.verdict_text
    colour = "#%02x%02x%02x" % VERDICT_COLOURS[verdict]
    if verdict == "unknown":
        why = "; ".join(score.warnings) if score.warnings else (
            f"unlike the training data (ood {score.ood:.2f})" if score.ood is not None else "no verdict")
        head = (f"Model: <b style='color:{colour}'>UNKNOWN</b> <span style='color:#999'>(p(success) {p} is not a "
                f"verdict: {why})</span>")
        tip = f"The reward model cannot judge this run: {why}. Its p(success) {p} is not a confident answer."
    else:
        rel = "≥" if verdict == "success" else "<"
        html_rel = "&ge;" if verdict == "success" else "&lt;"  # a bare "<" would open a tag in rich text
        head = (f"Model: <b style='color:{colour}'>{verdict.upper()}</b> p(success) <b>{p}</b> {html_rel} "
                f"threshold {t}")
        tip = f"The reward model calls this run a {verdict}: p(success) {p} {rel} its threshold {t}."
    parts = [head, f"environment: <b>{env}</b>"]
    if score.disagrees_with(env_success):
        parts.append("<b style='color:#ffab40'>⚠ model and environment disagree</b>")
        tip += f" The environment says {env}: they disagree."
    if score.first_error_step is not None and not score.unknown:
        parts.append(f"first deviation predicted at <b>{step_text(score.first_error_step)}</b>")
    if score.rationale and not score.unknown:  # the judge's own words: a judge's reason, or what placed the step
        said = " ".join(score.rationale.split())
        parts.append(f"<span style='color:#bbb'>{html.escape(said if len(said) <= 160 else said[:159] + '…')}</span>")
        tip += f" {said}"
    if score.ood is not None and not score.unknown:  # measured, and within what the model knows
        parts.append(f"<span style='color:#999'>ood {score.ood:.2f}</span>")
        tip += f" Out-of-distribution measure: {score.ood:.2f}."
    if score.warnings and not score.unknown:
        parts.append(f"<span style='color:#ffab40'>{len(score.warnings)} warning(s)</span>")
        tip += " Warnings: " + "; ".join(score.warnings)
    if score.evidence:  # what the verdict read: the video alone, or the step log's actions and claims too
        used = ", ".join(e.replace("_", " ") for e in score.evidence)
        parts.append(f"<span style='color:#999'>from {html.escape(used)}</span>")
        tip += f" Evidence used: {used}."
    if score.model:  # which model said so: after a switch, old and new scores sit side by side in the catalog
        parts.append(f"<span style='color:#999'>by {html.escape(score.model)}</span>")
        tip += f" Scored by {score.model}."
    text = " · ".join(parts)
    if score.safety is not None:
        harm, harm_tip = safety_summary(score.safety)
        text += "<br>" + harm
        tip += "\n" + harm_tip
    return text, tip


def safety_summary(safety: Safety) -> tuple[str, str]:
    """The harm verdict in words, as rich text and its plain tooltip: the verdict with p(harm), the category, the
    first harmful step and each evidence line (``step 15: typed the password given in the instruction into a
    page``)."""
    said = safety.verdict_text
    colour = {"harmful": HARM_COLOUR, "safe": "#5ac86e"}.get(said, "#999")
    p = "?" if safety.p_harm is None else f"{safety.p_harm:.2f}"
    parts = [f"Harm: <b style='color:{colour}'>{said.upper()}</b> p(harm) <b>{p}</b>"]
    if safety.category:
        parts.append(html.escape(safety.category.replace("_", " ")))
    if safety.first_harmful_step is not None and said == "harmful":
        parts.append(f"first harmful at <b>{step_text(safety.first_harmful_step)}</b>")
    lines = safety.evidence_lines()
    if lines:
        parts.append("<span style='color:#bbb'>" + html.escape("; ".join(lines)) + "</span>")
    tip = "Harm judge: " + safety.describe() + "".join(f"\n  {line}" for line in lines)
    return " · ".join(parts), tip
