"""Exports of recordings to tools that neuroscientists use.

:func:`to_pynapple` turns one environment of a recording (see :mod:`hippo_rep.schema`) into
pynapple objects (https://pynapple.org), which need the optional ``pynapple`` package.
"""

from __future__ import annotations

import numpy as np

from hippo_rep import schema as S

#: Per-step coordinates exported as ``Tsd``.
PYNAPPLE_TSD = (S.X, S.Y, S.NODE, S.ACTION, S.OBSERVATION, S.PREDICTION, S.CORRECT,
                S.STEP_TYPE)


def to_pynapple(ds, env: int = 0, step_duration: float = 1.0) -> dict:
    """One environment of a recording as pynapple objects.

    Parameters
    ----------
    ds : xarray.Dataset
        A recording (validated first).
    env : int
        Which environment (position along ``env``); each is one session.
    step_duration : float
        Seconds per step of the walk: step ``t`` is at time ``t * step_duration`` s
        (pynapple counts time in seconds; the walk has no clock of its own).

    Returns
    -------
    dict
        ``g``, ``g_pi``: ``TsdFrame`` (time × g_unit, columns = unit index);
        ``memory_activity``: ``TsdFrame`` (time × the memory neurons this environment
        wrote, columns = memory index, metadata ``memory_node``, ``memory_time``,
        ``memory_observation``); ``x``, ``y`` (positions, lattice units), ``node``,
        ``action``, ``observation``, ``prediction``, ``correct`` (0/1), ``step_type``:
        ``Tsd``.

    Raises
    ------
    ImportError
        pynapple is not installed (with how to install it).
    SchemaError
        ``ds`` is not a recording.
    IndexError
        ``env`` is out of range.
    """
    try:
        import pynapple as nap
    except ImportError:
        raise ImportError("to_pynapple needs the optional package pynapple: "
                          "pip install pynapple") from None
    S.validate(ds)
    n_env = ds.sizes[S.ENV]
    if not -n_env <= env < n_env:
        raise IndexError(f"env {env} out of range: the recording has {n_env} environments")
    one = ds.isel({S.ENV: env})
    t = np.asarray(one[S.TIME].values, dtype=np.float64) * float(step_duration)
    out = {}
    for name in (S.G, S.G_PI):
        out[name] = nap.TsdFrame(t=t, d=np.asarray(one[name].values),
                                 columns=np.asarray(one[S.G_UNIT].values))
    mem_time = np.asarray(one[S.MEMORY_TIME].values)
    used = mem_time >= 0
    metadata = {name: np.asarray(one[name].values)[used] for name in S.MEMORY_COORDS}
    out[S.MEMORY_ACTIVITY] = nap.TsdFrame(
        t=t, d=np.asarray(one[S.MEMORY_ACTIVITY].values)[:, used],
        columns=np.asarray(one[S.MEMORY].values)[used], metadata=metadata)
    for name in PYNAPPLE_TSD:
        d = np.asarray(one[name].values)
        if d.dtype == bool:
            d = d.astype(np.int8)
        out[name] = nap.Tsd(t=t, d=d)
    return out
