"""Checks of a rendered figure that a reviewer would otherwise make by eye.

Pure functions of a :class:`matplotlib.figure.Figure` that return a list of
:class:`Problem`, empty when the figure passes. Each rule draws the figure once (Agg or
whatever canvas it has) when called alone; :func:`check_figure` draws it once for all of them
and shares that drawing (the renderer, the texts drawn and their measured boxes:
:class:`Drawing`) across the rules:

- :func:`overlapping_texts`: pairs of drawn, non-empty text artists (titles, panel
  letters, tick labels, axis labels, annotations, legend texts, suptitle, colour-bar labels)
  whose rendered boxes overlap (by more than :data:`OVERLAP_TOLERANCE_PT` in height), or sit
  side by side closer than :data:`MIN_GAP_PT` (they read as one string); tick labels count
  like any other text (two tick labels printed over each other are unreadable); rotated
  texts are compared as rotated rectangles, not their axis-aligned boxes.
- :func:`texts_over_panels`: drawn texts that reach into the plotting area of a panel
  other than their own (a panel letter over the neighbour's curves, a title or tick label
  running into the next panel).
- :func:`texts_outside_figure`: drawn texts that run past an edge of the figure (a long
  suptitle wider than the page): cut off in a plain save, and with the paper style's tight
  save box they widen the saved figure beyond its set size.
- :func:`texts_across_axes`: texts written in an axes (``ax.text``, annotations) that cross
  the edge of its box, partly inside and partly out (a label at a corner of a scatter
  running across the frame); one wholly outside (a panel letter) is placed there on
  purpose.
- :func:`texts_over_points`: texts written in an axes over its own markers (a point of a
  scatter, a marker of a line): a label at a fixed place that the data can reach.
- :func:`empty_axes`: visible axes that draw no data (no line in data coordinates with a
  finite point —``axhline``/``axvline`` are reference lines —, image, collection, patch
  beyond the background or table) and carry no visible text inside them saying why (a title
  or a panel letter outside the box does not count); an axes switched off and blank is a
  gap, not a panel.
- :func:`legends_over_data`: a legend inside its axes drawn over the axes' data (a curve,
  a reference line such as ``axhline``, an error bar or ``hlines``/``vlines`` segment, a
  bar, a point or marker runs under its entries; a line without any finite point is not
  data).
- :func:`images_without_colorbar`: axes showing a map (an ``AxesImage`` or ``QuadMesh``)
  none of whose maps is read by a colour bar in the figure (its own, an inset one included,
  or that of another map on the same colour map and limits: a shared bar).

:func:`check_figure` runs all eight; :func:`report` writes the problems one per line.

A ninth check needs the column width the figure was drawn for, so :func:`check_figure`
does not run it: :func:`oversized` (rule "size") finds a figure wider than its column
(:data:`~hippo_rep.plotting.style.COLUMN_WIDTHS`) or taller than a journal page
(:data:`~hippo_rep.plotting.style.MAX_HEIGHT`), by its set size and by the size it is saved
at (:func:`saved_size`: the tight save box, which grows with anything drawn past the
figure's edges).
Nothing is saved and the figure is not changed (other than being drawn; a bare ``Figure``
without a canvas that renders gets an Agg one). Not checked: texts over lines without
markers or over bars (legends aside), font sizes.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Overlap (points) that the height of the intersection of two text boxes must exceed for
#: the pair to be reported: boxes of two lines that merely touch are not.
OVERLAP_TOLERANCE_PT = 0.75

#: Smallest horizontal gap (points) between two horizontal texts side by side on one line:
#: closer, they read as one string ("spacing 9.0g60 0.67", "moves 1,3moves 2,4"), so the
#: pair is reported as an overlap too (about one and a half spaces at 7 pt).
MIN_GAP_PT = 4.0


@dataclass(frozen=True)
class Problem:
    """One defect found: its ``rule`` ("overlap": texts over each other, run together or
    into another panel; "outside": a text past the figure's edge; "edge": a text across
    the edge of its axes; "data": a text over its axes' points or markers; "empty";
    "colorbar"; "legend": over data; "size": wider than its column or taller than a page,
    :func:`oversized`) and what, in words."""

    rule: str
    detail: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.detail}"


def _renderer(fig):
    """Draw the figure; its renderer. A bare Figure (no pyplot, canvas without a renderer)
    gets an Agg canvas, as saving it to PNG would."""
    if not hasattr(fig.canvas, "get_renderer"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def _drawn_texts(fig) -> tuple[list, object]:
    """(every Text the figure draws with something written in it, the renderer), found by
    drawing the figure with :meth:`matplotlib.text.Text.draw` recorded: what a hidden axes,
    legend or a tick outside the view holds is not drawn and not listed."""
    from matplotlib.text import Text

    drawn: dict[int, object] = {}
    original = Text.draw

    def record(self, renderer):
        if self.get_visible() and self.get_text().strip():
            drawn[id(self)] = self
        return original(self, renderer)

    Text.draw = record
    try:
        renderer = _renderer(fig)
    finally:
        Text.draw = original
    return list(drawn.values()), renderer


class Drawing:
    """A figure drawn once, shared by the rules: its ``renderer``, the ``texts`` it drew
    (visible, non-empty) and, measured once each, their window boxes (:meth:`box`) and the
    corners of rotated ones (:meth:`corners`).

    Make it with :func:`draw` and pass it to the rules as ``drawing=``; a figure changed
    after it was drawn needs a new one."""

    def __init__(self, fig):
        self.fig = fig
        self.texts, self.renderer = _drawn_texts(fig)
        self._boxes: dict[int, object] = {}
        self._corners: dict[int, object] = {}

    def box(self, artist):
        """The artist's window extent (pixels), measured once."""
        key = id(artist)
        if key not in self._boxes:
            self._boxes[key] = artist.get_window_extent(self.renderer)
        return self._boxes[key]

    def corners(self, t):
        """The four corners (pixels) of a rotated text's own rectangle (None: not
        rotated; :func:`_corners`), measured once."""
        key = id(t)
        if key not in self._corners:
            self._corners[key] = _corners(t, self.box(t), self.renderer)
        return self._corners[key]


