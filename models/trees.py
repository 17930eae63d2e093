"""The run trees: gradient-boosted trees on a run's summary features, averaged with the network's p_success.

The network reads a run token by token; the run features (:func:`models.features.run_features`: how well the run
covers the instruction's values and terms, what it typed, clicked and saved, how it ended) are one of its inputs.
A gradient-boosted tree ensemble on those 41 numbers alone, trained on the same training runs (each as logged and as
a plain recording), judges differently from the network, and the mean of the two probabilities is better than
either: on the validation and test splits of the training data, and across agents (trees and network trained
without agent B, judged on agent B's runs). See the model card.

Trees are fitted with scikit-learn (a training dependency) and written as one ONNX ``TreeEnsembleRegressor``
(``trees.onnx``: input ``run_feat`` (N, F) float32, output the raw score), so scoring needs onnxruntime only:

    p_trees = sigmoid(raw)
    mean = (1 - TREES_WEIGHT) * p_network + TREES_WEIGHT * p_trees
    p_success = sigmoid(a * logit(mean) + b)

where ``p_network`` is the network's calibrated probability and (a, b) the mean's own Platt calibration
(:attr:`models.checkpoint.Checkpoint.trees_calibration`), fitted on the validation runs, each as logged and as a
plain recording; the decision threshold is then 0.5 (:data:`TREES_THRESHOLD`). A mean of two probabilities is
less sure than either, and a threshold chosen for the best validation accuracy moved with the few runs near it: on
the validation split it was 0.40, on the test split 0.55 would have been best, and calibrated 0.5 serves both.

**Agent trees.** A fine-tune on a team's labels (:mod:`models.finetune`, recipe ``trees``) fits a second, small
ensemble (:data:`AGENT_PARAMS`) on the labelled runs' run features alone: what this agent's successes and failures
look like. With them, p_success is the mean of the calibrated p_success above and the agent trees' probability.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

#: The trees' share of p_success.
TREES_WEIGHT = 0.5
#: The decision threshold of calibrated p_success where the weights have trees.
TREES_THRESHOLD = 0.5
#: scikit-learn ``HistGradientBoostingClassifier`` settings (chosen on the training data's validation split).
PARAMS: dict[str, Any] = {"learning_rate": 0.05, "max_iter": 300, "max_leaf_nodes": 15, "l2_regularization": 1.0}
#: The agent trees' settings: few, shallow trees for a hundred labels (chosen on agent B's training runs).
AGENT_PARAMS: dict[str, Any] = {"learning_rate": 0.1, "max_iter": 50, "max_leaf_nodes": 4, "min_samples_leaf": 8}
_ML_OPSET = 3
_INPUT = "run_feat"
_OUTPUT = "raw"


def fit_trees(x: np.ndarray, y: np.ndarray, seed: int = 0, params: dict[str, Any] | None = None) -> bytes:
    """Fit trees (``params``: :data:`PARAMS` by default) on run features ``x`` (N, F) and labels ``y`` (True:
    success); the ONNX model's bytes.

    Raises:
        ValueError: both labels are needed.
    """
    from sklearn.ensemble import HistGradientBoostingClassifier

    y = np.asarray(y, dtype=bool)
    if y.all() or not y.any():
        raise ValueError("the run trees need successes and failures to learn from")
    model = HistGradientBoostingClassifier(random_state=seed, **(params or PARAMS)).fit(np.asarray(x, np.float32), y)
    onnx_bytes = _to_onnx(model, x.shape[1])
    got = RunTrees(onnx_bytes).p(x[:256])
    want = model.predict_proba(np.asarray(x[:256], np.float32))[:, 1]
    if np.abs(got - want).max() > 1e-4:  # the graph must be the model
        raise AssertionError(f"run trees: ONNX differs from scikit-learn by {np.abs(got - want).max():.2e}")
    return onnx_bytes


def _float32_at_most(threshold: float) -> float:
    """The largest float32 not above ``threshold``: the graph compares float32 features with float32 thresholds,
    scikit-learn the same features with float64 ones, and for every float32 ``v``, ``v <= threshold`` exactly when
    ``v <= _float32_at_most(threshold)``. Rounding to nearest instead sent a feature lying between the float64
    threshold and its float32 rounding down the other branch (a threshold halfway between two neighbouring
    float32 values: 1/3 computed two ways)."""
    t = np.float32(threshold)
    if float(t) > threshold:
        t = np.nextafter(t, np.float32(-np.inf))
    return float(t)


def _to_onnx(model: Any, n_features: int) -> bytes:
    """A fitted binary ``HistGradientBoostingClassifier`` as an ONNX ``TreeEnsembleRegressor`` (raw score)."""
    from onnx import TensorProto, helper

    attrs: dict[str, Any] = {k: [] for k in (
        "nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_values", "nodes_modes", "nodes_truenodeids",
        "nodes_falsenodeids", "nodes_missing_value_tracks_true", "target_treeids", "target_nodeids", "target_ids",
        "target_weights")}
    for tree_id, (predictor,) in enumerate(model._predictors):
        for node_id, node in enumerate(predictor.nodes):
            leaf = bool(node["is_leaf"])
            attrs["nodes_treeids"].append(tree_id)
            attrs["nodes_nodeids"].append(node_id)
            attrs["nodes_featureids"].append(0 if leaf else int(node["feature_idx"]))
            attrs["nodes_values"].append(0.0 if leaf else _float32_at_most(float(node["num_threshold"])))
            attrs["nodes_modes"].append("LEAF" if leaf else "BRANCH_LEQ")
            attrs["nodes_truenodeids"].append(0 if leaf else int(node["left"]))
            attrs["nodes_falsenodeids"].append(0 if leaf else int(node["right"]))
            attrs["nodes_missing_value_tracks_true"].append(int(bool(node["missing_go_to_left"])))
            if leaf:
                attrs["target_treeids"].append(tree_id)
                attrs["target_nodeids"].append(node_id)
                attrs["target_ids"].append(0)
                attrs["target_weights"].append(float(node["value"]))
    base = float(np.ravel(model._baseline_prediction)[0])
    attrs.update(n_targets=1, aggregate_function="SUM", base_values=[base], post_transform="NONE")
    node = helper.make_node("TreeEnsembleRegressor", [_INPUT], [_OUTPUT], domain="ai.onnx.ml", **attrs)
    graph = helper.make_graph([node], "run_trees",
                              [helper.make_tensor_value_info(_INPUT, TensorProto.FLOAT, [None, n_features])],
                              [helper.make_tensor_value_info(_OUTPUT, TensorProto.FLOAT, [None, 1])])
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                         helper.make_opsetid("ai.onnx.ml", _ML_OPSET)],
                                   producer_name="rollscope", ir_version=8)  # onnxruntime 1.17 reads IR 8
    return bytes(onnx_model.SerializeToString())


def sigmoid(x: Any) -> Any:
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(x, np.float64)))  # no overflow for large |x|


class RunTrees:
    """Loaded run trees (``trees.onnx``, or its bytes)."""

    def __init__(self, model: str | Path | bytes):
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.log_severity_level = 3
        self.session = ort.InferenceSession(model if isinstance(model, bytes) else str(model), so,
                                            providers=["CPUExecutionProvider"])
        self.n_features = int(self.session.get_inputs()[0].shape[1])

    def p(self, run_feat: np.ndarray) -> np.ndarray:
        """The trees' probability of success per row of ``run_feat`` (N, F)."""
        x = np.asarray(run_feat, np.float32).reshape(-1, self.n_features)
        return sigmoid(self.session.run(None, {_INPUT: x})[0][:, 0].astype(np.float64))


def blend(p_network: np.ndarray | float, p_trees: np.ndarray | float | None, a: float = 1.0, b: float = 0.0,
          p_agent: np.ndarray | float | None = None) -> Any:
    """p_success from the network's calibrated probability and the trees' (None: weights without trees, the
    network's alone), with the mean's calibration (a, b); averaged with the agent trees' ``p_agent`` where a
    fine-tune fitted them."""
    p = p_network if p_trees is None else sigmoid(a * mean_logit(p_network, p_trees) + b)
    return p if p_agent is None else (np.asarray(p, np.float64) + np.asarray(p_agent, np.float64)) / 2.0


def mean_logit(p_network: np.ndarray | float, p_trees: np.ndarray | float) -> Any:
    """The logit of the two probabilities' weighted mean (what the mean's calibration is fitted on)."""
    m = (1.0 - TREES_WEIGHT) * np.asarray(p_network, np.float64) + TREES_WEIGHT * np.asarray(p_trees, np.float64)
    m = np.clip(m, 1e-6, 1 - 1e-6)
    return np.log(m / (1.0 - m))
