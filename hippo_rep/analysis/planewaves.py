"""Plane-wave decomposition of rate maps: how many waves, their lengths and angles.

Gridness-60 cannot tell a hexagonal grid (three plane waves of equal length 60 degrees
apart) from two equal waves 55-75 degrees apart, which also score 0.6-0.9 (measured on
synthetic maps).
:func:`plane_waves` answers the question directly, as Krupic, Burgess & O'Keefe (2012,
Science) decomposed entorhinal rate maps into plane waves: per map,

1. subtract the mean of the finite bins; unvisited (NaN) bins get weight 0 (set to 0 after
   the subtraction) and take no part in any fit;
2. matching pursuit, :data:`MAX_COMPONENTS` times: the strongest peak of the residual's 2D
   power spectrum (``scipy.fft.rfft2`` zero-padded to :data:`PAD_FACTOR` times the map size),
   among wavelengths from :data:`MIN_WAVELENGTH` to :data:`MAX_WAVELENGTH_FRACTION` times the
   map's shorter side, is refined by least squares on the finite bins (Gauss-Newton on the
   wave vector and the cosine/sine amplitudes, a step kept only when it lowers the residual)
   and subtracted;
3. the :data:`JOINT_COMPONENTS` strongest components are refined jointly by the same least
   squares (so that waves whose spectral peaks overlap on small maps do not bias each other);
4. a component's variance share is its variance as a plane wave, amplitude² / 2, divided by
   the map's variance over the finite bins (so equal waves have equal shares even where,
   on small maps, they are far from orthogonal and the variance they explain together
   cannot be split between them); the counted waves' share together
   (``plane_wave_share``) is the variance their fitted sum explains;
5. components are taken in order of decreasing share and *counted* as fundamental waves when
   their share is at least :data:`MIN_WAVE_SHARE`, at least :data:`CHANCE_SHARE_FACTOR` times
   4 / (finite bins) (what a fitted wave explains of white noise) and at least
   :data:`MIN_RELATIVE_SHARE` of
   the strongest counted wave's, their wavelength (after refinement) is still within the
   searched range, and they are neither a duplicate of a counted wave (wave
   vector within :data:`DUPLICATE_TOL` of it) nor a harmonic: an integer combination
   ``m k_i + n k_j`` (``|m|, |n| <=`` :data:`HARMONIC_MAX_ORDER`, ``|m| + |n| >= 2``) of
   counted waves, within :data:`HARMONIC_TOL`, whose wave number is at least
   :data:`HARMONIC_MIN_RATIO` times theirs. (The third wave of a hexagonal grid is the
   difference of the other two but just as long, so it is counted; the harmonics that
   rectification adds, ``k_i + k_j`` at sqrt(3) and ``2 k_i`` at 2 times the wave number of
   a hexagonal grid, and ``k_1 + k_2`` at sqrt(2) of a square one, are not.) At most
   :data:`MAX_WAVES` are counted.

The three strongest counted waves' *triad phase* ``psi = phi_1 + phi_2 + phi_3`` (each wave
``A_i cos(k_i . (p - c) - phi_i)`` about the map's centre ``c``, its wave vector in [0, 180)
degrees, then taken as ``s_i k_i`` with the signs ``s_i`` (``s_1 = +1``) that make
``sum s_i k_i ~ 0`` and ``psi = sum s_i phi_i``) does not depend on where the pattern sits:
the three waves form a lattice of peaks (all in phase at the nodes of a lattice, as in a
rectified grid) when psi is near 0, and a lattice of troughs when it is near 180 degrees;
random phases spread psi uniformly. psi is NaN (``triad_phase_reason``) for fewer than three
waves, or three whose signed sum is more than :data:`TRIAD_CLOSURE_TOL` of their wave number
("not a triad").

A map is ``hexagonal`` when it has three counted waves whose wavelengths differ by at most a
factor :data:`HEXAGONAL_WAVELENGTH_RATIO`, whose directions are pairwise
60 ± :data:`HEXAGONAL_ANGLE_TOL` degrees apart (both calibrated on the model-grown lattices
of :mod:`~hippo_rep.analysis.controls`, sheared ones included), and which form a lattice:
``|psi| <`` :data:`LATTICE_PHASE_TOL` for a non-negative map, within it of 0 or 180 degrees
for a signed one (``lattice`` says which); ``square`` when it has two waves of wavelengths
within :data:`EQUAL_WAVELENGTH_RATIO` 90 ± :data:`SQUARE_ANGLE_TOL` degrees apart. Neither
is a map with a single field (``single_field``: its bins above :data:`SINGLE_FIELD_LEVEL` of
its range form one connected region without holes), however many waves it is fitted with.
The largest angle deviation from 60 degrees and the wavelength ratio are reported beside the
boolean.

Conventions: maps ``[row = y, col = x]``; position (x, y) = (col, row) index; wavelengths in
bins (the plane wave's period, not the peak-to-peak spacing of a grid, which for a hexagonal
grid is ``wavelength * 2 / sqrt(3)``); angles of the wave vector in degrees from +x towards +y,
in [0, 180).
"""

from __future__ import annotations

import functools

import numpy as np
import xarray as xr
from scipy import fft, ndimage

from .kernels import Kernel, Output

#: Fundamental waves reported per map (the ``wave`` dim) and the cap on ``n_waves``.
MAX_WAVES = 3

