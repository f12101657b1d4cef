"""Model-grown controls: lattices grown by single-cell pattern formation, and their negatives.

The positive control is the single-cell pattern-formation model of Sorscher, Mel, Ganguli &
Ocko (NeurIPS 2019; Neuron 2023): a cell's map ``G`` (y, x) that maximises ``G·(Σ∗G)`` under
non-negativity and a fixed norm grows a hexagonal lattice when Σ, the covariance of the
place-cell input, is a difference of Gaussians (a centre-surround place field). The map is
grown from non-negative noise by the projected gradient iteration

    G ← f(G + lr · (−G + Σ∗G)),   then G ← G / rms(G),

with ``f = relu`` (:data:`LEARNING_RATE`, :data:`N_ITERATIONS`). Σ∗G is the convolution of
the map with Σ's kernel: the autocorrelation of the difference-of-Gaussians place field
``exp(−r²/2σ²) − w exp(−r²/2(sσ)²)/s²`` (σ :data:`PLACE_SIGMA`, s :data:`SURROUND_SCALE`,
w :data:`SURROUND_WEIGHT`: w = 1 gives a surround of the same integral as the centre, a
zero-mean field), normalised so that its largest Fourier gain is 1. Two boxes:

- ``relu_periodic``: a periodic box of aspect √3/2 (:data:`PERIODIC_BOX`), the convolution
  circular (FFT), in which a hexagonal lattice fits;
- ``relu_square``: a square, non-periodic box (:data:`SQUARE_BOX`; the convolution with zero
  padding, ``scipy.signal.fftconvolve``), whose borders shear the lattice.

The negatives, each run through the same classifier:

- ``tanh``: ``f = tanh`` instead of relu, in the periodic box: a signed map without the
  rectification that selects triads grows stripes (bands, labyrinths);
- ``no_surround``: Gaussian place fields without a surround (w = 0) in the square box: the
  top of Σ's spectrum is the uniform mode and the map grows one broad field;
- ``linear``: random superpositions (Gaussian coefficients) of the :data:`N_LINEAR_MODES` top
  eigenmodes of Σ in the periodic box (its Fourier modes of largest gain): plane waves with
  the lattice's wavelength but no lattice;
- ``rectified_linear``: the same superpositions rectified (``relu``, then unit rms): patchy,
  non-negative maps of the lattice's wavelength, as a cell's map is, but not grown into a
  lattice; what the lattice rule passes here is its false-positive rate on such maps.

A negative matched to your own maps: :func:`random_wave_maps` gives rectified random
superpositions of plane waves of one wavelength in a box of any size, no lattice by
construction; the fraction of them that :func:`~hippo_rep.analysis.plane_waves` (or
``analyse``) calls hexagonal is the lattice rule's false-positive rate at that map size and
wavelength, the level a grid-cell fraction has to clear. :func:`matched_negative` makes them
in the bins a set of rate maps covers, at the maps' wavelength, and classifies them.

Conventions: maps ``[row = y, col = x]``; lengths in bins. Every function takes an explicit
``seed`` (or ``rng``): the same seed gives the same maps.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import xarray as xr
from scipy import fft, signal

from hippo_rep import __version__
from hippo_rep import schema as S
from hippo_rep.defaults import N_OBS
from hippo_rep.worlds import make_world, random_observations, random_walk, step_types

from ._checks import MAP_DIMS
from .planewaves import plane_waves

#: Standard deviation of the place fields' centre Gaussian, bins. With
#: :data:`SURROUND_SCALE` 2 and :data:`SURROUND_WEIGHT` 1 the gain of Σ peaks at wave number
#: 0.961 / σ: plane waves of wavelength 6.54 σ (6.5 bins), grid spacing 7.5 bins.
PLACE_SIGMA = 0.99

#: The surround Gaussian is this many times wider than the centre.
SURROUND_SCALE = 2.0

#: Integral of the surround relative to the centre's (1: a zero-mean place field; 0: a plain
#: Gaussian place field, the ``no_surround`` control).
SURROUND_WEIGHT = 1.0

#: Step size of the pattern-formation iteration (measured here: 0.2 left about half of the
#: square-box maps unconverged after 400 iterations; 0.5 converged them by 1,000).
LEARNING_RATE = 0.5

#: Iterations of the pattern formation.
N_ITERATIONS = 1000

#: Periodic box (rows = y, columns = x) of aspect √3/2 (26/30 = 0.867) in which a hexagonal
#: lattice of plane-wave wavelength 6.5 bins (4 periods along y) fits exactly. (Σ's gain is
#: broad, so the maps grown here also settle on slightly distorted triads of nearby Fourier
#: modes: wavelength ratios up to 1.14, angles up to 7.9 degrees off 60, seed 0.)
PERIODIC_BOX = (26, 30)

#: Square, non-periodic box (rows, columns).
SQUARE_BOX = (30, 30)

#: Smallest box side, bins.
MIN_BOX = 5

#: Top eigenmodes of Σ (real Fourier modes: a cosine and a sine per wave vector) mixed by the
#: ``linear`` control.
N_LINEAR_MODES = 24

#: Plane waves superposed per map by :func:`random_wave_maps`: as many as the wave vectors
#: of the ``linear`` control (a cosine and a sine each).
N_RANDOM_WAVES = N_LINEAR_MODES // 2

#: Negative maps of :func:`matched_negative` by default: its false-positive rate to about ±2
#: percentage points (95% Wilson interval at a rate of 10%).
N_MATCHED_MAPS = 1024

#: Maps grown per control by default.
N_UNITS = 32

#: Most maps per control ``hippo-rep controls`` grows (about 2.5 MB of recording each).
MAX_UNITS = 1024

#: The controls, in order: (name, box, nonlinearity ("linear": :func:`linear_eigenmodes`;
#: "rectified_linear": their positive part), surround weight). A control's seed is its
#: position here, so a control added at the end leaves the others' maps unchanged.
CONTROLS: tuple[tuple[str, str, str, float], ...] = (
    ("relu_periodic", "periodic", "relu", SURROUND_WEIGHT),
    ("relu_square", "square", "relu", SURROUND_WEIGHT),
    ("tanh", "periodic", "tanh", SURROUND_WEIGHT),
    ("no_surround", "square", "relu", 0.0),
    ("linear", "periodic", "linear", SURROUND_WEIGHT),
    ("rectified_linear", "periodic", "rectified_linear", SURROUND_WEIGHT),
)
#: Names of the controls, in order.
CONTROL_NAMES: tuple[str, ...] = tuple(c[0] for c in CONTROLS)
#: The controls expected to grow hexagonal lattices.
POSITIVE_CONTROLS: tuple[str, ...] = ("relu_periodic", "relu_square")

#: Steps of the walk per box node in :func:`controls_recording` (a random walk of 18,000
#: steps visits the 900 nodes of the 30 x 30 box about 20 times each; a node it misses is
#: a NaN bin).
STEPS_PER_NODE = 20

#: Memory neurons of :func:`controls_recording` per environment (place-field units).
N_MEMORY = 8

#: Standard deviation of their Gaussian fields, node spacings.
MEMORY_SIGMA = 1.5

#: The control dim of :func:`control_maps` and the coord of a controls recording's ``env``.
CONTROL_DIM = "control"


def _check_box(shape: Sequence[int], name: str) -> tuple[int, int]:
    try:
        ny, nx = (int(s) for s in shape)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be (rows, columns); got {shape!r}") from None
    if ny < MIN_BOX or nx < MIN_BOX:
        raise ValueError(f"{name} must be at least {MIN_BOX} bins along each side; got "
                         f"{ny} x {nx}")
    return ny, nx


def _check_params(shape, place_sigma, surround_scale, surround_weight, lr, n_iterations,
                  name="shape") -> tuple[int, int]:
    ny, nx = _check_box(shape, name)
    for arg, v in (("place_sigma", place_sigma), ("surround_scale", surround_scale),
                   ("lr", lr)):
        if not np.isfinite(v) or v <= 0:
            raise ValueError(f"{arg} must be finite and > 0; got {v!r}")
    if not np.isfinite(surround_weight) or surround_weight < 0:
        raise ValueError(f"surround_weight must be finite and >= 0; got {surround_weight!r}")
    if surround_weight > 0 and surround_scale * place_sigma > min(ny, nx):
        raise ValueError(f"surround_scale * place_sigma ({surround_scale * place_sigma:g} "
                         f"bins) is wider than the box ({ny} x {nx} bins)")
    if int(n_iterations) != n_iterations or n_iterations < 1:
        raise ValueError(f"n_iterations must be an int >= 1; got {n_iterations!r}")
    return ny, nx


def covariance_gain(k: np.ndarray, place_sigma: float = PLACE_SIGMA,
                    surround_scale: float = SURROUND_SCALE,
                    surround_weight: float = SURROUND_WEIGHT) -> np.ndarray:
    """Fourier gain of the place-cell covariance Σ at wave number ``k`` (rad / bin), up to a
    constant: the squared Fourier transform of the difference-of-Gaussians place field,
    ``(exp(−k²σ²/2) − w exp(−k²s²σ²/2))²``."""
    p = (np.exp(-(k * place_sigma) ** 2 / 2)
         - surround_weight * np.exp(-(k * surround_scale * place_sigma) ** 2 / 2))
    return p**2


def _kernel(place_sigma, surround_scale, surround_weight, half: int) -> np.ndarray:
    """Σ's kernel on (2 half + 1)² bins: the autocorrelation of the place field (Gaussians of
    variances 2σ², σ² + s²σ², 2s²σ²), normalised to a largest Fourier gain of 1."""
    r = np.arange(-half, half + 1, dtype=np.float64)
    d2 = r[:, None] ** 2 + r[None, :] ** 2
    s1, s2, w = place_sigma, surround_scale * place_sigma, surround_weight

    def g(var):
        return np.exp(-d2 / (2 * var)) / (2 * np.pi * var)

    k = g(2 * s1**2) - 2 * w * g(s1**2 + s2**2) + w**2 * g(2 * s2**2)
    n = fft.next_fast_len(4 * (2 * half + 1))
    return k / np.abs(fft.rfft2(k, s=(n, n))).max()


def _unit_rms(g: np.ndarray) -> np.ndarray:
    """Maps (unit, y, x) scaled to unit root-mean-square each (an all-zero map stays zero)."""
    return g / np.maximum(np.sqrt((g**2).mean(axis=(1, 2), keepdims=True)), 1e-300)


def _wave_numbers(ny: int, nx: int) -> np.ndarray:
    ky = 2 * np.pi * fft.fftfreq(ny)[:, None]
    kx = 2 * np.pi * fft.rfftfreq(nx)[None, :]
    return np.hypot(kx, ky)


def pattern_formation(
    n_units: int,
    shape: Sequence[int] = PERIODIC_BOX,
    periodic: bool = True,
    nonlinearity: str = "relu",
    place_sigma: float = PLACE_SIGMA,
    surround_scale: float = SURROUND_SCALE,
    surround_weight: float = SURROUND_WEIGHT,
    lr: float = LEARNING_RATE,
    n_iterations: int = N_ITERATIONS,
    seed: int | np.random.Generator = 0,
) -> xr.DataArray:
    """Grow ``n_units`` maps by single-cell pattern formation (see the module doc).

    Parameters
    ----------
    n_units : int
        Maps grown (independently, each from its own non-negative uniform noise).
    shape : (int, int)
        Box (rows = y, columns = x), bins; at least :data:`MIN_BOX` each.
    periodic : bool
        Circular convolution (a torus) or zero-padded (a box with walls).
    nonlinearity : {"relu", "tanh"}
        ``f`` of the iteration.
    place_sigma, surround_scale, surround_weight : float
        The place field (:data:`PLACE_SIGMA` bins, :data:`SURROUND_SCALE`,
        :data:`SURROUND_WEIGHT`).
    lr : float
        Step size (:data:`LEARNING_RATE`).
    n_iterations : int
        Iterations (:data:`N_ITERATIONS`).
    seed : int or numpy.random.Generator
        Seed of the initial noise.

    Returns
    -------
    xarray.DataArray, dims ("unit", "y", "x")
        Maps of unit root-mean-square (non-negative for relu).

    Raises
    ------
    ValueError
        Naming the argument: a box under :data:`MIN_BOX` bins, non-positive widths or step, a
        surround (``surround_scale * place_sigma``) wider than the box, an unknown
        nonlinearity.
    """
    ny, nx = _check_params(shape, place_sigma, surround_scale, surround_weight, lr,
                           n_iterations)
    if nonlinearity not in ("relu", "tanh"):
        raise ValueError(f"nonlinearity must be 'relu' or 'tanh'; got {nonlinearity!r}")
    n_units = int(n_units)
    if n_units < 1:
        raise ValueError(f"n_units must be >= 1; got {n_units}")
    rng = np.random.default_rng(seed)
    g = rng.random((n_units, ny, nx))
    if periodic:
        gain = covariance_gain(_wave_numbers(ny, nx), place_sigma, surround_scale,
                               surround_weight)
        gain = gain / gain.max()

        def conv(a):
            return fft.irfft2(fft.rfft2(a) * gain, s=(ny, nx))
    else:
        half = int(np.ceil(4 * max(1.0, surround_scale) * place_sigma))
        kern = _kernel(place_sigma, surround_scale, surround_weight, half)[None]

        def conv(a):
            return signal.fftconvolve(a, kern, mode="same", axes=(1, 2))

    f = (lambda a: np.maximum(a, 0.0)) if nonlinearity == "relu" else np.tanh
    for _ in range(int(n_iterations)):
        g = f(g + lr * (conv(g) - g))
        g = _unit_rms(g)
    return xr.DataArray(g, dims=("unit", *MAP_DIMS),
                        coords={"y": np.arange(ny), "x": np.arange(nx)})


def linear_eigenmodes(
    n_units: int,
    shape: Sequence[int] = PERIODIC_BOX,
    n_modes: int = N_LINEAR_MODES,
    place_sigma: float = PLACE_SIGMA,
    surround_scale: float = SURROUND_SCALE,
    surround_weight: float = SURROUND_WEIGHT,
    seed: int | np.random.Generator = 0,
) -> xr.DataArray:
    """Random superpositions of the top eigenmodes of Σ in a periodic box (the ``linear``
    negative control: what pattern formation gives without a nonlinearity).

    Σ is circulant in a periodic box, so its eigenmodes are the box's Fourier modes (a cosine
    and a sine per wave vector ±k) with eigenvalue :func:`covariance_gain` of |k|; the
    ``n_modes`` of largest eigenvalue (ties broken by wave-vector order) are mixed with
    standard normal coefficients.

    Parameters
    ----------
    n_units : int
    shape : (int, int)
        Box (rows, columns), bins.
    n_modes : int
        Real eigenmodes mixed (:data:`N_LINEAR_MODES`).
    place_sigma, surround_scale, surround_weight : float
        The place field.
    seed : int or numpy.random.Generator

    Returns
    -------
    xarray.DataArray, dims ("unit", "y", "x")
        Signed maps of unit root-mean-square.

    Raises
    ------
    ValueError
        Naming the argument (as :func:`pattern_formation`), or ``n_modes`` < 1.
    """
    ny, nx = _check_params(shape, place_sigma, surround_scale, surround_weight, 1.0, 1)
    n_modes, n_units = int(n_modes), int(n_units)
    if n_modes < 1:
        raise ValueError(f"n_modes must be >= 1; got {n_modes}")
    if n_units < 1:
        raise ValueError(f"n_units must be >= 1; got {n_units}")
    rng = np.random.default_rng(seed)
    ky = 2 * np.pi * fft.fftfreq(ny)
    kx = 2 * np.pi * fft.fftfreq(nx)
    kyy, kxx = np.meshgrid(ky, kx, indexing="ij")
    # one wave vector of each ±k pair: kx > 0, or kx == 0 and ky > 0
    half = (kxx > 0) | ((kxx == 0) & (kyy > 0))
    kv = np.stack([kxx[half], kyy[half]], 1)
    gain = covariance_gain(np.hypot(*kv.T), place_sigma, surround_scale, surround_weight)
    order = np.argsort(-gain, kind="stable")[: (n_modes + 1) // 2]
    y, x = np.indices((ny, nx), dtype=np.float64)
    ph = kv[order, 0, None, None] * x + kv[order, 1, None, None] * y  # (K, ny, nx)
    modes = np.concatenate([np.cos(ph), np.sin(ph)])[:n_modes]
    g = np.einsum("uk,kyx->uyx", rng.standard_normal((n_units, modes.shape[0])), modes)
    g = _unit_rms(g)
    return xr.DataArray(g, dims=("unit", *MAP_DIMS),
                        coords={"y": np.arange(ny), "x": np.arange(nx)})


def random_wave_maps(
    n_units: int,
    shape: Sequence[int],
    wavelength: float,
    n_waves: int = N_RANDOM_WAVES,
    seed: int | np.random.Generator = 0,
) -> xr.DataArray:
    """Rectified random superpositions of plane waves of one wavelength: patchy, non-negative
    maps with a grid's wavelength but no lattice (a negative matched to a map size).

    Map ``u`` is ``relu(Σ_j a_j cos(k (x cos θ_j + y sin θ_j) − φ_j))`` scaled to unit
    root-mean-square, with ``k = 2π / wavelength``, amplitudes ``a_j`` standard normal,
    directions ``θ_j`` uniform in [0, 180) degrees and phases ``φ_j`` uniform in [0, 2π)
    (in a continuous box, unlike the ``linear`` control's Fourier modes of a periodic one).
    A few of them line up as a lattice by chance; :func:`~hippo_rep.analysis.plane_waves`'
    ``hexagonal`` mean over many maps is the classifier's false-positive rate at that size
    and wavelength.

    Parameters
    ----------
    n_units : int
        Maps.
    shape : (int, int)
        Box (rows, columns), bins; at least :data:`MIN_BOX` each.
    wavelength : float
        Wavelength of every wave, bins (> 2: longer than two bins).
    n_waves : int
        Waves superposed per map (:data:`N_RANDOM_WAVES`).
    seed : int or numpy.random.Generator

    Returns
    -------
    xarray.DataArray, dims ("unit", "y", "x")
        Non-negative maps of unit root-mean-square; attrs the parameters.

    Raises
    ------
    ValueError
        Naming the argument.
    """
    ny, nx = _check_box(shape, "shape")
    n_units, n_waves = int(n_units), int(n_waves)
    if n_units < 1:
        raise ValueError(f"n_units must be >= 1; got {n_units}")
    if n_waves < 1:
        raise ValueError(f"n_waves must be >= 1; got {n_waves}")
    try:
        lam = float(wavelength)
    except (TypeError, ValueError):
        lam = np.nan
    if not lam > 2 or not np.isfinite(lam):
        raise ValueError(f"wavelength must be a number of bins > 2; got {wavelength!r}")
    rng = np.random.default_rng(seed)
    amp = rng.standard_normal((n_units, n_waves))
    theta = rng.uniform(0.0, np.pi, (n_units, n_waves))
    phase = rng.uniform(0.0, 2 * np.pi, (n_units, n_waves))
    y, x = np.indices((ny, nx), dtype=np.float64)
    k = 2 * np.pi / lam
    g = np.zeros((n_units, ny, nx))
    for a, t, ph in zip(amp.T[..., None, None], theta.T[..., None, None],
                        phase.T[..., None, None], strict=True):  # one wave of every map
        g += a * np.cos(k * (np.cos(t) * x + np.sin(t) * y) - ph)
    return xr.DataArray(
        _unit_rms(np.maximum(g, 0.0)), dims=("unit", *MAP_DIMS),
        coords={"y": np.arange(ny), "x": np.arange(nx)},
        attrs={"long_name": "rectified random superpositions of plane waves", "units": "1",
               "wavelength_bins": lam, "n_waves": n_waves})


def matched_negative(
    rate_maps: xr.DataArray,
    wavelength: float | None = None,
    n_units: int = N_MATCHED_MAPS,
    n_waves: int = N_RANDOM_WAVES,
    seed: int | np.random.Generator = 0,
) -> xr.Dataset:
    """The plane-wave verdicts of :func:`random_wave_maps` cut to the bins ``rate_maps`` cover:
    a negative control matched to a set of maps (their box, unvisited bins and wavelength).

    Its ``hexagonal`` mean is the lattice rule's false-positive rate on patchy, non-negative
    maps that are no lattice, at the size and wavelength of ``rate_maps``: a hexagonal fraction
    of ``rate_maps`` near it says nothing, one far above it does.

    Parameters
    ----------
    rate_maps : xarray.DataArray, dims (..., y, x)
        The maps matched, e.g. an analysis' ``rate_map`` (env, unit, y, x); a bin is kept
        where any map is finite.
    wavelength : float, optional
        Wavelength of the negative's waves, bins. Default: the median of the wave lengths
        :func:`~hippo_rep.analysis.plane_waves` finds in ``rate_maps`` (every counted wave of
        every map); give the wavelength of the maps called hexagonal where they differ.
    n_units : int
        Negative maps (:data:`N_MATCHED_MAPS`).
    n_waves : int
        Waves superposed per map (:data:`N_RANDOM_WAVES`).
    seed : int or numpy.random.Generator

    Returns
    -------
    xarray.Dataset, dims (unit, ...)
        :func:`~hippo_rep.analysis.plane_waves` of the negative maps, with the maps as
        ``rate_map`` (unit, y, x; NaN outside the covered bins, coords ``y``, ``x`` of
        ``rate_maps``); attrs ``wavelength_bins``, ``n_waves``, ``seed``.

    Raises
    ------
    ValueError
        ``rate_maps`` without dims y, x or without a finite bin; no wave found and no
        ``wavelength``; or a bad argument (as :func:`random_wave_maps`).
    """
    if not isinstance(rate_maps, xr.DataArray) or not set(MAP_DIMS) <= set(rate_maps.dims):
        raise ValueError("rate_maps must be a DataArray with dims (..., 'y', 'x')")
    others = [d for d in rate_maps.dims if d not in MAP_DIMS]
    covered = rate_maps.notnull().any(others).transpose(*MAP_DIMS)  # others may be []
    if not covered.any():
        raise ValueError("rate_maps has no finite bin")
    if wavelength is None:
        wavelength = float(plane_waves(rate_maps)["wave_length"].median(skipna=True))
        if not np.isfinite(wavelength):
            raise ValueError("plane_waves finds no wave in rate_maps; give wavelength")
    maps = random_wave_maps(n_units, covered.shape, wavelength, n_waves, seed)
    maps = maps.assign_coords({d: rate_maps[d].values for d in MAP_DIMS if d in rate_maps.coords})
    maps = maps.where(covered.values)
    out = plane_waves(maps)
    out["rate_map"] = maps
    out.attrs.update(maps.attrs, seed=seed if isinstance(seed, int) else "generator")
    return out


def control_maps(
    n_units: int = N_UNITS,
    seed: int = 0,
    controls: Sequence[str] | None = None,
    periodic_box: Sequence[int] = PERIODIC_BOX,
    square_box: Sequence[int] = SQUARE_BOX,
    place_sigma: float = PLACE_SIGMA,
    surround_scale: float = SURROUND_SCALE,
    n_iterations: int = N_ITERATIONS,
) -> xr.DataArray:
    """The maps of every control (:data:`CONTROLS`), NaN outside each control's box.

    Parameters
    ----------
    n_units : int
        Maps per control.
    seed : int
        Seed of everything: control ``i`` uses ``numpy.random.SeedSequence(seed).spawn``'s
        ``i``-th child, so a control's maps do not depend on which others are made.
    controls : sequence of str, optional
        A subset of :data:`CONTROL_NAMES` (default all).
    periodic_box, square_box : (int, int)
        Boxes (rows, columns), bins.
    place_sigma, surround_scale : float
        The place field (the surround weight is the control's).
    n_iterations : int
        Iterations of the pattern formation.

    Returns
    -------
    xarray.DataArray, dims ("control", "unit", "y", "x")
        The maps, on a raster of the larger box (rows, columns of either), NaN outside a
        control's own box (its rows and columns from 0). Coords ``control`` (names),
        ``box`` (control: "periodic" or "square"), ``nonlinearity`` (control: "relu",
        "tanh", "linear" or "rectified_linear"), ``surround_weight`` (control). Attrs:
        every other parameter and the seed.

    Raises
    ------
    ValueError
        Naming the argument.
    """
    names = CONTROL_NAMES if controls is None else tuple(controls)
    unknown = [c for c in names if c not in CONTROL_NAMES]
    if unknown or not names:
        raise ValueError(f"controls must be among {CONTROL_NAMES}; got {list(names)!r}")
    boxes = {"periodic": _check_box(periodic_box, "periodic_box"),
             "square": _check_box(square_box, "square_box")}
    ny = max(b[0] for b in boxes.values())
    nx = max(b[1] for b in boxes.values())
    seeds = np.random.SeedSequence(int(seed)).spawn(len(CONTROLS))
    out = np.full((len(names), int(n_units), ny, nx), np.nan)
    spec = {c[0]: (i, *c[1:]) for i, c in enumerate(CONTROLS)}
    for j, name in enumerate(names):
        i, box, nonlin, weight = spec[name]
        rng = np.random.default_rng(seeds[i])
        shape = boxes[box]
        if nonlin in ("linear", "rectified_linear"):
            m = linear_eigenmodes(n_units, shape, place_sigma=place_sigma,
                                  surround_scale=surround_scale, surround_weight=weight,
                                  seed=rng)
            if nonlin == "rectified_linear":
                m = m.copy(data=_unit_rms(np.maximum(m.values, 0.0)))
        else:
            m = pattern_formation(n_units, shape, periodic=box == "periodic",
                                  nonlinearity=nonlin, place_sigma=place_sigma,
                                  surround_scale=surround_scale, surround_weight=weight,
                                  n_iterations=n_iterations, seed=rng)
        out[j, :, : shape[0], : shape[1]] = m.values
    return xr.DataArray(
        out, dims=(CONTROL_DIM, "unit", *MAP_DIMS),
        coords={CONTROL_DIM: list(names), "unit": np.arange(int(n_units)),
                "y": np.arange(ny), "x": np.arange(nx),
                "box": (CONTROL_DIM, [spec[n][1] for n in names]),
                "nonlinearity": (CONTROL_DIM, [spec[n][2] for n in names]),
                "surround_weight": (CONTROL_DIM, [float(spec[n][3]) for n in names])},
        attrs={"long_name": "model-grown control maps (NaN outside the control's box)",
               "units": "1", "seed": int(seed), "place_sigma_bins": float(place_sigma),
               "surround_scale": float(surround_scale),
               "learning_rate": LEARNING_RATE, "n_iterations": int(n_iterations),
               "periodic_box": list(boxes["periodic"]), "square_box": list(boxes["square"]),
               "n_linear_modes": N_LINEAR_MODES,
               "method": "single-cell pattern formation G <- f(G + lr (-G + Sigma*G)), "
                         "G <- G / rms(G) (Sorscher et al. 2019, 2023)"},
    )


def controls_recording(
    maps: xr.DataArray,
    steps_per_node: int = STEPS_PER_NODE,
    seed: int = 0,
) -> xr.Dataset:
    """A recording (:mod:`hippo_rep.schema`) of an agent walking each control's box, its
    positional units firing at their control map's value: what ``hippo-rep analyse`` takes.

    One environment per control (coord ``control`` on ``env``): a random walk
    (:func:`hippo_rep.worlds.random_walk`) of ``steps_per_node`` steps per node of the
    control's box, on a square world the size of the raster of ``maps``; ``g`` and ``g_pi``
    are the maps at the walk's nodes (no noise: the rate map of a visited node is the map's
    value there). Its memory neurons are Gaussian place fields (:data:`MEMORY_SIGMA`) at the
    first :data:`N_MEMORY` distinct nodes of each walk, active after their first visit (as
    :func:`~hippo_rep.analysis.synthetic_recording` plants them): place cells beside the
    lattices.

    Parameters
    ----------
    maps : xarray.DataArray, dims ("control", "unit", "y", "x")
        :func:`control_maps`.
    steps_per_node : int
        Walk length per node of a box.
    seed : int
        Seed of the walks and observations.

    Returns
    -------
    xarray.Dataset
        A valid recording (attr ``world`` ``square:<nx>x<ny>``), with coord ``control`` (env)
        and the maps' attrs under ``controls_config`` (JSON).
    """
    if not isinstance(maps, xr.DataArray) or tuple(maps.dims) != (CONTROL_DIM, "unit",
                                                                    *MAP_DIMS):
        raise ValueError("maps must be a DataArray with dims ('control', 'unit', 'y', 'x') "
                         "(control_maps)")
    if int(steps_per_node) < 1:
        raise ValueError(f"steps_per_node must be >= 1; got {steps_per_node!r}")
    rng = np.random.default_rng(seed)
    n_env, n_g, ny, nx = maps.shape
    world = make_world("square", nx, ny)
    col = np.rint(world.coords[:, 0]).astype(np.int64)
    row = np.rint(world.coords[:, 1]).astype(np.int64)
    lookup = np.full((ny, nx), -1, dtype=np.int64)
    lookup[row, col] = np.arange(world.n_nodes)
    vals = maps.values
    boxes = []
    for e in range(n_env):
        finite = np.isfinite(vals[e]).all(axis=0)
        boxes.append((int(finite.any(axis=1).sum()), int(finite.any(axis=0).sum())))
    n_steps = max(int(steps_per_node) * by * bx for by, bx in boxes)
    nodes = np.empty((n_env, n_steps), dtype=np.int64)
    actions = np.empty_like(nodes)
    obs_maps = np.empty((n_env, world.n_nodes), dtype=np.int64)
    for e, (by, bx) in enumerate(boxes):
        sub = make_world("square", bx, by)
        sn, actions[e] = random_walk(sub, n_steps, rng)
        sc = np.rint(sub.coords[sn]).astype(np.int64)
        nodes[e] = lookup[sc[:, 1], sc[:, 0]]
        obs_maps[e] = random_observations(world, N_OBS, rng)
    r, c = row[nodes], col[nodes]  # (env, time)
    g = np.stack([vals[e][:, r[e], c[e]].T for e in range(n_env)])  # (env, time, unit)
    # memory neurons: Gaussian fields at the first N_MEMORY distinct nodes of each walk
    mem_node = np.full((n_env, N_MEMORY), S.UNUSED, dtype=np.int64)
    mem_time = np.full((n_env, N_MEMORY), S.UNUSED, dtype=np.int64)
    mem = np.zeros((n_env, n_steps, N_MEMORY), dtype=np.float32)
    t = np.arange(n_steps)
    for e in range(n_env):
        _, first = np.unique(nodes[e], return_index=True)
        first = np.sort(first)[:N_MEMORY]
        k = first.size
        mem_time[e, :k], mem_node[e, :k] = first, nodes[e, first]
        pos = world.coords[nodes[e]]
        d2 = ((pos[:, None, :] - world.coords[mem_node[e, :k]][None]) ** 2).sum(-1)
        mem[e, :, :k] = np.where(t[:, None] > first[None, :],
                                 np.exp(-d2 / (2 * MEMORY_SIGMA**2)), 0.0)
    mem_obs = np.where(mem_node >= 0, np.take_along_axis(obs_maps, np.maximum(mem_node, 0),
                                                         axis=1), S.UNUSED)
    observation = np.take_along_axis(obs_maps, nodes, axis=1)
    step_type = np.stack([step_types(nodes[e], actions[e])["code"]
                          for e in range(n_env)]).astype(np.int8)
    env_t = ("env", "time")
    ds = xr.Dataset(
        {
            S.G: (S.DATA_VARS[S.G].dims, g.astype(np.float32)),
            S.G_PI: (S.DATA_VARS[S.G_PI].dims, g.astype(np.float32)),
            S.MEMORY_ACTIVITY: (S.DATA_VARS[S.MEMORY_ACTIVITY].dims, mem),
        },
        coords={
            "env": np.arange(n_env), "time": np.arange(n_steps), "g_unit": np.arange(n_g),
            "memory": np.arange(N_MEMORY), "world_node": np.arange(world.n_nodes),
            "node": (env_t, nodes), "x": (env_t, world.coords[nodes, 0]),
            "y": (env_t, world.coords[nodes, 1]), "action": (env_t, actions),
            "observation": (env_t, observation), "prediction": (env_t, observation),
            "correct": (env_t, np.ones((n_env, n_steps), dtype=bool)),
            "step_type": (env_t, step_type),
            "memory_node": (("env", "memory"), mem_node),
            "memory_time": (("env", "memory"), mem_time),
            "memory_observation": (("env", "memory"), mem_obs),
            "node_x": ("world_node", world.coords[:, 0].astype(np.float64)),
            "node_y": ("world_node", world.coords[:, 1].astype(np.float64)),
            CONTROL_DIM: ("env", np.asarray(maps[CONTROL_DIM].values).astype(str),
                          {"long_name": "model-grown control of the environment",
                           "units": "1"}),
        },
        attrs={
            S.KIND_ATTR: S.KIND,
            S.SCHEMA_VERSION_ATTR: S.SCHEMA_VERSION,
            S.SAME_OBSERVATIONS: 0,
            S.WORLD: f"square:{nx}x{ny}",
            S.SEED: int(seed),
            S.N_STEPS: n_steps,
            S.CHECKPOINT_SHA256: "controls",
            S.PACKAGE_VERSION: __version__,
            S.MODEL_CONFIG: json.dumps({"controls": True}),
            S.WORLD_CONFIG: json.dumps({"spec": f"square:{nx}x{ny}"}),
            S.RECORDING_CONFIG: json.dumps({"n_env": n_env, "n_steps": n_steps,
                                            "seed": int(seed),
                                            "steps_per_node": int(steps_per_node)}),
            "controls_config": json.dumps({k: (list(v) if isinstance(v, (list, tuple))
                                               else v) for k, v in maps.attrs.items()},
                                          default=float),
        },
    )
    for name in S.SPECS:
        ds[name].attrs.update(S.var_attrs(name))
    return ds


def describe_controls(waves: xr.Dataset) -> str:
    """Per control, in lines: how many of its maps :func:`~hippo_rep.analysis.plane_waves`
    calls hexagonal, how many have three waves and how many a single field; ``waves`` is
    ``plane_waves(control_maps(...))`` (dims control, unit)."""
    lines = []
    width = max(len(str(c)) for c in waves[CONTROL_DIM].values)
    for c in waves[CONTROL_DIM].values:
        one = waves.sel({CONTROL_DIM: c})
        n = int(one.sizes["unit"])
        lines.append(f"  {c:<{width}} hexagonal {int(one['hexagonal'].sum())}/{n}, three waves "
                     f"{int((one['n_waves'] == 3).sum())}/{n}, single field "
                     f"{int(one['single_field'].sum())}/{n}")
    return "\n".join(lines)


#: Flags counted per control by :func:`control_fractions`, in order.
CONTROL_FLAGS = ("hexagonal", S.IS_GRID, S.IS_BAND, S.IS_TWO_WAVE, S.IS_SQUARE, "single_field",
                 S.IS_PLACE)


def control_fractions(analysis: xr.Dataset, population: str = S.G,
                      flags: Sequence[str] = CONTROL_FLAGS) -> xr.Dataset:
    """Fraction of each control's units with each flag, in an analysis of a controls
    recording (:func:`controls_recording` analysed by :func:`~hippo_rep.analysis.analyse`).

    Parameters
    ----------
    analysis : xarray.Dataset
        With coord ``control`` (env), ``variable`` (unit), ``rate_map`` and the ``flags``.
    population : str
        The population counted (default ``g``).
    flags : sequence of str
        Boolean (env, unit) variables counted (those absent are left out).

    Returns
    -------
    xarray.Dataset
        Dims (control, cell_class): ``numerator``, ``denominator`` ((env, unit) pairs that
        exist: a finite bin, as :func:`~hippo_rep.schema.class_fractions`) and ``fraction``;
        the layout :func:`~hippo_rep.plotting.scores.class_fraction_bars` draws.

    Raises
    ------
    ValueError
        Naming what the analysis lacks.
    """
    for need in (CONTROL_DIM, S.VARIABLE, S.RATE_MAP):
        if need not in analysis.variables:
            raise ValueError(f"analysis lacks {need!r}: not an analysis of a controls "
                             "recording (hippo-rep controls, then hippo-rep analyse)")
    flags = [f for f in flags if f in analysis.data_vars]
    if not flags:
        raise ValueError(f"analysis has none of the flags {list(CONTROL_FLAGS)}")
    pop = analysis.isel(unit=np.asarray(analysis[S.VARIABLE].values).astype(str) == population)
    if pop.sizes["unit"] == 0:
        raise ValueError(f"analysis has no unit of population {population!r}")
    exists = pop[S.RATE_MAP].notnull().any(("y", "x")).transpose("env", "unit").values
    names = np.asarray(pop[CONTROL_DIM].values).astype(str)
    num = np.array([[int((pop[f].transpose("env", "unit").values[e].astype(bool)
                          & exists[e]).sum()) for f in flags] for e in range(names.size)])
    den = np.repeat(exists.sum(axis=1)[:, None], len(flags), axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(den > 0, num / np.maximum(den, 1), np.nan)
    dims = (CONTROL_DIM, S.CLASS_DIM)
    return xr.Dataset(
        {"numerator": (dims, num), "denominator": (dims, den), "fraction": (dims, frac)},
        coords={CONTROL_DIM: names, S.CLASS_DIM: list(flags)},
        attrs={"population": population, "denominator": S.DENOMINATOR},
    )
