"""Synthetic rate maps with known ground truth (grids, bands, place fields), for tests and demos.

All generators take lengths in bins and angles in degrees from +x towards +y, and return a
DataArray with dims ("y", "x") and integer bin coords; position (x, y) is the bin's (col, row)
index. Grid generators take the *peak-to-peak spacing* (distance between neighbouring
peaks), not the wavelength of the underlying plane waves (for a hexagonal grid the plane-wave
wavelength is ``spacing * sqrt(3) / 2``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from ._checks import MAP_DIMS, check_positive_number


def _grid_xy(shape: int | Sequence[int]) -> tuple[np.ndarray, np.ndarray, tuple[int, int]]:
    if isinstance(shape, (int, np.integer)):
        ny = nx = int(shape)
    else:
        ny, nx = (int(s) for s in shape)
    if ny < 1 or nx < 1:
        raise ValueError(f"shape must be positive; got {shape!r}")
    y, x = np.indices((ny, nx), dtype=np.float64)
    return x, y, (ny, nx)


def _wrap(values: np.ndarray, shape: tuple[int, int], **attrs: object) -> xr.DataArray:
    return xr.DataArray(
        values,
        dims=MAP_DIMS,
        coords={"y": np.arange(shape[0]), "x": np.arange(shape[1])},
        attrs={"units": "1", **attrs},
    )


def plane_wave_sum(
    x: np.ndarray, y: np.ndarray, k: float, angles_deg: Sequence[float], phase: Sequence[float]
) -> np.ndarray:
    """Sum of unit plane waves ``cos(k (p - phase) . (cos a, sin a))`` over ``angles_deg``.

    The one plane-wave formula of the synthetic maps, recordings and sessions
    (:mod:`~hippo_rep.analysis.synthetic_recording`,
    :mod:`~hippo_rep.analysis.synthetic_session`).

    Parameters
    ----------
    x, y : numpy.ndarray
        Positions (any shape, broadcast together), in the length unit of ``1 / k`` and
        ``phase`` (bins for the maps here, cm for sessions).
    k : float
        Wave number, radians per length unit (``2 pi / wavelength``).
    angles_deg : sequence of float
        Direction of each wave vector, degrees from +x towards +y.
    phase : (float, float)
        A point ``(x, y)`` where every wave peaks.

    Returns
    -------
    numpy.ndarray
        The sum, in ``[-len(angles_deg), len(angles_deg)]``, float64.
    """
    px, py = phase
    out = np.zeros_like(x)
    for a in angles_deg:
        t = np.deg2rad(a)
        out += np.cos(k * ((x - px) * np.cos(t) + (y - py) * np.sin(t)))
    return out


def hex_grid_map(
    shape: int | Sequence[int],
    spacing: float,
    orientation: float = 0.0,
    phase: Sequence[float] = (0.0, 0.0),
) -> xr.DataArray:
    """Hexagonal grid: a sum of three plane waves 60 degrees apart, rescaled to [0, 1].

    Parameters
    ----------
    shape : int or (int, int)
        Map size ``n`` (square) or ``(n_y, n_x)``, in bins.
    spacing : float
        Peak-to-peak distance between neighbouring peaks, in bins. The plane waves'
        wavelength is ``spacing * sqrt(3) / 2``.
    orientation : float
        Direction of one of the six nearest peaks as seen from any peak, degrees from +x
        towards +y (meaningful modulo 60).
    phase : (float, float)
        Position ``(x, y)`` of one peak, in bins.

    Returns
    -------
    xarray.DataArray, dims ("y", "x")
        Values in [0, 1] (1 at the peaks).
    """
    spacing = check_positive_number(spacing, "spacing")
    x, y, shp = _grid_xy(shape)
    k = 4 * np.pi / (np.sqrt(3) * spacing)
    # wave vectors are 30 degrees off the peak directions of the real-space lattice
    angles = [orientation + 30.0 + 60.0 * i for i in range(3)]
    v = (plane_wave_sum(x, y, k, angles, phase) + 1.5) / 4.5
    return _wrap(v, shp, spacing=spacing, orientation=orientation, kind="hexagonal grid")


def square_grid_map(
    shape: int | Sequence[int],
    spacing: float,
    orientation: float = 0.0,
    phase: Sequence[float] = (0.0, 0.0),
) -> xr.DataArray:
    """Square grid: two plane waves 90 degrees apart with wavelength ``spacing``, in [0, 1].

    Parameters
    ----------
    shape : int or (int, int)
        Map size in bins.
    spacing : float
        Peak-to-peak distance between neighbouring peaks, in bins.
    orientation : float
        Direction of a nearest neighbouring peak, degrees from +x towards +y (mod 90).
    phase : (float, float)
        Position ``(x, y)`` of one peak, in bins.

    Returns
    -------
    xarray.DataArray, dims ("y", "x")
    """
    spacing = check_positive_number(spacing, "spacing")
    x, y, shp = _grid_xy(shape)
    k = 2 * np.pi / spacing
    v = (plane_wave_sum(x, y, k, [orientation, orientation + 90.0], phase) + 2.0) / 4.0
    return _wrap(v, shp, spacing=spacing, orientation=orientation, kind="square grid")


def band_map(
    shape: int | Sequence[int],
    wavelength: float,
    orientation: float = 0.0,
    phase: Sequence[float] = (0.0, 0.0),
) -> xr.DataArray:
    """Band (stripe) cell: one plane wave, ``(1 + cos(k . (p - phase))) / 2``.

    Parameters
    ----------
    shape : int or (int, int)
        Map size in bins.
    wavelength : float
        Distance between neighbouring stripes, in bins.
    orientation : float
        Direction of the wave vector (normal to the stripes), degrees from +x towards +y
        (meaningful modulo 180).
    phase : (float, float)
        A point ``(x, y)`` on a stripe's crest, in bins.

    Returns
    -------
    xarray.DataArray, dims ("y", "x")
    """
    wavelength = check_positive_number(wavelength, "wavelength")
    x, y, shp = _grid_xy(shape)
    v = (plane_wave_sum(x, y, 2 * np.pi / wavelength, [orientation], phase) + 1.0) / 2.0
    return _wrap(v, shp, wavelength=wavelength, orientation=orientation, kind="band")


def place_field_map(
    shape: int | Sequence[int],
    centres: Sequence[Sequence[float]],
    sigma: float | Sequence[float] = 2.0,
    amplitude: float | Sequence[float] = 1.0,
    baseline: float = 0.0,
) -> xr.DataArray:
    """Sum of isotropic Gaussian place fields plus a baseline.

    Parameters
    ----------
    shape : int or (int, int)
        Map size in bins.
    centres : sequence of (x, y)
        Field centres in bins.
    sigma : float or sequence of float
        Standard deviation of each field, in bins.
    amplitude : float or sequence of float
        Peak height of each field.
    baseline : float
        Constant added everywhere.

    Returns
    -------
    xarray.DataArray, dims ("y", "x")
    """
    x, y, shp = _grid_xy(shape)
    cs = np.atleast_2d(np.asarray(centres, dtype=np.float64))
    if cs.size == 0:
        cs = np.zeros((0, 2))
    if cs.ndim != 2 or cs.shape[1] != 2:
        raise ValueError(f"centres must be a sequence of (x, y) pairs; got {centres!r}")
    sig = np.broadcast_to(np.asarray(sigma, dtype=np.float64), (cs.shape[0],))
    amp = np.broadcast_to(np.asarray(amplitude, dtype=np.float64), (cs.shape[0],))
    if np.any(sig <= 0):
        raise ValueError(f"sigma must be > 0; got {sigma!r}")
    v = np.full(x.shape, float(baseline))
    for (cx, cy), s, a in zip(cs, sig, amp, strict=True):
        v += a * np.exp(-((x - cx) ** 2 + (y - cy) ** 2) / (2 * s**2))
    return _wrap(v, shp, kind="place fields")


def border_map(
    shape: int | Sequence[int],
    wall: str = "x_min",
    width: float = 1.5,
    extent: float = 1.0,
) -> xr.DataArray:
    """Border cell: a band of firing along one wall, ``exp(-d**2 / (2 width**2))`` with ``d``
    the distance (bins) of a bin from the wall's row or column of bins.

    Parameters
    ----------
    shape : int or (int, int)
        Map size in bins.
    wall : {"x_min", "x_max", "y_min", "y_max"}
        The wall (column 0, the last column, row 0, the last row).
    width : float
        Standard deviation of the decay away from the wall, in bins.
    extent : float
        Fraction of the wall's length covered, in (0, 1], centred on the wall (beyond it the
        band decays with the same ``width``).

    Returns
    -------
    xarray.DataArray, dims ("y", "x")
    """
    width = check_positive_number(width, "width")
    extent = check_positive_number(extent, "extent")
    if extent > 1 or wall not in ("x_min", "x_max", "y_min", "y_max"):
        raise ValueError(f"wall must be x_min, x_max, y_min or y_max and extent in (0, 1]; "
                         f"got {wall!r}, {extent!r}")
    x, y, shp = _grid_xy(shape)
    ny, nx = shp
    across, along, n_along = {"x_min": (x, y, ny), "x_max": (nx - 1 - x, y, ny),
                              "y_min": (y, x, nx), "y_max": (ny - 1 - y, x, nx)}[wall]
    half = extent * n_along / 2
    off = np.maximum(np.abs(along - (n_along - 1) / 2) - half + 0.5, 0.0)
    v = np.exp(-(across**2 + off**2) / (2 * width**2))
    return _wrap(v, shp, wall=wall, width=width, extent=extent, kind="border")


def two_wave_map(
    shape: int | Sequence[int],
    wavelength: float,
    separation: float = 60.0,
    orientation: float = 0.0,
    phase: Sequence[float] = (0.0, 0.0),
) -> xr.DataArray:
    """Two plane waves of equal wavelength ``separation`` degrees apart, rescaled to [0, 1].

    The pattern a linear recurrence with commuting transitions often learns; for separations
    of 55-75 degrees it scores gridness-60 of 0.6-0.9 although it is not a grid
    (measured on synthetic maps for this project). A separation of 90 degrees is a square grid
    of spacing ``wavelength``.

    Parameters
    ----------
    shape : int or (int, int)
        Map size in bins.
    wavelength : float
        Period of both waves, in bins.
    separation : float
        Angle between the two wave vectors, degrees.
    orientation : float
        Direction of the first wave vector, degrees from +x towards +y; the second points at
        ``orientation + separation``.
    phase : (float, float)
        A point ``(x, y)`` where both waves peak, in bins.

    Returns
    -------
    xarray.DataArray, dims ("y", "x")
    """
    wavelength = check_positive_number(wavelength, "wavelength")
    x, y, shp = _grid_xy(shape)
    k = 2 * np.pi / wavelength
    v = (plane_wave_sum(x, y, k, [orientation, orientation + separation], phase) + 2.0) / 4.0
    return _wrap(v, shp, wavelength=wavelength, separation=separation,
                 orientation=orientation, kind="two plane waves")