def draw(fig) -> Drawing:
    """Draw ``fig`` once for several rules (:class:`Drawing`)."""
    return Drawing(fig)


def _name(t) -> str:
    text = t.get_text().replace("\n", " / ")
    if len(text) > 50:
        text = text[:47] + "..."
    where = ""
    if t.axes is not None:
        title = t.axes.get_title() or t.axes.get_label() or ""
        where = f" in axes {title[:30]!r}" if title else " in an axes"
    return f"{text!r}{where}"


def overlapping_texts(fig, tolerance: float = OVERLAP_TOLERANCE_PT,
                      min_gap: float = MIN_GAP_PT, drawing: Drawing | None = None
                      ) -> list[Problem]:
    """Pairs of drawn texts whose rendered boxes overlap: their intersection is taller than
    ``tolerance`` points and wider than ``-min_gap`` points (texts on one line closer than
    ``min_gap`` run together). ``drawing``: the figure already drawn (:func:`draw`)."""
    drawing = drawing or draw(fig)
    px = fig.dpi / 72.0
    tolerance, min_gap = tolerance * px, min_gap * px
    boxes = []
    for t in drawing.texts:
        bb = drawing.box(t)
        if bb.width > 0 and bb.height > 0:
            boxes.append((t, bb, drawing.corners(t)))
    problems = []
    for i in range(len(boxes)):
        ti, bi, ci = boxes[i]
        for j in range(i + 1, len(boxes)):
            tj, bj, cj = boxes[j]
            w = min(bi.x1, bj.x1) - max(bi.x0, bj.x0)
            h = min(bi.y1, bj.y1) - max(bi.y0, bj.y0)
            # side by side on one line (both horizontal): closer than min_gap reads as one
            # string; otherwise (an axis label beside its tick labels) only a real overlap
            flat = ti.get_rotation() % 360 == 0 and tj.get_rotation() % 360 == 0
            if not (w > (-min_gap if flat else tolerance) and h > tolerance):
                continue
            if (ci is not None or cj is not None) and not _rectangles_meet(
                    ci if ci is not None else _box_corners(bi),
                    cj if cj is not None else _box_corners(bj), tolerance):
                continue  # rotated texts whose boxes meet but whose letters do not
            problems.append(Problem("overlap", f"{_name(ti)} overlaps {_name(tj)} "
                                               f"({w:.0f} x {h:.0f} px)"))
    return problems