#: Matching-pursuit components fitted per map: room for three fundamentals and the strongest
#: harmonic of a rectified grid (5 found the same waves on the tests' maps, 25% slower).
MAX_COMPONENTS = 4

#: The spectrum is zero-padded to this many times the map's longer side (finer initial
#: wave vectors for the least-squares refinement).
PAD_FACTOR = 2

#: Shortest wavelength searched, bins (the Nyquist limit of one bin).
MIN_WAVELENGTH = 2.0

#: Longest wavelength searched, as a fraction of the map's shorter side: at least one full
#: period must fit in the map, otherwise a "wave" is only a gradient or a single field.
MAX_WAVELENGTH_FRACTION = 1.0

#: The joint least-squares refinement fits the wave vectors and amplitudes of this many
#: strongest components together (the weaker ones, harmonics, are held fixed): the cost
#: grows with the square of it.
JOINT_COMPONENTS = 3

#: Gauss-Newton iterations of the joint refinement.
GN_ITERATIONS = 5

#: Gauss-Newton iterations of each single-wave refinement during the pursuit (the joint
#: refinement finishes the job; without this step it did not always converge for two waves
#: 55 degrees apart).
PURSUIT_ITERATIONS = 1

#: Levenberg damping of the Gauss-Newton steps, relative to the mean diagonal of the
#: normal matrix.
GN_DAMPING = 1e-3

#: A counted wave explains at least this share of the map's variance.
MIN_WAVE_SHARE = 0.1

#: ... and at least this many times 4 / (finite bins), the share a wave's four fitted
#: parameters explain of white noise on average: on white-noise maps of 11 x 11 the
#: strongest fitted wave's share has its 95th percentile at 4.3 times that (0.143; 99th:
#: 0.156; measured with this code, 300 maps), on 16 x 16 to 40 x 40 at 4.7-5.3 times
#: (below :data:`MIN_WAVE_SHARE` there).
CHANCE_SHARE_FACTOR = 4.0

#: ... and at least this fraction of the strongest counted wave's share.
MIN_RELATIVE_SHARE = 0.25

#: A component whose wave vector is within this fraction of a counted wave's wave number of
#: it (or of its negative) is a duplicate of it.
DUPLICATE_TOL = 0.15

#: A component within this fraction of its own wave number of an integer combination of
#: counted waves is a harmonic of them (when also :data:`HARMONIC_MIN_RATIO` shorter).
HARMONIC_TOL = 0.12

#: A harmonic's wave number is at least this many times that of the waves it combines
#: (sqrt(2) for the first harmonic of a square grid, sqrt(3) of a hexagonal one, 2 of a band).
HARMONIC_MIN_RATIO = 1.25

#: Largest integer coefficient in the harmonic test.
HARMONIC_MAX_ORDER = 2

#: Waves of a hexagonal or square pattern have wavelengths within this ratio (longest /
#: shortest).
EQUAL_WAVELENGTH_RATIO = 1.2

#: Hexagonal: every pair of the three waves is 60 degrees apart within this tolerance.
#: Calibrated on the model-grown lattices of :mod:`~hippo_rep.analysis.controls`
#: (``benchmarks/calibrate_hexagonal.py``, 32 maps each, seed 0): the lattices of peaks
#: deviate by at most 7.9 degrees (periodic √3/2 box) and 8.4 (square box with walls), with
#: wavelength ratios up to 1.14 and 1.07; in a periodic 30 x 30 box, which cannot hold an
#: unsheared lattice, by up to 18.2 degrees and 1.25 (place sigma 0.99 bins) and 15.9 and
#: 1.30 (sigma 1.2). The tanh and linear negatives form no lattice of peaks. The
#: triad-phase (lattice) rule, not these tolerances, rejects superpositions of three waves
#: that form no lattice. (Before it: 10 degrees and 1.2.)
HEXAGONAL_ANGLE_TOL = 20.0

#: Hexagonal: the three waves' wavelengths are within this ratio (longest / shortest).
#: Calibrated on the model-grown controls (:mod:`~hippo_rep.analysis.controls`): see
#: :data:`HEXAGONAL_ANGLE_TOL`.
HEXAGONAL_WAVELENGTH_RATIO = 1.35

#: A triad: the three waves' wave vectors, each taken with the sign that makes their sum
#: smallest, sum to at most this fraction of their mean wave number (waves of a lattice sum
#: to 0 whatever its shear; the rest give a NaN triad phase with reason "not a triad").
#: psi is taken about the map's centre: for a closure c it would change by up to
#: c |k| r radians about a point r bins away. Measured on the controls' lattices of peaks
#: (``benchmarks/calibrate_hexagonal.py``): closure at most 0.018 (periodic √3/2 box),
#: 0.123 (square box), 0.113 (periodic 30 x 30); frustrated lattices there whose strongest
#: three waves come from two triads reach 0.23-0.72 (not a triad).
TRIAD_CLOSURE_TOL = 0.2

#: A lattice of peaks has a triad phase within this many degrees of 0, of troughs within it
#: of 180 (a rectified grid's waves have psi = 0; the random phases of three superposed
#: waves spread psi uniformly).
LATTICE_PHASE_TOL = 45.0

#: A map is non-negative when its smallest finite bin is at least ``-NONNEGATIVE_RTOL`` times
#: its largest absolute value; it is hexagonal only as a lattice of peaks (a signed map also
#: as a lattice of troughs).
NONNEGATIVE_RTOL = 1e-6

