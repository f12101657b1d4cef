"""Panels of the learned transition structure (the ``transitions`` key of ``hippo-rep
evaluate`` JSON, :func:`hippo_rep.models.transitions.transition_diagnostics`)."""

from __future__ import annotations

import numpy as np

from hippo_rep.plotting.axes import get_ax
from hippo_rep.plotting.style import MEDIUM_FONT_SIZE, SMALL_FONT_SIZE

#: Waves drawn per model in the wave-vector panel (strongest first).
MAX_WAVES = 12


def wave_vector_panel(diagnostics: dict, ax=None, color=None, label: str | None = None,
                      walk_constant: float | None = None):
    """Wave vectors of a linear recurrence in k-space (rad per node), both signs of each wave,
    marker area ∝ modulus^8 so that the components that survive repeated steps stand out.
    The best equal-length 60° triad (``hexagonal_triad``) is ringed, and the title says
    whether it is one (without one, no mixing of the units can be a hexagonal grid).

    Parameters
    ----------
    diagnostics : dict
        One model's ``transitions`` entry; a nonlinear σ (no ``wave_vectors``) draws a note.
    walk_constant : float, optional
        Share of g's power constant along held-out walks (``walk_constant_power``), shown in
        the title.
    """
    ax = get_ax(ax)
    waves = (diagnostics.get("wave_vectors") or {}).get("waves")
    if not waves:
        ax.text(0.5, 0.5, "no wave vectors\n(nonlinear σ: states are not sums of waves)",
                ha="center", va="center", transform=ax.transAxes, fontsize=MEDIUM_FONT_SIZE)
        ax.set_axis_off()
        return ax
    waves = waves[:MAX_WAVES]
    k = np.array([2 * np.pi / w["wavelength"] for w in waves])
    ang = np.deg2rad([w["angle"] for w in waves])
    size = 40 * np.array([w["modulus"] for w in waves]) ** 8
    kx, ky = k * np.cos(ang), k * np.sin(ang)
    ax.scatter(np.r_[kx, -kx], np.r_[ky, -ky], s=np.r_[size, size], color=color, label=label,
               alpha=0.8, edgecolor="none")
    lim = 1.2 * float(k.max())
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_aspect("equal")
    ax.axhline(0, color="0.8", lw=0.5)
    ax.axvline(0, color="0.8", lw=0.5)
    ax.set_xlabel("k$_x$ (rad / node)")
    ax.set_ylabel("k$_y$ (rad / node)")
    comm = diagnostics["wave_vectors"].get("commutator")
    lines = [f"W_a waves ([W_1, W_2] {comm:.1g})" if comm is not None else "W_a waves"]
    triad = diagnostics.get("hexagonal_triad") or {}
    if triad.get("waves") is not None and all(i < len(waves) for i in triad["waves"]):
        idx = triad["waves"]
        ax.scatter(np.r_[kx[idx], -kx[idx]], np.r_[ky[idx], -ky[idx]], s=90, facecolor="none",
                   edgecolor="k" if triad["found"] else "0.6", lw=0.8)
        lines.append(("60° triad" if triad["found"] else "no 60° triad; best")
                     + f" {triad['max_angle_deviation']:.0f}° off, "
                     f"×{triad['length_ratio']:.2f}")
    if walk_constant is not None:
        lines.append(f"walk-constant power {walk_constant:.2f}")
    ax.set_title("\n".join(lines), fontsize=MEDIUM_FONT_SIZE)
    return ax


def loop_return_panel(results: dict[str, dict], ax=None, colors: dict | None = None):
    """z-scored cosine between g before and after each opposite pair of moves and the
    smallest loop, per model, against the add-if-novel write threshold (below it, a revisit
    through that loop writes a duplicate memory)."""
    ax = get_ax(ax)
    colors = colors or {}
    items = [(label, r["transitions"]["loop_returns"]) for label, r in results.items()
             if (r.get("transitions") or {}).get("loop_returns")]
    if not items:
        ax.text(0.5, 0.5, "no loop returns", ha="center", va="center", transform=ax.transAxes)
        return ax
    names = [*items[0][1]["pair_cosine"], "loop"]
    width = 0.8 / len(items)
    x = np.arange(len(names))
    for i, (label, lr) in enumerate(items):
        vals = [*lr["pair_cosine"].values(), lr["loop_cosine"]]
        ax.bar(x + (i - (len(items) - 1) / 2) * width, vals, width, label=label,
               color=colors.get(label))
    thr = items[0][1]["write_threshold"]
    ax.axhline(thr, color="k", ls="--", lw=0.8, label=f"write threshold {thr:g}")
    # two lines each: side by side on one line they ran together ("moves 1,3moves 2,4")
    ax.set_xticks(x, [f"moves\n{n}" if n != "loop" else "smallest\nloop" for n in names],
                  fontsize=MEDIUM_FONT_SIZE)
    lo = min(min(*lr["pair_cosine"].values(), lr["loop_cosine"]) for _, lr in items)
    bottom = min(thr, lo) - 0.02
    ax.set_ylim(bottom, 1 + 0.35 * (1 - bottom))  # headroom for the legend
    ax.set_ylabel("return cosine (z-scored)")
    ax.legend(fontsize=SMALL_FONT_SIZE, loc="upper right", ncols=2)
    return ax


def memories_per_node_panel(results: dict[str, dict], ax=None, colors: dict | None = None):
    """Memories written per distinct node visited (mean, and max over walks as a tick), per
    model; add-if-novel's ideal is 1."""
    ax = get_ax(ax)
    colors = colors or {}
    items = [(label, r["memory"]) for label, r in results.items() if r.get("memory")]
    for i, (label, m) in enumerate(items):
        ax.bar(i, m["memories_per_node"], color=colors.get(label), width=0.6)
        ax.plot([i - 0.3, i + 0.3], [m["memories_per_node_max"]] * 2, color="k", lw=1)
    ax.axhline(1.0, color="k", ls="--", lw=0.8, label="one per node (ideal)")
    ax.set_xticks(range(len(items)), [label for label, _ in items], fontsize=MEDIUM_FONT_SIZE)
    top = max([1.0, *(m["memories_per_node_max"] for _, m in items)])
    ax.set_ylim(0, 1.3 * top)
    ax.set_ylabel("memories per node visited")
    ax.legend(fontsize=SMALL_FONT_SIZE, loc="upper right")
    return ax