def _families(fig) -> dict[int, set[int]]:
    """id of each axes → ids of the axes it belongs with: itself, its insets (e.g. its
    colour bar), the axes it is an inset of and that one's other insets."""
    parent = {}
    for ax in _all_axes(fig):
        for child in getattr(ax, "child_axes", ()):
            parent[id(child)] = ax
    out = {}
    for ax in _all_axes(fig):
        top = ax
        while id(top) in parent:
            top = parent[id(top)]
        out[id(ax)] = {id(a) for a in _all_axes_under(top)}
    return out


def _all_axes_under(ax) -> list:
    out = [ax]
    for child in getattr(ax, "child_axes", ()):
        out.extend(_all_axes_under(child))
    return out


def _panels(fig, drawing: Drawing) -> list:
    """(axes, window box) of every visible panel that shows something: drawn axes (axis
    on) or axes holding data or text; blank switched-off gaps and colour bars aside."""
    out = []
    for ax in _all_axes(fig):
        if not ax.get_visible() or _is_colorbar_axes(ax):
            continue
        if not ax.axison and not _has_data(ax) and not _own_texts(ax):
            continue
        out.append((ax, drawing.box(ax)))
    return out


def texts_over_panels(fig, tolerance: float = OVERLAP_TOLERANCE_PT,
                      drawing: Drawing | None = None) -> list[Problem]:
    """Drawn texts that reach into the plotting area of another panel (a panel letter over
    the neighbour's curves, a long tick label or title running into the next panel): the
    text's box overlaps, by more than ``tolerance`` points both ways, the box of an axes
    other than its own (or its own colour bar or inset). ``drawing``: the figure already
    drawn (:func:`draw`)."""
    drawing = drawing or draw(fig)
    tolerance *= fig.dpi / 72.0
    panels = _panels(fig, drawing)
    families = _families(fig)
    problems = []
    for t in drawing.texts:
        own = families.get(id(t.axes), {id(t.axes)}) if t.axes is not None else set()
        bb = drawing.box(t)
        corners = drawing.corners(t)
        for ax, box in panels:
            if id(ax) in own:
                continue
            w = min(bb.x1, box.x1) - max(bb.x0, box.x0)
            h = min(bb.y1, box.y1) - max(bb.y0, box.y0)
            if w <= tolerance or h <= tolerance:
                continue
            if corners is not None and not _rectangles_meet(corners, _box_corners(box),
                                                            tolerance):
                continue
            what = ax.get_title() or ax.get_label() or "untitled"
            problems.append(Problem("overlap", f"{_name(t)} reaches into the panel "
                                               f"{what[:30]!r} ({w:.0f} x {h:.0f} px)"))
    return problems


