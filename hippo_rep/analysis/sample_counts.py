"""Spike counts per tracking sample, held sparsely: the activity of a session's cells without
a dense (time x cell) array.

A cell firing at a few hertz has spikes in a few percent of the 50 Hz tracking samples, so
its counts are kept as the samples that hold spikes and how many. Rate maps and the shuffle
nulls of such cells are sums of ``count / sample_interval`` per node, which
:meth:`SampleCounts.node_sums` forms by :func:`numpy.bincount` over those samples; a circular
time shift of a spike train by ``s`` samples is a shift of its sample indices modulo the
session's length. Sums are accumulated per (cell, node) in ascending sample order, the order
in which the dense sparse-matrix products of :mod:`~hippo_rep.analysis.ratemaps` and
:mod:`~hippo_rep.analysis.shuffle` add the same values, so both give the same bits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class SampleCounts:
    """Spikes per tracking sample of ``n_units`` cells, sparse (no sample without a spike).

    Attributes
    ----------
    sample : numpy.ndarray, (nnz,) int64
        Tracking sample index of each entry, strictly increasing within a unit.
    count : numpy.ndarray, (nnz,) int64
        Spikes of the unit in that sample (>= 1).
    offsets : numpy.ndarray, (n_units + 1,) int64
        Unit ``u``'s entries are ``[offsets[u], offsets[u + 1])``.
    n_time : int
        Tracking samples of the session.
    sample_interval : float
        Seconds per sample: the activity is ``count / sample_interval`` (Hz).
    """

    sample: np.ndarray
    count: np.ndarray
    offsets: np.ndarray
    n_time: int
    sample_interval: float

    @property
    def n_units(self) -> int:
        """Number of units."""
        return int(self.offsets.size - 1)

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        return int(self.sample.nbytes + self.count.nbytes + self.offsets.nbytes)

    def values(self) -> np.ndarray:
        """Activity of each entry, Hz: ``count / sample_interval`` (float64), the very
        value a dense array of rates holds at that sample."""
        return self.count.astype(np.float64) / self.sample_interval

    def unit_of_entry(self) -> np.ndarray:
        """(nnz,) int64: the unit (0..n_units-1) of each entry."""
        return np.repeat(np.arange(self.n_units, dtype=np.int64), np.diff(self.offsets))

    def take(self, units: np.ndarray) -> SampleCounts:
        """The units at positions ``units`` (1-D int), in that order."""
        units = np.asarray(units, dtype=np.int64).ravel()
        starts, ends = self.offsets[units], self.offsets[units + 1]
        sizes = ends - starts
        idx = (np.concatenate([np.arange(a, b) for a, b in zip(starts, ends, strict=True)])
               if units.size else np.zeros(0, dtype=np.int64))
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return SampleCounts(self.sample[idx], self.count[idx], offsets, self.n_time,
                            self.sample_interval)

    def dense(self) -> np.ndarray:
        """The activity as a dense ``(time, unit)`` float64 array, Hz (zeros without
        spikes): what :func:`~hippo_rep.analysis.sessions.session_activity` returns."""
        out = np.zeros((self.n_time, self.n_units))
        out[self.sample, self.unit_of_entry()] = self.values()
        return out

    def node_sums(self, node: np.ndarray, n_nodes: int, shift: int = 0) -> np.ndarray:
        """Activity summed per node, ``(unit, node)`` float64, of the activity circularly
        shifted by ``shift`` samples.

        Parameters
        ----------
        node : numpy.ndarray, (time,) int
            Node of every tracking sample (negative = dropped).
        n_nodes : int
            Number of nodes.
        shift : int
            The shifted activity at sample ``t`` is the activity at ``(t - shift) mod T``:
            a spike in sample ``i`` counts in the node of sample ``(i + shift) mod T``.

        Returns
        -------
        numpy.ndarray, (n_units, n_nodes)
            Sums of ``count / sample_interval``, added in ascending sample order per (unit,
            node) (the order of the dense products, so the same bits).
        """
        i = self.sample if shift == 0 else (self.sample + shift) % self.n_time
        nd = np.asarray(node)[i]
        ok = nd >= 0
        key = self.unit_of_entry()[ok] * n_nodes + nd[ok]
        sums = np.bincount(key, weights=self.values()[ok], minlength=self.n_units * n_nodes)
        return sums.reshape(self.n_units, n_nodes)


def sample_counts(sample: np.ndarray, unit: np.ndarray, n_units: int, n_time: int,
                  sample_interval: float) -> SampleCounts:
    """:class:`SampleCounts` of spikes given by their sample and unit.

    Parameters
    ----------
    sample : numpy.ndarray, (spike,) int
        Tracking sample of each spike, in [0, n_time).
    unit : numpy.ndarray, (spike,) int
        Unit of each spike, in [0, n_units); spikes grouped by unit in ascending order and
        sorted by sample within a unit (as a session's spike times are).
    n_units, n_time : int
        Units and tracking samples.
    sample_interval : float
        Seconds per sample.
    """
    sample = np.asarray(sample, dtype=np.int64)
    unit = np.asarray(unit, dtype=np.int64)
    key = unit * n_time + sample
    if key.size and (np.diff(key) < 0).any():  # robust to an unsorted caller
        key = np.sort(key, kind="stable")
    first = np.ones(key.size, dtype=bool)
    first[1:] = key[1:] != key[:-1]
    starts = np.flatnonzero(first)
    count = np.diff(np.append(starts, key.size)).astype(np.int64)
    key = key[starts]
    u, s = np.divmod(key, n_time)
    offsets = np.zeros(n_units + 1, dtype=np.int64)
    np.cumsum(np.bincount(u, minlength=n_units), out=offsets[1:])
    return SampleCounts(s, count, offsets, int(n_time), float(sample_interval))


def concat_counts(parts: list[SampleCounts], n_time: int, sample_interval: float
                  ) -> SampleCounts:
    """The units of ``parts`` one after the other (all of ``n_time`` samples of
    ``sample_interval`` s); an empty list gives no unit."""
    if not parts:
        return SampleCounts(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                            np.zeros(1, dtype=np.int64), int(n_time), float(sample_interval))
    if len(parts) == 1:
        return parts[0]
    sizes = np.concatenate([np.diff(p.offsets) for p in parts])
    offsets = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return SampleCounts(np.concatenate([p.sample for p in parts]),
                        np.concatenate([p.count for p in parts]), offsets, int(n_time),
                        float(sample_interval))
