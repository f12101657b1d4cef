"""``ds.hippo``: the dataset accessor of recordings and analyses (:class:`HippoAccessor`:
``kind``, ``validate()``, ``populations``, ``population(name)``, ``summary()``,
``describe()``), registered with xarray when this module is imported (``import
hippo_rep.schema`` does).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from hippo_rep.fileio import quote
from hippo_rep.schema.analysis import (
    ANALYSIS_KIND,
    UNIT,
    VARIABLE,
    class_fractions,
    describe_analysis,
    validate_analysis,
)
from hippo_rep.schema.recording import (
    KIND,
    KIND_ATTR,
    POPULATIONS,
    SchemaError,
    describe_recording,
    validate,
)

#: Name of the dataset accessor registered by this module (``ds.hippo``).
ACCESSOR = "hippo"


@xr.register_dataset_accessor(ACCESSOR)
class HippoAccessor:
    """``ds.hippo``: the schema's view of a recording or an analysis, registered when this
    module is imported (opening a recording or an analysis does). Every error is one line
    naming the attr, variable or population at fault.
    """

    def __init__(self, ds: xr.Dataset):
        self._ds = ds

    @property
    def kind(self) -> str:
        """``"recording"`` or ``"analysis"`` (attr ``hippo_rep_kind``); SchemaError if neither."""
        kind = self._ds.attrs.get(KIND_ATTR)
        if kind not in (KIND, ANALYSIS_KIND):
            raise SchemaError(f"dataset is neither a hippo_rep recording nor an analysis: attr "
                              f"{KIND_ATTR} is {quote(kind)}, expected {KIND!r} or "
                              f"{ANALYSIS_KIND!r}")
        return kind

    def validate(self, source: str | Path | None = None) -> xr.Dataset:
        """The dataset, checked by its kind's validator: :func:`validate` (raises
        SchemaError) or :func:`validate_analysis` (raises AnalysisError), naming ``source``."""
        (validate if self.kind == KIND else validate_analysis)(self._ds, source)
        return self._ds

    @property
    def populations(self) -> tuple[str, ...]:
        """The populations held, in order: a recording's activity variables of
        :data:`POPULATIONS`, or the distinct values of an analysis' ``variable`` coord."""
        ds = self._ds
        if self.kind == KIND:
            return tuple(p for p in POPULATIONS if p in ds.data_vars)
        if VARIABLE not in ds.variables:
            raise SchemaError(f"analysis has no {VARIABLE!r} coordinate ({UNIT},)")
        return tuple(dict.fromkeys(np.asarray(ds[VARIABLE].values).astype(str).tolist()))

    def population(self, name: str) -> xr.DataArray | xr.Dataset:
        """One population: a recording's activity DataArray (env, time, <unit dim>), or the
        analysis restricted to that population's units (every variable; ``unit`` dim).
        SchemaError if the dataset does not hold ``name`` (naming those it holds)."""
        pops = self.populations
        if name not in pops:
            raise SchemaError(f"no population {name!r} in the {self.kind} "
                              f"(populations: {', '.join(pops) or 'none'})")
        if self.kind == KIND:
            return self._ds[name]
        return self._ds.isel({UNIT: np.asarray(self._ds[VARIABLE].values).astype(str) == name})

    def summary(self) -> xr.Dataset:
        """:func:`class_fractions` of an analysis: ``numerator``, ``denominator`` (int) and
        ``fraction`` (0-1), dims (population, cell_class). SchemaError for a recording."""
        if self.kind != ANALYSIS_KIND:
            raise SchemaError("summary() needs an analysis dataset (class fractions); this is "
                              f"a {self.kind}")
        return class_fractions(self._ds)

    def describe(self) -> str:
        """One line on the dataset: :func:`describe_recording` or :func:`describe_analysis`."""
        return (describe_recording if self.kind == KIND else describe_analysis)(self._ds)