def texts_outside_figure(fig, tolerance: float = OVERLAP_TOLERANCE_PT,
                         drawing: Drawing | None = None) -> list[Problem]:
    """Drawn texts that run past an edge of the figure by more than ``tolerance`` points (a
    suptitle wider than the page, a label beyond the bottom edge): cut off in a plain save;
    with a tight save box (the paper style's) the saved figure grows beyond its set size.
    Rotated texts are measured by their own rectangle's corners. ``drawing``: the figure
    already drawn (:func:`draw`)."""

    drawing = drawing or draw(fig)
    tolerance *= fig.dpi / 72.0
    edge = fig.bbox
    problems = []
    for t in drawing.texts:
        sides = _sides_past(_extent(t, drawing), edge, tolerance)
        if sides:
            problems.append(Problem("outside", f"{_name(t)} runs past the figure's "
                                               f"{' and '.join(sides)}"))
    return problems


def _extent(t, drawing: Drawing) -> tuple[float, float, float, float]:
    """(x0, y0, x1, y1) display extent of a drawn text: of its own rectangle's corners when
    rotated, else of its box."""
    import numpy as np

    corners = drawing.corners(t)
    pts = corners if corners is not None else _box_corners(drawing.box(t))
    (x0, y0), (x1, y1) = np.min(pts, axis=0), np.max(pts, axis=0)
    return x0, y0, x1, y1


def _sides_past(extent, box, tolerance: float) -> list[str]:
    """The sides of ``box`` that an ``extent`` (x0, y0, x1, y1) runs past by more than
    ``tolerance`` pixels, as "side by N px"."""
    x0, y0, x1, y1 = extent
    past = {"left": box.x0 - x0, "right": x1 - box.x1, "bottom": box.y0 - y0,
            "top": y1 - box.y1}
    return [f"{side} by {d:.0f} px" for side, d in past.items() if d > tolerance]


def _box_corners(bb):
    import numpy as np

    return np.array([[bb.x0, bb.y0], [bb.x1, bb.y0], [bb.x1, bb.y1], [bb.x0, bb.y1]])


def _corners(t, bb, renderer):
    """The four corners (pixels) of a rotated text's own rectangle (None: not rotated).

    The window extent of a rotated text is the axis-aligned box around it, much larger than
    its letters; the text's rectangle has the size of the unrotated text and the same
    centre as that box, turned by the rotation."""
    import numpy as np

    original = t.get_rotation()
    angle = original % 180
    if angle in (0, 90):
        return None
    t.set_rotation(0)
    try:
        flat = t.get_window_extent(renderer)
    finally:
        t.set_rotation(original)  # as it was (330°, not 150°: the figure stays unchanged)
    half = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) * [flat.width / 2, flat.height / 2]
    a = np.deg2rad(angle)
    rot = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    centre = np.array([(bb.x0 + bb.x1) / 2, (bb.y0 + bb.y1) / 2])
    return centre + half @ rot.T


def _rectangles_meet(a, b, tolerance: float) -> bool:
    """Whether two convex quadrilaterals (4 x 2 corners) overlap by more than ``tolerance``
    along every separating direction (the separating-axis test)."""
    import numpy as np

    for poly in (a, b):
        for k in range(4):
            edge = poly[(k + 1) % 4] - poly[k]
            normal = np.array([-edge[1], edge[0]])
            norm = np.hypot(*normal)
            if norm == 0:
                continue
            pa, pb = a @ normal / norm, b @ normal / norm
            if min(pa.max(), pb.max()) - max(pa.min(), pb.min()) <= tolerance:
                return False
    return True


def _is_colorbar_axes(ax) -> bool:
    return getattr(ax, "_colorbar", None) is not None or ax.get_label() == "<colorbar>"


def _finite_points(line):
    """The (x, y) points of a Line2D with both coordinates finite (n x 2)."""
    import numpy as np

    xy = np.asarray(line.get_xydata(), dtype=float).reshape(-1, 2)
    return xy[np.isfinite(xy).all(axis=1)]