#: A map is a single field (not a wave pattern: never hexagonal or square, and
#: :func:`~hippo_rep.analysis.classify` gives it no band, two-wave or square class) when its
#: finite bins above this fraction of its range (from its minimum) form one connected region.
SINGLE_FIELD_LEVEL = 0.5

#: ... counting regions (and holes in them) of at least this many bins: noise of 5% of the
#: peak makes islands and dips of 1-2 bins at the level of a single Gaussian field.
SINGLE_FIELD_MIN_BINS = 3

#: Square: the two waves are 90 degrees apart within this tolerance.
SQUARE_ANGLE_TOL = 10.0

#: Maps need at least this many bins along y and x (smaller ones get reason "too small").
MIN_SIZE = 5

#: ... and at least this many finite bins (else reason "too few finite bins").
MIN_FINITE_BINS = 16

#: A map whose finite bins vary by less than this (relative to its largest absolute value,
#: or absolutely for a map of zeros) is constant.
CONSTANT_RTOL = 1e-10

#: Why a map's decomposition is NaN/0 (index = the ``plane_wave_reason`` code).
REASONS = ("", "too small", "all NaN", "too few finite bins", "constant")

#: What the three waves form (index = the ``lattice`` code): '' none (psi more than
#: :data:`LATTICE_PHASE_TOL` from 0 and 180, or NaN), a lattice of peaks, of troughs.
LATTICE_KINDS = ("", "peaks", "troughs")

#: Why the triad phase is NaN (index = the ``triad_phase_reason`` code).
TRIAD_REASONS = ("", "decomposition failed", "fewer than three waves", "not a triad")

#: The dim of the per-wave outputs.
WAVE_DIM = "wave"


@functools.lru_cache(maxsize=32)
def _geometry(ny: int, nx: int) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """Bin coordinates (N,), the padded FFT size and the search mask of the rfft2 grid."""
    y, x = np.indices((ny, nx), dtype=np.float64)
    p = fft.next_fast_len(PAD_FACTOR * max(ny, nx), real=True)
    ky = 2 * np.pi * fft.fftfreq(p)[:, None]
    kx = 2 * np.pi * fft.rfftfreq(p)[None, :]
    kk = np.hypot(kx, ky)
    k_min = 2 * np.pi / (MAX_WAVELENGTH_FRACTION * min(ny, nx))
    k_max = 2 * np.pi / MIN_WAVELENGTH
    search = (kk >= k_min * (1 - 1e-9)) & (kk <= k_max * (1 + 1e-9))
    return x.ravel(), y.ravel(), p, search


def _waves(kx, ky, amp, x, y):
    """cos/sin design (B, C, N) and the fitted waves (B, C, N) of components (B, C).

    ``x`` and ``y`` are the bins' column and row indices of a full (ny, nx) raster (as
    :func:`_geometry` returns them); the phases are separable, so the cosines and sines are
    products of per-row and per-column ones (cheaper than a cos/sin per bin).
    """
    ny, nx = int(y[-1]) + 1, int(x[-1]) + 1
    xs, ys = x[:nx], y[::nx]
    px, py = kx[..., None] * xs, ky[..., None] * ys
    cx, sx, cy, sy = np.cos(px), np.sin(px), np.cos(py), np.sin(py)
    shape = (*kx.shape, ny * nx)
    c = (cy[..., :, None] * cx[..., None, :] - sy[..., :, None] * sx[..., None, :]).reshape(shape)
    s = (sy[..., :, None] * cx[..., None, :] + cy[..., :, None] * sx[..., None, :]).reshape(shape)
    fit = amp[..., 0, None] * c + amp[..., 1, None] * s
    return c, s, fit


def _refine(kx, ky, amp, r, w, x, y, iterations=None):
    """Joint Gauss-Newton of C waves (B, C) fitted to r (B, N) with weights w (B, N).

    Parameters per wave: kx, ky, cos and sin amplitudes. A step is kept per map only when
    it lowers the weighted residual sum of squares.
    """
    b, n_c = kx.shape
    c, s, fit = _waves(kx, ky, amp, x, y)
    cur = ((r - fit.sum(axis=1)) ** 2 * w).sum(axis=1)
    eye = np.eye(4 * n_c)
    for _ in range(GN_ITERATIONS if iterations is None else iterations):
        res = (r - fit.sum(axis=1)) * w  # (B, N)
        dph = -amp[..., 0, None] * s + amp[..., 1, None] * c  # d fit / d phase
        jac = np.stack([dph * x, dph * y, c, s], axis=2).reshape(b, 4 * n_c, -1)
        jw = jac * w[:, None, :]
        a = jw @ jac.transpose(0, 2, 1)  # (B, 4C, 4C)
        g = jw @ res[..., None]  # (B, 4C, 1)
        diag = np.einsum("bii->bi", a).mean(axis=1)
        a = a + (GN_DAMPING * diag + 1e-12)[:, None, None] * eye
        try:
            step = np.linalg.solve(a, g)[..., 0].reshape(b, n_c, 4)
        except np.linalg.LinAlgError:
            break
        nkx, nky = kx + step[..., 0], ky + step[..., 1]
        namp = amp + step[..., 2:]
        nc, ns, nfit = _waves(nkx, nky, namp, x, y)
        new = ((r - nfit.sum(axis=1)) ** 2 * w).sum(axis=1)
        ok = np.isfinite(new) & (new < cur)
        if not ok.any():
            break
        kx = np.where(ok[:, None], nkx, kx)
        ky = np.where(ok[:, None], nky, ky)
        amp = np.where(ok[:, None, None], namp, amp)
        okn = ok[:, None, None]
        c, s, fit = (np.where(okn, new_, old) for new_, old in ((nc, c), (ns, s), (nfit, fit)))
        cur = np.where(ok, new, cur)
    return kx, ky, amp


