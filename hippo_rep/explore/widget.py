"""The interactive rate-map explorer of notebook 01 (ipywidgets), with static panels of the
top units when ipywidgets is not installed.

Pick an environment, a population and a unit — from a list or a slider ordered by score — and
see its rate map, autocorrelogram and scores with their null percentiles, or its maps in every
environment side by side. A map that cannot be drawn shows its one-line reason instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hippo_rep.explore.figures import compare_figure, unit_figure
from hippo_rep.explore.tables import ExploreError, rank_key, ranked_units
from hippo_rep.plotting.display import (
    DEFAULT_FORMAT,
    FORMATS,
    display_in_ipython,
    display_output,
    register_figure_formatter,
    text_output,
)
from hippo_rep.plotting.display import show as show_figure

#: Units per population shown by the static explorer (no ipywidgets).
STATIC_UNITS = 2

#: Rendered panels the explorer keeps (oldest dropped first), so going back is instant.
EXPLORER_CACHE = 64


def _reason(err: Exception) -> str:
    """One line saying why a panel is empty."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    return text if isinstance(err, ExploreError) else f"{type(err).__name__}: {text}"


def _static(analysis, env, variables: Sequence[str], n_units: int, fmt: str,
            show: bool) -> list:
    figs = []
    for v in variables:
        try:
            ranked = ranked_units(analysis, env, v)[:n_units]
        except ExploreError as err:
            print(f"{v}: {_reason(err)}")
            continue
        todo = [(f"{v} {i}", unit_figure, (analysis, env, v, i)) for i, _ in ranked]
        if ranked and analysis.sizes["env"] > 1:
            todo.append((f"{v} {ranked[0][0]} across environments", compare_figure,
                         (analysis, v, ranked[0][0])))
        for name, build, args in todo:
            try:
                fig = build(*args)
            except ExploreError as err:
                print(f"{name}: {_reason(err)}")
                continue
            figs.append(fig)
            if show:
                show_figure(fig, fmt)
    return figs


@dataclass
class Explorer:
    """The widgets of :func:`explore_rate_maps`; displays as its ``widget`` (a VBox).

    ``env``, ``population``, ``view`` ("unit" or "compare"), ``unit`` (a Dropdown, best first)
    and ``rank`` (an IntSlider over the same order) are the controls; ``output`` (an
    ipywidgets ``Output``) holds the figure as an image, or the one-line reason there is none.
    ``cache`` holds the last :data:`EXPLORER_CACHE` panels drawn (clear it to redraw).
    """

    widget: object
    env: object
    population: object
    view: object
    unit: object
    rank: object
    output: object
    cache: dict

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


def explore_rate_maps(analysis, env=None, variables: Sequence[str] | None = None,
                      widgets: bool | None = None, n_static: int = STATIC_UNITS,
                      show: bool = True, fmt: str = DEFAULT_FORMAT):
    """Pick an environment, a population and a unit; see its rate map, autocorrelogram and
    scores side by side, or its maps in every environment.

    Parameters
    ----------
    analysis : xarray.Dataset
        An analysis dataset.
    env : env coordinate value, optional
        Environment shown first (default: the first); it also ranks the units.
    variables : sequence of str, optional
        Populations offered (default: every population of the dataset).
    widgets : bool, optional
        True: ipywidgets (an error if it is not installed); False: static panels; None
        (default): ipywidgets when importable, else static panels.
    n_static : int
        Units per population in the static panels (the top ones by :func:`rank_key`),
        followed by the best unit's maps across environments.
    show : bool
        Display the result (in IPython) before returning it.
    fmt : {"png", "svg"}
        How figures are shown (PNG at 2× resolution, or SVG). Bare figures returned from
        later cells are shown the same way (:func:`register_figure_formatter`).

    Returns
    -------
    Explorer or list of matplotlib.figure.Figure
        The explorer's widgets, or the static figures (a unit whose map cannot be drawn is
        left out, its reason printed).
    """

    if fmt not in FORMATS:
        raise ExploreError(f"unknown display format {fmt!r}; use one of {', '.join(FORMATS)}")
    envs = list(analysis["env"].values)
    env = envs[0] if env is None else env
    if env not in envs:
        raise ExploreError(f"no environment {env!r}; environments: {', '.join(map(str, envs))}")
    if variables is None:
        variables = list(analysis.hippo.populations)
    if not variables:
        raise ExploreError("no population to explore (variables is empty)")
    register_figure_formatter(fmt)
    if widgets is None or widgets:
        try:
            import ipywidgets
        except ImportError:
            if widgets:
                raise
            ipywidgets = None
    else:
        ipywidgets = None
    if ipywidgets is None:
        return _static(analysis, env, variables, n_static, fmt, show)
    explorer = _widget(ipywidgets, analysis, envs, env, list(variables), fmt)
    if show:
        display_in_ipython(explorer.widget)
    return explorer