def _has_data(ax) -> bool:
    """Whether ``ax`` draws data: a line in data coordinates with at least one finite point
    (``axhline``/``axvline``, in axes coordinates along one side, are reference lines, not
    data; an all-NaN line draws nothing), an image, a collection, a patch other than the
    background, or a table."""
    lines = [ln for ln in ax.lines if ln.get_visible() and ln.get_transform() is ax.transData
             and len(_finite_points(ln))]
    others = [a for a in (*ax.images, *ax.collections, *ax.patches, *ax.tables)
              if a.get_visible()]
    return bool(lines or others)


def _own_texts(ax) -> list:
    """Visible, non-empty texts that belong to ``ax``: its texts, title and annotations."""
    texts = [*ax.texts, ax.title, ax._left_title, ax._right_title]
    return [t for t in texts if t.get_visible() and t.get_text().strip()]


def _notes_inside(ax, drawing: Drawing) -> list:
    """Visible, non-empty texts of ``ax`` whose centre lies inside the axes box."""
    box = drawing.box(ax)
    out = []
    for t in ax.texts:
        if t.get_visible() and t.get_text().strip():
            bb = drawing.box(t)
            if box.contains((bb.x0 + bb.x1) / 2, (bb.y0 + bb.y1) / 2):
                out.append(t)
    return out


def empty_axes(fig, drawing: Drawing | None = None) -> list[Problem]:
    """Visible axes (colour bars aside) with no data artist and no visible text of their
    own inside it (``ax.text`` or an annotation within the axes box: a title, or a panel
    letter outside the box, does not say why it is empty). ``drawing``: the figure already
    drawn (:func:`draw`)."""
    drawing = drawing or draw(fig)
    problems = []
    for ax in fig.axes:
        if not ax.get_visible() or _is_colorbar_axes(ax) or _has_data(ax):
            continue
        if not ax.axison and not _own_texts(ax):
            continue  # switched off and blank: a deliberate gap in a grid of panels
        if _notes_inside(ax, drawing):
            continue  # it says why (a note written in the axes)
        what = ax.get_title() or ax.get_label() or "untitled"
        problems.append(Problem("empty", f"axes {what[:50]!r} draws nothing and says why "
                                         "nowhere (add a visible note, or drop the axes)"))
    return problems


def _mappables(ax) -> list:
    from matplotlib.collections import QuadMesh
    from matplotlib.image import AxesImage

    return [a for a in (*ax.images, *ax.collections)
            if isinstance(a, AxesImage | QuadMesh) and a.get_visible()]


def _scale(mappable) -> tuple:
    """(colour map name, norm type, vmin, vmax): two maps with the same colour map and
    limits are read from the same colour bar."""
    norm = mappable.norm
    return (mappable.get_cmap().name, type(norm).__name__, norm.vmin, norm.vmax)


def _all_axes(fig) -> list:
    """The figure's axes and, after each, its inset axes (e.g. an inset colour bar)."""
    return [a for ax in fig.axes for a in _all_axes_under(ax)]


def images_without_colorbar(fig, drawing: Drawing | None = None) -> list[Problem]:
    """Axes showing a map (AxesImage or QuadMesh) none of whose maps is read by a colour bar
    in the figure: the map's own (its ``colorbar`` attribute, that bar's axes in the figure),
    or the bar of another map on the same colour map, norm and limits (a shared bar).
    ``drawing``: the figure already drawn (:func:`draw`)."""
    if drawing is None:
        draw(fig)  # the colour bars of a layout engine are made while drawing
    every = _all_axes(fig)
    cbar_axes = {id(ax) for ax in every if _is_colorbar_axes(ax)}
    # the colour scales a colour bar in the figure reads: its mappable's own, and any other
    # map drawn on exactly that scale (one bar shared by a row of autocorrelograms)
    shared = {_scale(m) for ax in every for m in _mappables(ax)
              if getattr(m, "colorbar", None) is not None and id(m.colorbar.ax) in cbar_axes}
    problems = []
    for ax in every:
        if not ax.get_visible() or id(ax) in cbar_axes:
            continue
        maps = _mappables(ax)
        if not maps:
            continue
        ok = any(_scale(m) in shared for m in maps)
        if not ok:
            what = ax.get_title() or ax.get_label() or "untitled"
            problems.append(Problem("colorbar", f"axes {what[:50]!r} shows a map without a "
                                                "colour bar"))
    return problems


