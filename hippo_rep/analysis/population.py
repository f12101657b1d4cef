"""Population analyses with scikit-learn: cross-environment decoding of position, PCA.

Decoding (per population, e.g. the positional units ``g`` or the memory neurons): samples
are time steps, evenly subsampled to at most :data:`DECODE_MAX_STEPS_PER_ENV` per
environment; features are the activity as recorded (memory neurons are 0 before their memory
exists), standardised on the training folds. Cross-validation is ``GroupKFold`` with the
environment as the group (``min(DECODE_FOLDS, n_env)`` folds), so every decoder is tested on
environments it was not fitted on: positional units that code position the same way in every
environment decode well, memory neurons (fresh memories in every environment, no identity
across environments) should not.

- node: multinomial logistic regression (``LogisticRegression(C=DECODE_C,
  max_iter=DECODE_MAX_ITER)``, lbfgs); accuracy over all held-out samples, and chance = the
  accuracy of always answering the training folds' most frequent node.
- x, y: ridge regression (``Ridge(alpha=DECODE_RIDGE_ALPHA)``) of the node coordinates (node
  spacings); R^2 per axis over the pooled held-out predictions, mean Euclidean error, and
  the error of always answering the training mean (chance).

PCA of the spatial code: samples are the (environment, node) pairs visited, features the
units' mean activity at that node (as recorded); variance explained per component, the
participation ratio ``(sum l)^2 / sum l^2`` of the eigenvalues l (effective dimensionality),
and the number of components reaching :data:`PCA_VARIANCE` of the variance.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import xarray as xr
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import r2_score
from sklearn.model_selection import GroupKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from threadpoolctl import threadpool_limits

from hippo_rep.defaults import BLAS_THREADS
from hippo_rep.schema import MEMORY_POPULATIONS, POPULATIONS, require_recording

from .ratemaps import rate_maps_from_nodes
from .recordings import (
    NODE_DIM,
    UNIT_DIM,
    AnalysisError,
    node_index,
    unit_activity,
)

#: Time steps per environment used for decoding (evenly spaced), to bound the cost.
DECODE_MAX_STEPS_PER_ENV = 256

#: Folds of the environment-grouped cross-validation (fewer if there are fewer envs).
DECODE_FOLDS = 4

#: Inverse regularisation of the node decoder (logistic regression).
DECODE_C = 1.0

#: Iterations of the node decoder's lbfgs solver (convergence warnings are silenced).
DECODE_MAX_ITER = 200

#: Regularisation of the x, y decoder (ridge regression on standardised features).
DECODE_RIDGE_ALPHA = 1.0

#: Standardised features are clipped to this many training-fold SDs. A unit nearly silent in
#: the training environments (a memory slot that one environment uses a lot and the others
#: barely) is scaled by a tiny SD, and its activity in the test environment then blew the
#: decoder up (x, y r² of -3e66 on the shipped 11x11 recording before this clip).
DECODE_CLIP = 10.0

#: ``pca_n_components`` counts the components needed to explain this fraction of variance.
PCA_VARIANCE = 0.9


def _clip() -> FunctionTransformer:
    return FunctionTransformer(np.clip, kw_args={"a_min": -DECODE_CLIP, "a_max": DECODE_CLIP})


def decode_arrays(
    activity: np.ndarray,
    node: np.ndarray,
    xy: np.ndarray,
    max_steps: int = DECODE_MAX_STEPS_PER_ENV,
    folds: int = DECODE_FOLDS,
) -> dict[str, np.ndarray | float]:
    """Cross-environment decoding of node and (x, y) from one population (numpy).

    Parameters
    ----------
    activity : (E, T, U) float
    node : (E, T) int (negative = skip the step)
    xy : (E, T, 2) float, node coordinates in node spacings
    max_steps, folds : int

    Returns
    -------
    dict with ``node_accuracy``, ``node_chance``, ``xy_error``, ``xy_error_chance`` (float)
    and ``xy_r2`` ((2,) float); NaN everywhere with fewer than 2 environments.
    """
    n_env, n_time, n_unit = activity.shape
    nan = {"node_accuracy": np.nan, "node_chance": np.nan, "xy_error": np.nan,
           "xy_error_chance": np.nan, "xy_r2": np.full(2, np.nan)}
    if n_env < 2 or n_unit == 0:
        return nan
    t = np.unique(np.round(np.linspace(0, n_time - 1, min(n_time, max_steps))).astype(np.int64))
    x = activity[:, t, :].reshape(-1, n_unit)
    yn = node[:, t].reshape(-1)
    yxy = xy[:, t, :].reshape(-1, 2)
    groups = np.repeat(np.arange(n_env), t.size)
    keep = (yn >= 0) & np.isfinite(yxy).all(1)
    x, yn, yxy, groups = np.nan_to_num(x[keep]), yn[keep], yxy[keep], groups[keep]
    if np.unique(groups).size < 2:
        return nan
    cv = GroupKFold(n_splits=min(int(folds), np.unique(groups).size))
    pred_node = np.empty_like(yn)
    chance_hits = 0
    pred_xy = np.empty_like(yxy)
    mean_xy = np.empty_like(yxy)
    with threadpool_limits(limits=BLAS_THREADS, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        # few samples per node (short walks): sklearn suspects a regression target
        warnings.filterwarnings("ignore", message="The number of unique classes")
        for train, test in cv.split(x, yn, groups):
            classes, counts = np.unique(yn[train], return_counts=True)
            if classes.size > 1:
                clf = make_pipeline(
                    StandardScaler(), _clip(),
                    LogisticRegression(C=DECODE_C, max_iter=DECODE_MAX_ITER),
                )
                pred_node[test] = clf.fit(x[train], yn[train]).predict(x[test])
            else:
                pred_node[test] = classes[0]
            chance_hits += int((yn[test] == classes[np.argmax(counts)]).sum())
            reg = make_pipeline(StandardScaler(), _clip(), Ridge(alpha=DECODE_RIDGE_ALPHA))
            pred_xy[test] = reg.fit(x[train], yxy[train]).predict(x[test])
            mean_xy[test] = yxy[train].mean(axis=0)
    return {
        "node_accuracy": float((pred_node == yn).mean()),
        "node_chance": chance_hits / yn.size,
        "xy_error": float(np.hypot(*(pred_xy - yxy).T).mean()),
        "xy_error_chance": float(np.hypot(*(mean_xy - yxy).T).mean()),
        "xy_r2": np.asarray(r2_score(yxy, pred_xy, multioutput="raw_values"), dtype=np.float64),
    }


def pca_arrays(node_rate: np.ndarray) -> dict[str, np.ndarray | float]:
    """PCA of (E, U, K) node rates; samples = (env, node) pairs finite for every unit.

    Returns ``variance_ratio`` ((U,), NaN-padded), ``participation_ratio``, ``n_components``
    (to reach :data:`PCA_VARIANCE`), ``n_samples``.
    """
    n_env, n_unit, n_node = node_rate.shape
    x = node_rate.transpose(0, 2, 1).reshape(-1, n_unit)
    x = x[np.isfinite(x).all(axis=1)]
    out = {"variance_ratio": np.full(n_unit, np.nan), "participation_ratio": np.nan,
           "n_components": np.nan, "n_samples": float(x.shape[0])}
    if x.shape[0] < 2 or n_unit == 0:
        return out
    with threadpool_limits(limits=BLAS_THREADS, user_api="blas"):
        pca = PCA(svd_solver="full").fit(x)
    lam = pca.explained_variance_
    if not lam.sum() > 0:
        return out
    ratio = pca.explained_variance_ratio_
    out["variance_ratio"][: ratio.size] = ratio
    out["participation_ratio"] = float(lam.sum() ** 2 / (lam**2).sum())
    out["n_components"] = float(np.searchsorted(np.cumsum(ratio), PCA_VARIANCE - 1e-12) + 1)
    return out


def population_one(
    activity: np.ndarray,
    node: np.ndarray,
    xy: np.ndarray,
    node_rate: np.ndarray,
    max_steps: int = DECODE_MAX_STEPS_PER_ENV,
    folds: int = DECODE_FOLDS,
) -> dict[str, np.ndarray | float]:
    """Decoding and PCA of one population (numpy in, dict out; one dask task)."""
    return {**decode_arrays(activity, node, xy, max_steps, folds),
            **{f"pca_{k}": v for k, v in pca_arrays(node_rate).items()}}


def population_inputs(recording: xr.Dataset, variable: str, node: xr.DataArray | None = None,
                      activity: xr.DataArray | None = None,
                      node_rate: xr.DataArray | None = None, *, checked: bool = False
                      ) -> tuple[np.ndarray, ...]:
    """``(activity, node, xy, node_rate)`` numpy inputs of :func:`population_one`.

    ``node`` (:func:`node_index`), and for a population that is not masked (not memory
    neurons) its ``activity`` (:func:`unit_activity`) and ``node_rate`` (env, unit,
    world_node), when the caller has them already; memory neurons are decoded unmasked.
    ``checked``: the recording has passed :func:`~hippo_rep.schema.require_recording` for
    ``variable`` (not checked again).
    """
    node = node_index(recording) if node is None else node
    if activity is None or node_rate is None or variable in MEMORY_POPULATIONS:
        activity = unit_activity(recording, variable, mask_memory=False, checked=checked)
        node_rate = rate_maps_from_nodes(activity, node, recording["node_x"].values,
                                         recording["node_y"].values,
                                         node_dim=NODE_DIM)["node_rate"]
    xy = np.stack(
        [recording[c].transpose("env", "time").values.astype(np.float64) for c in ("x", "y")],
        axis=-1,
    )
    rates = node_rate.transpose("env", UNIT_DIM, NODE_DIM)
    return activity.values, node.values, xy, rates.values


def assemble(results: dict[str, dict], n_components: int | None = None) -> xr.Dataset:
    """Population results ``{variable: population_one(...)}`` as a Dataset (dim population)."""
    names = list(results)
    width = max([len(r["pca_variance_ratio"]) for r in results.values()] + [0])
    width = width if n_components is None else n_components
    ratio = np.full((len(names), width), np.nan)
    for i, v in enumerate(names):
        r = results[v]["pca_variance_ratio"][:width]
        ratio[i, : r.size] = r

    def col(key: str) -> np.ndarray:
        return np.array([results[v][key] for v in names], dtype=np.float64)

    ds = xr.Dataset(
        {
            "decode_node_accuracy": ("population", col("node_accuracy")),
            "decode_node_chance": ("population", col("node_chance")),
            "decode_xy_r2": (("population", "axis"), np.stack([results[v]["xy_r2"]
                                                               for v in names])
                             if names else np.zeros((0, 2))),
            "decode_xy_error": ("population", col("xy_error")),
            "decode_xy_error_chance": ("population", col("xy_error_chance")),
            "pca_variance_ratio": (("population", "component"), ratio),
            "participation_ratio": ("population", col("pca_participation_ratio")),
            "pca_n_components": ("population", col("pca_n_components")),
            "pca_n_samples": ("population", col("pca_n_samples")),
        },
        coords={"population": names, "axis": ["x", "y"], "component": np.arange(width)},
    )
    long = {
        "decode_node_accuracy": ("node decoding accuracy on held-out environments "
                                 "(logistic regression)", "1"),
        "decode_node_chance": ("accuracy of answering the training folds' most frequent node",
                               "1"),
        "decode_xy_r2": ("R^2 of ridge-decoded x, y on held-out environments", "1"),
        "decode_xy_error": ("mean Euclidean error of ridge-decoded position", "node spacings"),
        "decode_xy_error_chance": ("mean error of answering the training mean position",
                                   "node spacings"),
        "pca_variance_ratio": ("variance explained per principal component of node rates", "1"),
        "participation_ratio": ("participation ratio (sum l)^2 / sum l^2 of PCA eigenvalues",
                                "components"),
        "pca_n_components": (f"components explaining {PCA_VARIANCE:g} of the variance",
                             "components"),
        "pca_n_samples": ("(env, node) samples in the PCA", "1"),
    }
    for k, (name, units) in long.items():
        ds[k].attrs = {"long_name": name, "units": units}
    ds.attrs = {
        "decode_cv": "GroupKFold by environment (tested on environments not fitted on)",
        "decode_folds": DECODE_FOLDS,
        "decode_max_steps_per_env": DECODE_MAX_STEPS_PER_ENV,
        "decode_node_model": f"StandardScaler + clip ±{DECODE_CLIP:g} + "
                             f"LogisticRegression(C={DECODE_C}, max_iter={DECODE_MAX_ITER})",
        "decode_xy_model": f"StandardScaler + clip ±{DECODE_CLIP:g} + "
                           f"Ridge(alpha={DECODE_RIDGE_ALPHA})",
        "pca_samples": "(env, node) pairs visited; features = units' mean activity at the node",
    }
    return ds


def population(
    recording: xr.Dataset,
    variables: Sequence[str] | None = None,
    max_steps_per_env: int = DECODE_MAX_STEPS_PER_ENV,
    folds: int = DECODE_FOLDS,
) -> xr.Dataset:
    """Cross-environment decoding of position and PCA of each population (see module doc).

    Parameters
    ----------
    recording : xarray.Dataset
        A recording with ``node``, ``x``, ``y``; decoding needs at least 2 environments
        (else its results are NaN).
    variables : sequence of str, optional
        Populations (default: those of ``("g", "g_pi", "memory_activity")`` present).
    max_steps_per_env : int
        Time steps per environment used for decoding (evenly spaced).
    folds : int
        Folds of the environment-grouped cross-validation (at most the number of envs).

    Returns
    -------
    xarray.Dataset
        Dim ``population`` (the variables): ``decode_node_accuracy``,
        ``decode_node_chance``, ``decode_xy_r2`` (population, axis), ``decode_xy_error``,
        ``decode_xy_error_chance`` (node spacings), ``pca_variance_ratio`` (population,
        component; NaN-padded), ``participation_ratio``, ``pca_n_components``,
        ``pca_n_samples``. Attrs describe the models.

    Raises
    ------
    AnalysisError
        If the recording lacks ``x``/``y`` or a variable, or the parameters are not >= 1 / 2.
    """
    if variables is None:
        variables = [v for v in POPULATIONS if v in recording.data_vars]
    variables = list(variables)
    require_recording(recording, variables, need_xy=True)
    if int(max_steps_per_env) < 1 or int(folds) < 2:
        raise AnalysisError(
            f"max_steps_per_env must be >= 1 and folds >= 2; got {max_steps_per_env}, {folds}"
        )
    results = {
        v: population_one(*population_inputs(recording, v), int(max_steps_per_env), int(folds))
        for v in variables
    }
    ds = assemble(results)
    ds.attrs.update(decode_folds=int(folds), decode_max_steps_per_env=int(max_steps_per_env))
    return ds