def _widget(ipywidgets, analysis, envs: list, env, variables: list[str], fmt: str) -> Explorer:
    env_w = ipywidgets.Dropdown(options=[(str(e), e) for e in envs], value=env,
                                description="env")
    var_w = ipywidgets.Dropdown(options=variables, value=variables[0], description="population")
    view_w = ipywidgets.ToggleButtons(
        options=[("unit", "unit"), ("compare environments", "compare")], value="unit",
        style={"button_width": "auto"},
        tooltips=["rate map, autocorrelogram and scores in one environment",
                  "the unit's rate maps in every environment"])
    unit_w = ipywidgets.Dropdown(description="unit")
    rank_w = ipywidgets.IntSlider(min=0, max=0, value=0, description="rank",
                                  continuous_update=False)
    out = ipywidgets.Output()
    state = {"busy": False, "ids": [], "reason": ""}
    cache: dict = {}  # (compare, env, population, unit) → output, oldest first

    def options(keep: bool) -> None:
        old = unit_w.value
        state["busy"] = True  # no redraw while the options change
        try:
            try:
                ranked = ranked_units(analysis, env_w.value, var_w.value)
                state["reason"] = ""
            except ExploreError as err:
                ranked, state["reason"] = [], _reason(err)
            key = rank_key(analysis, var_w.value) or "unranked"
            ids = [i for i, _ in ranked]
            state["ids"] = ids
            unit_w.options = [(f"{i}  ({key} {s:.2f})", i) for i, s in ranked]
            unit_w.value = old if keep and old in ids else (ids[0] if ids else None)
            rank_w.max = max(len(ids) - 1, 0)
            rank_w.value = ids.index(unit_w.value) if unit_w.value in ids else 0
        finally:
            state["busy"] = False

    def draw() -> None:
        if unit_w.value is None:
            why = state["reason"] or f"population {var_w.value!r} has no units"
            out.outputs = (text_output(why),)
            return
        compare = view_w.value == "compare"
        key = (compare, None if compare else env_w.value, var_w.value, unit_w.value)
        if key not in cache:
            try:
                if compare:
                    fig = compare_figure(analysis, var_w.value, unit_w.value)
                else:
                    fig = unit_figure(analysis, env_w.value, var_w.value, unit_w.value)
                shown = display_output(fig, fmt)
            except Exception as err:  # noqa: BLE001 — a widget callback would swallow it
                shown = text_output(_reason(err))
            cache[key] = shown
            while len(cache) > EXPLORER_CACHE:
                cache.pop(next(iter(cache)))
        out.outputs = (cache[key],)

    def on_unit(_change) -> None:
        if state["busy"]:
            return
        state["busy"] = True
        try:
            if unit_w.value in state["ids"]:
                rank_w.value = state["ids"].index(unit_w.value)
        finally:
            state["busy"] = False
        draw()

    def on_rank(_change) -> None:
        if state["busy"] or not state["ids"]:
            return
        state["busy"] = True
        try:
            unit_w.value = state["ids"][min(rank_w.value, len(state["ids"]) - 1)]
        finally:
            state["busy"] = False
        draw()

    options(keep=False)
    # a new environment keeps the unit (to compare environments); a new population starts
    # from its best unit
    env_w.observe(lambda _change: (options(keep=True), draw()), names="value")
    var_w.observe(lambda _change: (options(keep=False), draw()), names="value")
    view_w.observe(lambda _change: draw(), names="value")
    unit_w.observe(on_unit, names="value")
    rank_w.observe(on_rank, names="value")
    draw()
    box = ipywidgets.VBox([ipywidgets.HBox([env_w, var_w]), ipywidgets.HBox([unit_w, rank_w]),
                           view_w, out])
    return Explorer(widget=box, env=env_w, population=var_w, view=view_w, unit=unit_w,
                    rank=rank_w, output=out, cache=cache)