def _points_in_box(pts, box) -> bool:
    return bool(len(pts)) and bool(((pts[:, 0] >= box.x0) & (pts[:, 0] <= box.x1)
                                    & (pts[:, 1] >= box.y0) & (pts[:, 1] <= box.y1)).any())


def _no_line(style) -> bool:
    return style in ("None", "none", "", " ")


def _data_in_box(ax, box) -> str | None:
    """What data of ``ax`` lies in the display box ``box``; None when nothing does: a line
    (reference lines such as ``axhline`` included; its markers alone where it has no line
    style, as error-bar caps; a line without a finite point draws nothing), a segment of a
    line collection (error bars, ``hlines``/``vlines``), a bar or other patch, a point of a
    scatter."""
    import numpy as np
    from matplotlib.collections import LineCollection, PathCollection

    for ln in ax.lines:
        if not ln.get_visible() or not len(_finite_points(ln)):
            continue
        transform = ln.get_transform()
        if _no_line(ln.get_linestyle()):  # markers only: the points, not a path between
            if _no_line(ln.get_marker()):
                continue
            hit = _points_in_box(transform.transform(_finite_points(ln)), box)
        else:
            hit = transform.transform_path(ln.get_path()).intersects_bbox(box, filled=False)
        if hit:
            return f"line {ln.get_label()!r}" if not ln.get_label().startswith("_") \
                else "a line"
    for patch in ax.patches:
        if patch.get_visible():
            path = patch.get_transform().transform_path(patch.get_path())
            if len(path.vertices) and path.intersects_bbox(box, filled=patch.get_fill()):
                return "a bar or patch"
    for coll in ax.collections:
        if not coll.get_visible():
            continue
        if isinstance(coll, PathCollection):
            pts = np.asarray(coll.get_offset_transform().transform(coll.get_offsets()))
            if _points_in_box(pts, box):
                return "points"
        elif isinstance(coll, LineCollection):
            transform = coll.get_transform()
            for path in coll.get_paths():
                v = path.vertices
                if len(v) and np.isfinite(v).all(axis=1).any() and transform.transform_path(
                        path).intersects_bbox(box, filled=False):
                    return "error bars or line segments"
    return None


def legends_over_data(fig, drawing: Drawing | None = None) -> list[Problem]:
    """Legends drawn inside their axes over its data: a curve, reference line (``axhline``),
    error bar, bar or point runs under the legend's text (a legend outside the axes box is
    not checked). ``drawing``: the figure already drawn (:func:`draw`)."""
    drawing = drawing or draw(fig)
    problems = []
    for ax in _all_axes(fig):
        legend = ax.get_legend()
        if legend is None or not legend.get_visible() or not ax.get_visible():
            continue
        box = drawing.box(legend)
        if not drawing.box(ax).overlaps(box):
            continue
        # the legend's entries only (texts and handles), not its padding
        inner = drawing.box(legend._legend_box)
        what = _data_in_box(ax, inner)
        if what:
            title = ax.get_title() or ax.get_label() or "untitled"
            problems.append(Problem("legend", f"the legend of axes {title[:40]!r} lies over "
                                              f"{what}"))
    return problems


def _written_in(ax, drawing: Drawing) -> list:
    """The drawn texts written in ``ax`` (``ax.text`` and annotations, panel letters
    included; not its title or tick labels)."""
    drawn = {id(t) for t in drawing.texts}
    return [t for t in ax.texts if id(t) in drawn]