def _amplitudes(kx, ky, r, w, x, y):
    """Least-squares cos/sin amplitudes (B, 2) of one wave (B,) per map."""
    ph = kx[:, None] * x + ky[:, None] * y
    c, s = np.cos(ph) * w, np.sin(ph) * w
    a = np.stack([np.stack([(c * c).sum(1), (c * s).sum(1)], -1),
                  np.stack([(c * s).sum(1), (s * s).sum(1)], -1)], -2)
    g = np.stack([(c * r).sum(1), (s * r).sum(1)], -1)
    a = a + 1e-12 * np.eye(2)
    return np.linalg.solve(a, g[..., None])[..., 0]


def _interpolate_peak(spec, iy, ix, p):
    """Wave vector (kx, ky) of the spectral peak at rfft2 index (iy, ix), refined by a
    parabola through the log power of the peak and its neighbours along each axis."""
    b = np.arange(spec.shape[0])
    ny_s, nx_s = spec.shape[1:]
    logp = np.log(np.maximum(spec, 1e-300))

    def offset(lo, mid, hi):
        den = lo - 2 * mid + hi
        d = np.where(den < 0, 0.5 * (lo - hi) / den, 0.0)
        return np.clip(np.nan_to_num(d), -0.5, 0.5)

    mid = logp[b, iy, ix]
    dy = offset(logp[b, (iy - 1) % ny_s, ix], mid, logp[b, (iy + 1) % ny_s, ix])
    inner = (ix > 0) & (ix < nx_s - 1)
    dx = np.where(inner, offset(logp[b, iy, np.maximum(ix - 1, 0)], mid,
                                logp[b, iy, np.minimum(ix + 1, nx_s - 1)]), 0.0)
    fy = np.where(iy < (p + 1) // 2, iy, iy - p) + dy  # signed frequency index
    return 2 * np.pi * (ix + dx) / p, 2 * np.pi * fy / p


def _reasons(maps: np.ndarray, ny: int, nx: int) -> np.ndarray:
    fin = np.isfinite(maps)
    n_fin = fin.sum(axis=(1, 2))
    code = np.zeros(maps.shape[0], dtype=np.int64)
    if ny < MIN_SIZE or nx < MIN_SIZE:
        code[:] = REASONS.index("too small")
        return code
    hi = np.where(fin, maps, -np.inf).max(axis=(1, 2))
    lo = np.where(fin, maps, np.inf).min(axis=(1, 2))
    scale = np.where(fin, np.abs(maps), 0.0).max(axis=(1, 2))
    const = (hi - lo) <= CONSTANT_RTOL * np.maximum(scale, 1.0)
    code[const] = REASONS.index("constant")
    code[n_fin < MIN_FINITE_BINS] = REASONS.index("too few finite bins")
    code[n_fin == 0] = REASONS.index("all NaN")
    return code


def _count(kx, ky, share, k_min, floor):
    """Which components (B, C), in order of decreasing share, are counted fundamentals
    (a wave number below ``k_min``, a wavelength longer than searched, is never counted;
    ``floor`` (B,) is each map's smallest material share)."""
    b, n_c = kx.shape
    kn = np.hypot(kx, ky)
    counted = np.zeros((b, n_c), dtype=bool)
    best = np.zeros(b)
    n = np.zeros(b, dtype=np.int64)
    orders = np.arange(-HARMONIC_MAX_ORDER, HARMONIC_MAX_ORDER + 1)
    mm, nn = np.meshgrid(orders, orders, indexing="ij")
    keep = (np.abs(mm) + np.abs(nn)) >= 2
    mm, nn = mm[keep].astype(np.float64), nn[keep].astype(np.float64)  # (M,)
    for c in range(n_c):
        ok = (share[:, c] >= floor) & (share[:, c] >= MIN_RELATIVE_SHARE * best)
        ok &= n < MAX_WAVES
        ok &= np.isfinite(kn[:, c]) & (kn[:, c] >= k_min) & (kn[:, c] <= np.pi * (1 + 1e-6))
        kc = np.stack([kx[:, c], ky[:, c]], -1)  # (B, 2)
        for i in range(c):
            ki = np.stack([kx[:, i], ky[:, i]], -1)
            ci = counted[:, i]
            for sign in (1.0, -1.0):
                dup = np.hypot(*(kc - sign * ki).T) <= DUPLICATE_TOL * kn[:, i]
                ok &= ~(ci & dup)
            for j in range(i, c):
                kj = np.stack([kx[:, j], ky[:, j]], -1)
                cj = counted[:, j]
                comb = mm[None, :, None] * ki[:, None, :] + nn[None, :, None] * kj[:, None, :]
                dist = np.hypot(*(kc[:, None, :] - comb).transpose(2, 0, 1))  # (B, M)
                # a combination of one wave with itself (i == j) is m k_i: only |m + n| >= 2
                if i == j:
                    valid = np.abs(mm + nn) >= 2
                    kmax = kn[:, i]
                else:
                    valid = np.ones_like(mm, dtype=bool)
                    kmax = np.maximum(kn[:, i], kn[:, j])
                close = (dist <= HARMONIC_TOL * kn[:, c, None]) & valid[None, :]
                harm = close.any(axis=1) & (kn[:, c] >= HARMONIC_MIN_RATIO * kmax)
                ok &= ~(ci & cj & harm)
        counted[:, c] = ok
        best = np.where(ok & (best == 0), share[:, c], best)
        n += ok
    return counted


def _single_field(maps: np.ndarray) -> np.ndarray:
    """Whether each (B, ny, nx) map's bins above :data:`SINGLE_FIELD_LEVEL` of its range
    (finite bins) form one connected region (4-connectivity) without holes (enclosed finite
    bins below the level; enclosed NaN bins are no hole), counting only regions and holes of
    at least :data:`SINGLE_FIELD_MIN_BINS` bins (noise at the level makes smaller ones)."""
    fin = np.isfinite(maps)
    lo = np.where(fin, maps, np.inf).min(axis=(1, 2))[:, None, None]
    hi = np.where(fin, maps, -np.inf).max(axis=(1, 2))[:, None, None]
    above = fin & (np.where(fin, maps, -np.inf) > lo + SINGLE_FIELD_LEVEL * (hi - lo))
    structure = np.zeros((3, 3, 3), dtype=bool)
    structure[1] = ndimage.generate_binary_structure(2, 1)
    def regions(mask):
        """Regions of at least SINGLE_FIELD_MIN_BINS bins per map (B,)."""
        lab, n = ndimage.label(mask, structure)
        size = np.bincount(lab.ravel(), minlength=n + 1)
        big = size >= SINGLE_FIELD_MIN_BINS
        big[0] = False
        idx = np.flatnonzero(big)
        if idx.size == 0:
            return np.zeros(mask.shape[0], dtype=np.int64)
        # the map of each big region: where its first bin lies
        first = ndimage.minimum(np.arange(lab.size).reshape(lab.shape), lab, idx)
        which = (np.asarray(first, dtype=np.int64) // (lab.shape[1] * lab.shape[2]))
        return np.bincount(which, minlength=mask.shape[0])

    one = regions(above) == 1
    # a region with holes (the troughs of a honeycomb of ridges) is no field: pad with empty
    # maps so that the first and last maps' bins are not on the stack's border; unvisited
    # (NaN) bins make no hole
    pad = np.pad(above, ((1, 1), (0, 0), (0, 0)))
    filled = ndimage.binary_fill_holes(pad, structure)[1:-1]
    holes = regions(filled & ~above & fin) > 0
    return one & ~holes


def _triad_phase(kx, ky, amp, n, ny, nx):
    """Triad phase psi (degrees), closure and reason code of the three counted waves.

    ``kx``, ``ky`` (B, 3), ``amp`` (B, 3, 2) cos/sin amplitudes of the counted waves (first
    ``n`` (B,) of them). Each wave is ``A cos(k . (p - c) - phi)`` about the map's centre
    ``c``, its wave vector in [0, 180) degrees; the signs ``s`` (s_1 = +1) minimising
    ``|sum s_i k_i|`` orient the triad so that ``sum s_i k_i ~ 0``, and
    psi = ``sum s_i phi_i``, wrapped to (-180, 180].
    """
    b = kx.shape[0]
    psi, closure = np.full((2, b), np.nan)
    reason = np.where(n < 3, TRIAD_REASONS.index("fewer than three waves"), 0)
    three = n >= 3
    if three.any():
        cx, cy = (nx - 1) / 2.0, (ny - 1) / 2.0
        k = np.stack([kx[:, :3], ky[:, :3]], -1)  # (B, 3, 2)
        phi = np.arctan2(amp[:, :3, 1], amp[:, :3, 0]) - (k[..., 0] * cx + k[..., 1] * cy)
        # each wave vector taken in [0, 180) degrees, as wave_angle reports it (A cos(k.p -
        # phi) = A cos(-k.p + phi)): fixes the sign of psi given the waves' order
        ang = np.mod(np.arctan2(k[..., 1], k[..., 0]), 2 * np.pi)
        flip = np.where((ang >= np.pi - 1e-12) & (ang < 2 * np.pi - 1e-12), -1.0, 1.0)
        k, phi = k * flip[..., None], phi * flip
        signs = np.array([[1, 1, 1], [1, 1, -1], [1, -1, 1], [1, -1, -1]], dtype=np.float64)
        tot = np.einsum("sw,bwd->bsd", signs, k)  # (B, 4, 2)
        mag = np.linalg.norm(k, axis=-1).mean(-1)  # (B,)
        best = np.argmin(np.nan_to_num(np.linalg.norm(tot, axis=-1), nan=np.inf), axis=1)
        s = signs[best]  # (B, 3)
        close = np.linalg.norm(np.take_along_axis(tot, best[:, None, None], 1)[:, 0], axis=-1)
        close = close / mag
        ps = np.rad2deg(np.angle(np.exp(1j * (s * phi).sum(-1))))
        ps = np.where(ps <= -180.0 + 1e-9, 180.0, ps)
        triad = three & (close <= TRIAD_CLOSURE_TOL)
        closure = np.where(three, close, np.nan)
        psi = np.where(triad, ps, np.nan)
        reason = np.where(three & ~triad, TRIAD_REASONS.index("not a triad"), reason)
    return psi, closure, reason


def _fold(d):
    """Angle differences (degrees, mod 180) folded into [0, 90]."""
    d = np.mod(d, 180.0)
    return np.minimum(d, 180.0 - d)


@np.errstate(all="ignore")
def _plane_waves_block(maps: np.ndarray) -> tuple[np.ndarray, ...]:
    """Plane-wave decomposition of (B, ny, nx) maps (see the module doc); quiet on NaN."""
    b, ny, nx = maps.shape
    code = _reasons(maps, ny, nx)
    out_n = np.zeros(b, dtype=np.int64)
    out_hex, out_sq = np.zeros((2, b), dtype=bool)
    out_share, out_expl = np.full((2, b), np.nan)
    out_len, out_ang, out_wshare = np.full((3, b, MAX_WAVES), np.nan)
    out_psi, out_dev, out_ratio, out_closure = np.full((4, b), np.nan)
    out_lattice = np.zeros(b, dtype=np.int64)
    out_nonneg, out_single = np.zeros((2, b), dtype=bool)
    out_treason = np.full(b, TRIAD_REASONS.index("decomposition failed"), dtype=np.int64)
    good = np.flatnonzero(code == 0)
    if good.size:
        x, y, p, search = _geometry(ny, nx)
        m = maps[good].reshape(good.size, -1)
        w = np.isfinite(m).astype(np.float64)
        mean = np.where(w > 0, m, 0.0).sum(1) / w.sum(1)
        r0 = np.where(w > 0, m - mean[:, None], 0.0)
        ss = (r0**2).sum(1)
        r = r0.copy()
        n_c = MAX_COMPONENTS
        kx = np.zeros((good.size, n_c))
        ky = np.zeros((good.size, n_c))
        amp = np.zeros((good.size, n_c, 2))
        for c in range(n_c):
            spec = np.abs(fft.rfft2(r.reshape(-1, ny, nx), s=(p, p))) ** 2
            spec = np.where(search, spec, -1.0).reshape(good.size, -1)
            iy, ix = np.unravel_index(spec.argmax(axis=1), search.shape)
            k0x, k0y = _interpolate_peak(spec.reshape(-1, *search.shape), iy, ix, p)
            a0 = _amplitudes(k0x, k0y, r, w, x, y)
            k1x, k1y, a1 = _refine(k0x[:, None], k0y[:, None], a0[:, None, :], r, w, x, y,
                                   PURSUIT_ITERATIONS)
            kx[:, c], ky[:, c], amp[:, c] = k1x[:, 0], k1y[:, 0], a1[:, 0]
            r = r - _waves(k1x, k1y, a1, x, y)[2][:, 0] * w
        # a component next to an earlier (stronger) one is the same wave split in two by
        # noise: drop it before the joint refinement, which would otherwise fit noise with it
        kn = np.hypot(kx, ky)
        for c in range(1, n_c):
            for i in range(c):
                for sign in (1.0, -1.0):
                    d = np.hypot(kx[:, c] - sign * kx[:, i], ky[:, c] - sign * ky[:, i])
                    amp[d <= DUPLICATE_TOL * kn[:, i], c] = 0.0
        # joint refinement of the JOINT_COMPONENTS strongest (the others held fixed)
        fits = _waves(kx, ky, amp, x, y)[2] * w[:, None, :]
        top = np.argsort(-(fits**2).sum(2), axis=1)[:, :JOINT_COMPONENTS]
        rest = np.ones((good.size, n_c), dtype=bool)
        np.put_along_axis(rest, top, False, axis=1)
        fixed = (fits * rest[..., None]).sum(1)
        tk = [np.take_along_axis(a, top, 1) for a in (kx, ky)]
        ta = np.take_along_axis(amp, top[..., None], 1)
        tk[0], tk[1], ta = _refine(tk[0], tk[1], ta, r0 - fixed, w, x, y)
        np.put_along_axis(kx, top, tk[0], 1)
        np.put_along_axis(ky, top, tk[1], 1)
        np.put_along_axis(amp, top[..., None], ta, 1)
        fits = _waves(kx, ky, amp, x, y)[2] * w[:, None, :]
        share = (amp**2).sum(2) / 2 * w.sum(1)[:, None] / ss[:, None]
        resid = ((r0 - fits.sum(1)) ** 2).sum(1)
        out_expl[good] = 1.0 - resid / ss
        order = np.argsort(-share, axis=1)
        kx, ky, share = (np.take_along_axis(a, order, 1) for a in (kx, ky, share))
        fits = np.take_along_axis(fits, order[..., None], 1)
        floor = np.maximum(MIN_WAVE_SHARE, CHANCE_SHARE_FACTOR * 4.0 / w.sum(1))
        counted = _count(kx, ky, share, 2 * np.pi / (MAX_WAVELENGTH_FRACTION * min(ny, nx)),
                         floor)
        # counted components first (stable: in order of share)
        rank = np.argsort(~counted, axis=1, kind="stable")[:, :MAX_WAVES]
        sel = np.take_along_axis(counted, rank, 1)
        kxs, kys, shs = (np.take_along_axis(a, rank, 1) for a in (kx, ky, share))
        amps = np.take_along_axis(np.take_along_axis(amp, order[..., None], 1),
                                  rank[..., None], 1)
        lam = 2 * np.pi / np.hypot(kxs, kys)
        ang = np.mod(np.rad2deg(np.arctan2(kys, kxs)), 180.0)
        ang = np.where(ang >= 180.0 - 1e-9, 0.0, ang)
        out_len[good] = np.where(sel, lam, np.nan)
        out_ang[good] = np.where(sel, ang, np.nan)
        out_wshare[good] = np.where(sel, shs, np.nan)
        n = sel.sum(1)
        out_n[good] = n
        fit_counted = (fits * counted[..., None]).sum(1)
        out_share[good] = 1.0 - ((r0 - fit_counted) ** 2).sum(1) / ss
        lg = out_len[good]
        ratio = (np.where(sel, lg, 0.0).max(1)
                 / np.where(sel, lg, np.inf).min(1))  # inf / nan-free: 0 when none
        equal = np.isfinite(ratio) & (ratio <= EQUAL_WAVELENGTH_RATIO)
        a = out_ang[good]
        d01, d02, d12 = (_fold(a[:, i] - a[:, j]) for i, j in ((0, 1), (0, 2), (1, 2)))
        single = _single_field(maps[good])
        psi, closure, treason = _triad_phase(kxs, kys, amps, n, ny, nx)
        fin = np.where(np.isfinite(maps[good]), maps[good], np.nan)
        lo = np.nanmin(fin, axis=(1, 2))
        nonneg = lo >= -NONNEGATIVE_RTOL * np.nanmax(np.abs(fin), axis=(1, 2))
        peaks = np.abs(psi) < LATTICE_PHASE_TOL
        troughs = np.abs(psi) > 180.0 - LATTICE_PHASE_TOL
        lattice = np.where(peaks, LATTICE_KINDS.index("peaks"),
                           np.where(troughs, LATTICE_KINDS.index("troughs"), 0))
        is_lattice = peaks | (troughs & ~nonneg)
        dev = np.maximum.reduce([np.abs(d01 - 60), np.abs(d02 - 60), np.abs(d12 - 60)])
        hex_ang = dev <= HEXAGONAL_ANGLE_TOL
        hex_equal = np.isfinite(ratio) & (ratio <= HEXAGONAL_WAVELENGTH_RATIO)
        out_hex[good] = (n == 3) & hex_equal & hex_ang & is_lattice & ~single
        out_sq[good] = (n == 2) & equal & (np.abs(d01 - 90) <= SQUARE_ANGLE_TOL) & ~single
        out_psi[good], out_closure[good], out_treason[good] = psi, closure, treason
        out_lattice[good] = lattice
        out_dev[good] = np.where(n == 3, dev, np.nan)
        out_ratio[good] = np.where(n >= 2, ratio, np.nan)
        out_nonneg[good], out_single[good] = nonneg, single
    return (out_n, out_hex, out_sq, out_share, out_expl, code, out_len, out_ang, out_wshare,
            out_psi, out_lattice, out_treason, out_closure, out_dev, out_ratio, out_nonneg,
            out_single)


def plane_waves(maps: xr.DataArray) -> xr.Dataset:
    """Decompose rate maps into plane waves (matching pursuit on the 2D power spectrum).

    See the module doc for the method and :data:`REASONS` for maps that cannot be
    decomposed. Never raises on the map values: constant, all-NaN, mostly-NaN and tiny maps
    (< :data:`MIN_SIZE` bins along y or x) give ``n_waves`` 0, NaN shares and a reason.

    Parameters
    ----------
    maps : xarray.DataArray, dims (..., y, x)
        Rate maps, indexed ``[row = y, col = x]``; NaN = unvisited bin (square maps or
        rasterised hexagonal ones with a NaN border).

    Returns
    -------
    xarray.Dataset
        Dims (...) and ``wave`` (length :data:`MAX_WAVES`, counted waves in order of
        decreasing share, NaN where fewer):

        - ``n_waves`` (...) int: counted fundamental plane waves, 0-3;
        - ``hexagonal`` (...) bool: three waves of near-equal length pairwise ~60 deg apart
          forming a lattice (see ``lattice``), not a single field;
        - ``square`` (...) bool: two waves of near-equal length ~90 deg apart, not a single
          field;
        - ``plane_wave_share`` (...) float: variance share of the counted waves together
          (0 when none; NaN with a reason);
        - ``plane_wave_explained`` (...) float: variance share of all
          :data:`MAX_COMPONENTS` fitted components (harmonics included);
        - ``plane_wave_reason`` (...) str: why the outputs are NaN/0 ('' = decomposed);
        - ``wave_length`` (..., wave) float, bins: the wave's period;
        - ``wave_angle`` (..., wave) float, degrees in [0, 180): direction of the wave
          vector from +x towards +y;
        - ``wave_share`` (..., wave) float: the wave's share of the map's variance;
        - ``triad_phase`` (...) float, degrees in (-180, 180]: psi of the three waves (NaN
          with ``triad_phase_reason`` (...) str when there is no triad);
        - ``lattice`` (...) str: "peaks" (|psi| < :data:`LATTICE_PHASE_TOL`), "troughs"
          (|psi| > 180 - it) or "";
        - ``triad_closure`` (...) float: ``|sum s_i k_i| / mean |k_i|`` (NaN without three
          waves);
        - ``hexagonal_angle_deviation`` (...) float, degrees: the largest deviation of the
          three waves' pairwise angles from 60 (NaN without three waves);
        - ``wave_length_ratio`` (...) float: longest / shortest counted wavelength (NaN
          with fewer than two waves);
        - ``nonnegative`` (...) bool: no negative bin;
        - ``single_field`` (...) bool: one connected region above half the range.

        Attrs record every threshold.

    Raises
    ------
    TypeError, ValueError
        Only if ``maps`` is not a numeric DataArray with dims (..., "y", "x").
    """
    return WAVES.apply(maps)


#: The :class:`~hippo_rep.analysis.kernels.Kernel` of :func:`plane_waves`: its outputs, and
#: the method and every threshold as attrs.
WAVES = Kernel(_plane_waves_block, (
    Output("n_waves", (), np.int64, {
        "long_name": "fundamental plane waves explaining a material share of the map's "
                     "variance (harmonics excluded, at most 3)", "units": "1"}),
    Output("hexagonal", (), bool, {
        "long_name": "three plane waves of near-equal length pairwise ~60 degrees apart"}),
    Output("square", (), bool, {
        "long_name": "two plane waves of near-equal length ~90 degrees apart"}),
    Output("plane_wave_share", attrs={
        "long_name": "share of the map's variance explained by its counted plane waves",
        "units": "1"}),
    Output("plane_wave_explained", attrs={
        "long_name": "share of the map's variance explained by all fitted plane-wave "
                     "components (harmonics included)", "units": "1"}),
    Output("plane_wave_reason", (), np.int64, {
        "long_name": "why the plane-wave decomposition is NaN/0 ('' = decomposed)"}, REASONS),
    Output("wave_length", (WAVE_DIM,), attrs={
        "long_name": "plane-wave wavelength (period; a hexagonal grid's peak spacing is "
                     "wavelength * 2/sqrt(3))", "units": "bins"}),
    Output("wave_angle", (WAVE_DIM,), attrs={
        "long_name": "wave-vector direction from +x towards +y, in [0, 180)",
        "units": "degrees"}),
    Output("wave_share", (WAVE_DIM,), attrs={
        "long_name": "share of the map's variance explained by the wave", "units": "1"}),
    Output("triad_phase", attrs={
        "long_name": "triad phase psi = phi_1 + phi_2 + phi_3 of the three waves (signs with "
                     "k_1 + k_2 + k_3 ~ 0): 0 = lattice of peaks, 180 = of troughs",
        "units": "degrees"}),
    Output("lattice", (), np.int64, {
        "long_name": "what the three waves form: 'peaks' (|psi| < tol), 'troughs' "
                     "(|psi| > 180 - tol), '' neither"}, LATTICE_KINDS),
    Output("triad_phase_reason", (), np.int64, {
        "long_name": "why triad_phase is NaN ('' = defined)"}, TRIAD_REASONS),
    Output("triad_closure", attrs={
        "long_name": "|k_1 +- k_2 +- k_3| / mean |k| of the three waves (0 for a lattice)",
        "units": "1"}),
    Output("hexagonal_angle_deviation", attrs={
        "long_name": "largest deviation of the three waves' pairwise angles from 60 degrees",
        "units": "degrees"}),
    Output("wave_length_ratio", attrs={
        "long_name": "longest / shortest wavelength of the counted waves (two or more)",
        "units": "1"}),
    Output("nonnegative", (), bool, {
        "long_name": "the map has no negative bin (hexagonal only as a lattice of peaks)"}),
    Output("single_field", (), bool, {
        "long_name": "the map's bins above half its range form one connected region: a "
                     "single field, not a wave pattern"}),
), {
    "plane_wave_method": "matching pursuit on the zero-padded 2D power spectrum of the "
                         "mean-subtracted map, least-squares (Gauss-Newton) refinement on "
                         "the finite bins, joint refinement, harmonics excluded "
                         "(Krupic et al. 2012)",
    "plane_wave_max_waves": MAX_WAVES,
    "plane_wave_max_components": MAX_COMPONENTS,
    "plane_wave_joint_components": JOINT_COMPONENTS,
    "plane_wave_pad_factor": PAD_FACTOR,
    "plane_wave_min_wavelength_bins": MIN_WAVELENGTH,
    "plane_wave_max_wavelength_fraction": MAX_WAVELENGTH_FRACTION,
    "plane_wave_min_share": MIN_WAVE_SHARE,
    "plane_wave_chance_share_factor": CHANCE_SHARE_FACTOR,
    "plane_wave_min_relative_share": MIN_RELATIVE_SHARE,
    "plane_wave_duplicate_tol": DUPLICATE_TOL,
    "plane_wave_harmonic_tol": HARMONIC_TOL,
    "plane_wave_harmonic_min_ratio": HARMONIC_MIN_RATIO,
    "plane_wave_equal_wavelength_ratio": EQUAL_WAVELENGTH_RATIO,
    "plane_wave_hexagonal_angle_tol_deg": HEXAGONAL_ANGLE_TOL,
    "plane_wave_square_angle_tol_deg": SQUARE_ANGLE_TOL,
    "plane_wave_hexagonal_wavelength_ratio": HEXAGONAL_WAVELENGTH_RATIO,
    "plane_wave_triad_closure_tol": TRIAD_CLOSURE_TOL,
    "plane_wave_lattice_phase_tol_deg": LATTICE_PHASE_TOL,
    "plane_wave_nonnegative_rtol": NONNEGATIVE_RTOL,
    "plane_wave_single_field_level": SINGLE_FIELD_LEVEL,
    "plane_wave_single_field_min_bins": SINGLE_FIELD_MIN_BINS,
}, sizes={WAVE_DIM: MAX_WAVES})