def texts_across_axes(fig, tolerance: float = OVERLAP_TOLERANCE_PT,
                      drawing: Drawing | None = None) -> list[Problem]:
    """Texts written in an axes (``ax.text``, annotations) that cross an edge of its box:
    partly inside it and partly outside, by more than ``tolerance`` points (a label at a
    corner of a scatter that runs across the frame, clipped where it is drawn with
    ``clip_on``). A text wholly outside its axes (a panel letter, a note beside the panel)
    is placed there on purpose and not reported (:func:`texts_over_panels` and
    :func:`texts_outside_figure` check where it lands); axes switched off have no frame to
    cross. Rotated texts are measured by their own rectangle's corners. ``drawing``: the
    figure already drawn (:func:`draw`)."""

    drawing = drawing or draw(fig)
    tolerance *= fig.dpi / 72.0
    problems = []
    for ax in _all_axes(fig):
        if not ax.get_visible() or not ax.axison:
            continue
        box = drawing.box(ax)
        for t in _written_in(ax, drawing):
            x0, y0, x1, y1 = extent = _extent(t, drawing)
            inside_w = min(x1, box.x1) - max(x0, box.x0)
            inside_h = min(y1, box.y1) - max(y0, box.y0)
            if inside_w <= tolerance or inside_h <= tolerance:
                continue  # wholly outside: placed there on purpose
            sides = _sides_past(extent, box, tolerance)
            if sides:
                problems.append(Problem("edge", f"{_name(t)} crosses its axes' "
                                                f"{' and '.join(sides)}"))
    return problems


def _points_of(ax) -> list:
    """(what, display points (n x 2)) of every scatter and every line's markers of ``ax``
    (a line without markers has none; its finite points only)."""
    import numpy as np
    from matplotlib.collections import PathCollection

    out = []
    for ln in ax.lines:
        if ln.get_visible() and not _no_line(ln.get_marker()):
            pts = _finite_points(ln)
            if len(pts):
                label = ln.get_label()
                what = f"the markers of line {label!r}" if not label.startswith("_") \
                    else "the markers of a line"
                out.append((what, ln.get_transform().transform(pts)))
    for coll in ax.collections:
        if coll.get_visible() and isinstance(coll, PathCollection):
            offsets = np.asarray(coll.get_offsets(), dtype=float).reshape(-1, 2)
            offsets = offsets[np.isfinite(offsets).all(axis=1)]
            if len(offsets):
                label = coll.get_label()
                what = f"the points of {label!r}" if not label.startswith("_") \
                    else "the points of a scatter"
                out.append((what, coll.get_offset_transform().transform(offsets)))
    return out


def _points_in_text(pts, where, corners) -> bool:
    """Whether a point lies in ``where`` (the text's box within its axes) and, for a
    rotated text (``corners`` not None), in its own rectangle."""
    from matplotlib.path import Path

    inside = ((pts[:, 0] >= where.x0) & (pts[:, 0] <= where.x1)
              & (pts[:, 1] >= where.y0) & (pts[:, 1] <= where.y1))
    if corners is None or not inside.any():
        return bool(inside.any())
    return bool(Path(corners).contains_points(pts[inside]).any())


def texts_over_points(fig, tolerance: float = OVERLAP_TOLERANCE_PT,
                      drawing: Drawing | None = None) -> list[Problem]:
    """Texts written in an axes (``ax.text``, annotations) drawn over the axes' own
    markers: a point of a scatter, or a marker of a line, lies in the text's box (shrunk by
    ``tolerance`` points each side) inside the axes box (points outside the axes' view are
    not drawn). Lines without markers and bars are not looked at. ``drawing``: the figure
    already drawn (:func:`draw`)."""
    from matplotlib.transforms import Bbox

    drawing = drawing or draw(fig)
    tolerance *= fig.dpi / 72.0
    problems = []
    for ax in _all_axes(fig):
        if not ax.get_visible():
            continue
        texts = _written_in(ax, drawing)
        points = _points_of(ax) if texts else []
        if not points:
            continue
        box = drawing.box(ax)
        for t in texts:
            bb = drawing.box(t)
            shrunk = Bbox.from_extents(bb.x0 + tolerance, bb.y0 + tolerance,
                                       bb.x1 - tolerance, bb.y1 - tolerance)
            if shrunk.width <= 0 or shrunk.height <= 0:
                continue
            where = Bbox.intersection(shrunk, box)
            if where is None or where.width <= 0 or where.height <= 0:
                continue
            corners = drawing.corners(t)
            hit = next((what for what, pts in points
                        if _points_in_text(pts, where, corners)), None)
            if hit:
                problems.append(Problem("data", f"{_name(t)} is written over {hit}"))
    return problems


#: The rules :func:`check_figure` runs, in the order of its report.
RULES = (overlapping_texts, texts_over_panels, texts_outside_figure, texts_across_axes,
         texts_over_points, empty_axes, images_without_colorbar, legends_over_data)


def check_figure(fig) -> list[Problem]:
    """Every problem the :data:`RULES` find (empty: the figure passes), the figure drawn
    once for all of them (:func:`draw`)."""
    drawing = draw(fig)
    return [p for rule in RULES for p in rule(fig, drawing=drawing)]


def report(problems) -> str:
    """The problems one per line (for an assertion message)."""
    return "\n".join(str(p) for p in problems) or "no problem"


#: Resolution at which :func:`saved_size` saves a figure to measure it, dots per inch (the
#: saved size is a whole number of pixels: it is known to within one pixel).
SIZE_DPI = 100


def saved_size(fig, width: str) -> tuple[float, float]:
    """(width, height) in inches of ``fig`` as :func:`hippo_rep.figures.build_figures`
    writes it: saved in :func:`~hippo_rep.plotting.style.paper_style` at the column
    ``width`` ("single" or "double"), whose tight save box is everything the figure draws
    (also past its edges) plus :data:`~hippo_rep.plotting.style.SAVE_PAD_INCHES` around it.
    The figure is laid out once more, as saving it does; nothing is written."""
    import io
    import struct

    from hippo_rep.plotting.style import paper_style

    _renderer(fig)  # a canvas that renders, for a bare Figure
    buf = io.BytesIO()
    with paper_style(width):
        fig.savefig(buf, format="png", dpi=SIZE_DPI)
    w, h = struct.unpack(">II", buf.getvalue()[16:24])  # the PNG header's IHDR
    return w / SIZE_DPI, h / SIZE_DPI


def oversized(fig, width: str) -> list[Problem]:
    """Problems (rule "size") of a figure drawn for the column ``width`` ("single" or
    "double") that is wider than that column
    (:func:`~hippo_rep.plotting.style.column_width`) or taller than a journal page
    (:data:`~hippo_rep.plotting.style.MAX_HEIGHT`): by the size it is set to and by the size
    it is saved at (:func:`saved_size`, to within a pixel at :data:`SIZE_DPI`)."""
    from hippo_rep.plotting.style import MAX_HEIGHT, column_width

    limit = column_width(width)
    set_w, set_h = (float(v) for v in fig.get_size_inches())
    saved_w, saved_h = saved_size(fig, width)
    pixel = 1.0 / SIZE_DPI
    problems = []
    if set_w > limit + 1e-9 or saved_w > limit + pixel:
        problems.append(Problem("size", f"{set_w:.2f} in wide as set, {saved_w:.2f} in as "
                                        f"saved: wider than the {width} column ({limit:g} in)"))
    if set_h > MAX_HEIGHT + 1e-9 or saved_h > MAX_HEIGHT + pixel:
        problems.append(Problem("size", f"{set_h:.2f} in tall as set, {saved_h:.2f} in as "
                                        f"saved: taller than a page ({MAX_HEIGHT:g} in, "
                                        "MAX_HEIGHT)"))
    return problems
