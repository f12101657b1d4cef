"""Graph worlds, observations, random and delay walks, and the ideal agents.

A world is a graph whose nodes have 2D coordinates (lengths in units of the lattice spacing) and
whose edges are labelled by actions. Action 0 is always "stay"; the move actions point in fixed
directions (square: 0°, 90°, 180°, 270°; hexagonal: every 60° from 0°), angles in degrees from +x
towards +y. Every environment draws a fresh random observation per node, so that only the
structure is shared between environments. Numpy only; all randomness comes from an explicit
``numpy.random.Generator``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from hippo_rep.fileio import quote

#: Probability of repeating the previous move when it is available (TEM uses ~0.25).
DEFAULT_KEEP_HEADING = 0.25
#: Probability of choosing "stay"; 0 because a stay is trivially predictable and inflates revisits.
DEFAULT_STAY_PROB = 0.0
#: Largest world, in lattice nodes (width × height, e.g. 500x500): bigger ones would not fit
#: the dense per-node arrays of walks, rate maps and ideal agents in memory.
MAX_NODES = 250_000
#: Tolerance (lattice units) when matching a node's neighbour positions.
_COORD_TOL = 1e-6

#: Step types, in the order of their integer codes.
STEP_TYPES = ("first_visit", "revisit_known_edge", "revisit_new_edge")
FIRST_VISIT, REVISIT_KNOWN_EDGE, REVISIT_NEW_EDGE = 0, 1, 2
#: Step types an evaluation reports (of :func:`step_types`, and ``all``), in JSON order.
REPORTED = ("first_visit", "revisit_known_edge", "revisit_new_edge", "revisit_unseen_edge",
            "revisit", "all")
#: Agents an evaluation scores: the model and :func:`ideal_agents`.
AGENTS = ("model", "node_agent", "edge_agent")

KINDS = ("square", "hex")
#: Move directions in degrees for each kind of lattice (action k+1 moves along DIRECTIONS[k]).
DIRECTIONS = {"square": (0, 90, 180, 270), "hex": (0, 60, 120, 180, 240, 300)}


class WorldError(ValueError):
    """A world that cannot exist (bad size, no nodes, disconnected)."""


@dataclass(frozen=True, eq=False)
class World:
    """A 2D lattice graph with action-labelled edges.

    Attributes
    ----------
    kind : {"square", "hex"}
    width, height : int
        Lattice size in nodes (columns, rows) before holes are removed.
    coords : ndarray, shape (n_nodes, 2)
        Node positions (x, y) in lattice units; hexagonal rows are offset by 1/2 and spaced √3/2.
    cells : ndarray, shape (n_nodes, 2)
        Integer (column, row) of every node.
    transitions : ndarray, shape (n_nodes, n_actions)
        Node reached by each action, or -1 where the action leads off the graph. Column 0 is stay.
    """

    kind: str
    width: int
    height: int
    coords: np.ndarray
    cells: np.ndarray
    transitions: np.ndarray
    holes: tuple = field(default=())

    @property
    def n_nodes(self) -> int:
        return len(self.coords)

    @property
    def n_actions(self) -> int:
        return self.transitions.shape[1]

    @property
    def n_edges(self) -> int:
        """Number of undirected edges between distinct nodes."""
        return int((self.transitions[:, 1:] >= 0).sum()) // 2

    @property
    def inverse_action(self) -> np.ndarray:
        """``inverse_action[a]`` undoes action ``a`` (stay is its own inverse)."""
        n_moves = self.n_actions - 1
        inv = np.zeros(self.n_actions, dtype=np.int64)
        inv[1:] = (np.arange(n_moves) + n_moves // 2) % n_moves + 1
        return inv

    @property
    def spec(self) -> str:
        """The world as a string that :func:`parse_world` reads back."""
        s = f"{self.kind}:{self.width}x{self.height}"
        if self.holes:
            s += ":holes=" + ";".join(f"{c},{r}" for c, r in self.holes)
        return s

    def __repr__(self) -> str:
        return f"World({self.spec!r}, n_nodes={self.n_nodes}, n_edges={self.n_edges})"


def make_world(kind: str = "square", width: int = 8, height: int | None = None,
               holes=()) -> World:
    """Build a square (4 moves + stay) or hexagonal (6 moves + stay) lattice.

    Parameters
    ----------
    kind : {"square", "hex"}
    width, height : int
        Columns and rows, each ≥ 2; ``height`` defaults to ``width``.
    holes : sequence of (column, row)
        Nodes to remove; the remaining graph must stay connected.

    Raises
    ------
    WorldError
        Naming the argument, for a size below 2, a hole outside the lattice, no nodes left or a
        disconnected graph.
    """
    if kind not in KINDS:
        raise WorldError(f"world kind must be one of {KINDS}; got {kind!r}")
    height = width if height is None else height
    for name, v in (("width", width), ("height", height)):
        if not isinstance(v, (int, np.integer)) or v < 2:
            raise WorldError(f"world {name} must be an integer ≥ 2; got {v!r}")
    if width * height > MAX_NODES:
        raise WorldError(f"world {kind}:{width}x{height} has {width * height} nodes; at most "
                         f"MAX_NODES = {MAX_NODES} are supported")
    holes = tuple(sorted({(int(c), int(r)) for c, r in holes}))
    for c, r in holes:
        if not (0 <= c < width and 0 <= r < height):
            raise WorldError(f"hole {(c, r)} lies outside the {width}x{height} lattice")
    cols, rows = np.meshgrid(np.arange(width), np.arange(height))
    cells = np.stack([cols.ravel(), rows.ravel()], axis=1)
    keep = np.ones(len(cells), dtype=bool)
    for c, r in holes:
        keep[r * width + c] = False
    cells = cells[keep]
    if len(cells) == 0:
        raise WorldError(f"world {kind}:{width}x{height} has no nodes left after removing holes")
    if kind == "square":
        coords = cells.astype(float)
    else:  # offset rows: odd rows shifted by half a spacing, rows √3/2 apart
        coords = np.stack([cells[:, 0] + 0.5 * (cells[:, 1] % 2),
                           cells[:, 1] * np.sqrt(3) / 2], axis=1)
    angles = np.deg2rad(DIRECTIONS[kind])
    steps = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    # Neighbour lookup by position: quantise coordinates to find the node at pos + step.
    scale = 1e4
    index = {tuple(np.round(p * scale).astype(np.int64)): i for i, p in enumerate(coords)}
    transitions = np.full((len(coords), len(angles) + 1), -1, dtype=np.int64)
    transitions[:, 0] = np.arange(len(coords))
    for i, p in enumerate(coords):
        for a, s in enumerate(steps):
            j = index.get(tuple(np.round((p + s) * scale).astype(np.int64)))
            if j is not None:
                transitions[i, a + 1] = j
    world = World(kind, int(width), int(height), coords, cells, transitions, holes)
    n_comp = _n_components(world)
    if n_comp > 1:
        raise WorldError(f"world {world.spec} is disconnected ({n_comp} components); "
                         "remove fewer or other holes")
    return world


def _n_components(world: World) -> int:
    src, act = np.nonzero(world.transitions[:, 1:] >= 0)
    dst = world.transitions[src, act + 1]
    adj = csr_matrix((np.ones(len(src)), (src, dst)), shape=(world.n_nodes,) * 2)
    return connected_components(adj, directed=False)[0]


def parse_world(spec: str) -> World:
    """Read a world from a string: ``square:8``, ``square:12x9``, ``hex:6``,
    ``square:8:holes=3,4;5,5`` (holes as column,row pairs).

    Raises
    ------
    WorldError
        Naming the spec when it cannot be read or describes an impossible world.
    """
    if not isinstance(spec, str):
        raise WorldError(f"world spec must be a string; got {quote(spec)}")
    shown = quote(spec)
    parts = spec.strip().split(":")
    try:
        kind = parts[0]
        size = parts[1].lower().split("x")
        width = int(size[0])
        height = int(size[1]) if len(size) > 1 else width
        holes = []
        for extra in parts[2:]:
            key, _, val = extra.partition("=")
            if key != "holes":
                raise WorldError(f"unknown world option {key!r}")
            holes = [tuple(int(v) for v in h.split(",")) for h in val.split(";") if h]
            if any(len(h) != 2 for h in holes):
                raise WorldError("holes must be column,row pairs separated by ';'")
    except (IndexError, ValueError) as err:
        if isinstance(err, WorldError):
            raise WorldError(f"world spec {shown}: {err}") from None
        raise WorldError(f"world spec {shown} is not KIND:WIDTH[xHEIGHT][:holes=c,r;c,r] "
                         "(e.g. square:8, hex:6x5)") from None
    try:
        return make_world(kind, width, height, holes)
    except WorldError as err:
        raise WorldError(f"world spec {shown}: {err}") from None


def n_actions_for(kind: str) -> int:
    """Size of the action set (stay + moves) of a lattice kind."""
    return len(DIRECTIONS[kind]) + 1


def random_observations(world: World, n_obs: int, rng: np.random.Generator) -> np.ndarray:
    """One observation category per node, drawn uniformly with replacement (no spatial
    correlation, on purpose). Returns int64 array (n_nodes,)."""
    return rng.integers(0, n_obs, size=world.n_nodes)


def random_walk(world: World, n_steps: int, rng: np.random.Generator,
                keep_heading: float = DEFAULT_KEEP_HEADING,
                stay_prob: float = DEFAULT_STAY_PROB,
                start: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A random walk on the graph.

    At each step, with probability ``stay_prob`` stay; otherwise, with probability
    ``keep_heading`` repeat the previous move if it is available, else pick uniformly among the
    available moves.

    Returns
    -------
    nodes : ndarray (n_steps,)
        Node at every step; ``nodes[0]`` is the start.
    actions : ndarray (n_steps,)
        ``actions[t]`` is the action taken from ``nodes[t-1]`` to ``nodes[t]``; ``actions[0]``
        is 0 (no move before the first step).
    """
    if n_steps < 1:
        raise ValueError(f"n_steps must be ≥ 1; got {n_steps}")
    node = int(rng.integers(world.n_nodes)) if start is None else int(start)
    u = rng.random((n_steps, 3))
    nodes, actions = _walks(world.transitions, np.array([node]), u[None], keep_heading,
                            stay_prob)
    return nodes[0], actions[0]


def _walks(transitions: np.ndarray, starts: np.ndarray, u: np.ndarray, keep_heading: float,
           stay_prob: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`random_walk`'s rule for a batch of walks at once, given their random numbers.

    ``transitions`` (n_nodes, n_actions) may stack several worlds (node indices offset per
    world, -1 off the graph); ``starts`` (B,) are start nodes; ``u`` (B, n_steps, 3) uniform
    draws: column 0 decides a stay, 1 keeping the heading, 2 which available move. Every
    decision is the scalar rule's on the same numbers, so a batch equals its walks one by one.
    """
    B, n_steps = u.shape[:2]
    nodes = np.empty((B, n_steps), dtype=np.int64)
    actions = np.zeros((B, n_steps), dtype=np.int64)
    node = np.asarray(starts, dtype=np.int64)
    nodes[:, 0] = node
    prev = np.zeros(B, dtype=np.int64)
    moves = transitions[:, 1:] >= 0  # (n_nodes, n_actions - 1) available moves
    for t in range(1, n_steps):
        avail = moves[node]
        n_avail = avail.sum(1)
        stay = (u[:, t, 0] < stay_prob) | (n_avail == 0)
        keep = (prev > 0) & (u[:, t, 1] < keep_heading) & (transitions[node, prev] >= 0)
        # the k-th available move (k = floor(u·n), as int() truncates the non-negative product)
        k = (u[:, t, 2] * n_avail).astype(np.int64)
        pick = np.argmax(np.cumsum(avail, 1) > k[:, None], axis=1) + 1
        a = np.where(stay, 0, np.where(keep, prev, pick))
        node = transitions[node, a]
        nodes[:, t], actions[:, t] = node, a
        prev = np.where(a > 0, a, prev)
    return nodes, actions


def step_types(nodes: np.ndarray, actions: np.ndarray) -> dict[str, np.ndarray]:
    """Classify every step of a walk.

    Step t predicts the observation at ``nodes[t]``, arriving via ``actions[t]`` from
    ``nodes[t-1]``.

    Returns
    -------
    dict of bool arrays (n_steps,)
        ``first_visit``; ``revisit_known_edge`` (this directed edge was taken before);
        ``revisit_new_edge`` (the node was visited before but this directed edge was not taken:
        loop closure, the paper's zero-shot case); ``revisit_unseen_edge`` (the strict subset
        arriving through an edge never crossed in either direction); ``revisit`` (all revisits);
        ``stay`` (the step was a stay; counted as a revisit via a known/new edge as it comes).
        Also ``code`` (int, see :data:`STEP_TYPES`).
    """
    n = len(nodes)
    code = np.empty(n, dtype=np.int64)
    unseen = np.zeros(n, dtype=bool)
    visited: set[int] = set()
    edges: set[tuple[int, int]] = set()  # directed (from, to) pairs taken so far
    for t in range(n):
        v = int(nodes[t])
        if v not in visited:
            code[t] = FIRST_VISIT
        else:
            u = int(nodes[t - 1])
            # A stay is the self-edge (v, v); a move edge is identified by its end nodes.
            if (u, v) in edges:
                code[t] = REVISIT_KNOWN_EDGE
            else:
                code[t] = REVISIT_NEW_EDGE
                # A first stay is a new self-edge but no loop closure: keep it out of the
                # strict zero-shot set.
                unseen[t] = u != v and (v, u) not in edges
        if t > 0:
            edges.add((int(nodes[t - 1]), v))
        visited.add(v)
    return {
        "code": code,
        "first_visit": code == FIRST_VISIT,
        "revisit_known_edge": code == REVISIT_KNOWN_EDGE,
        "revisit_new_edge": code == REVISIT_NEW_EDGE,
        "revisit_unseen_edge": unseen,
        "revisit": code != FIRST_VISIT,
        "stay": np.asarray(actions) == 0,
    }


def ideal_agents(nodes: np.ndarray, actions: np.ndarray, n_obs: int) -> dict[str, np.ndarray]:
    """Expected accuracy of the two ideal agents at every step of a walk.

    The node agent knows where it is: it is correct on every revisit. The edge agent only
    remembers transitions: it is correct when it has taken this exact directed edge before.
    Where neither knows, they guess uniformly, i.e. are correct with probability 1/n_obs.

    Returns
    -------
    dict with ``node_agent`` and ``edge_agent``, float arrays (n_steps,) in [0, 1].
    """
    types = step_types(nodes, actions)
    chance = 1.0 / n_obs
    node = np.where(types["revisit"], 1.0, chance)
    edge = np.where(types["revisit_known_edge"], 1.0, chance)
    return {"node_agent": node, "edge_agent": edge}


def proportion_visited(nodes: np.ndarray, n_nodes: int) -> np.ndarray:
    """Fraction of the world's nodes visited before each step (so 0 at step 0)."""
    seen = np.zeros(n_nodes, dtype=bool)
    out = np.empty(len(nodes))
    count = 0
    for t, v in enumerate(nodes):
        out[t] = count / n_nodes
        if not seen[v]:
            seen[v] = True
            count += 1
    return out


@dataclass
class Episodes:
    """A batch of walks, one environment each (possibly of different worlds).

    All arrays have shape (batch, n_steps) except ``worlds`` (list) and ``observation_maps``
    (list of (n_nodes,) arrays).
    """

    worlds: list
    nodes: np.ndarray
    actions: np.ndarray
    observations: np.ndarray
    observation_maps: list

    @property
    def batch_size(self) -> int:
        return self.nodes.shape[0]

    @property
    def n_steps(self) -> int:
        return self.nodes.shape[1]


def sample_episodes(worlds, batch_size: int, n_steps: int, n_obs: int,
                    rng: np.random.Generator, keep_heading: float = DEFAULT_KEEP_HEADING,
                    stay_prob: float = DEFAULT_STAY_PROB,
                    observation_maps=None) -> Episodes:
    """Sample ``batch_size`` environments: a world (uniformly from ``worlds``), fresh random
    observations (unless ``observation_maps`` gives them), and a random walk of ``n_steps``.
    """
    worlds = [worlds] if isinstance(worlds, World) else list(worlds)
    if not worlds:
        raise ValueError("sample_episodes needs at least one world")
    picked, maps, starts = [], [], []
    u = np.empty((batch_size, n_steps, 3))
    # The draws in random_walk's order, environment by environment (the same walks as one
    # random_walk call each); the walks themselves then run as one batch.
    for b in range(batch_size):
        w = worlds[int(rng.integers(len(worlds)))] if len(worlds) > 1 else worlds[0]
        m = (observation_maps[b] if observation_maps is not None
             else random_observations(w, n_obs, rng))
        starts.append(int(rng.integers(w.n_nodes)))
        u[b] = rng.random((n_steps, 3))
        picked.append(w)
        maps.append(m)
    # One transition table for every picked world, node indices offset per distinct world.
    tables, offset = {}, 0
    for w in picked:
        if id(w) not in tables:
            tables[id(w)] = (offset, w)
            offset += w.n_nodes
    # Action sets of other sizes (square beside hex) padded with unavailable (-1) columns.
    width = max(w.n_actions for w in picked)
    table = np.full((offset, width), -1, dtype=np.int64)
    for off, w in tables.values():
        table[off:off + w.n_nodes, :w.n_actions] = np.where(w.transitions >= 0,
                                                            w.transitions + off, -1)
    offsets = np.array([tables[id(w)][0] for w in picked])
    nodes, actions = _walks(table, np.array(starts) + offsets, u, keep_heading, stay_prob)
    nodes -= offsets[:, None]
    obs = np.stack([m[n] for m, n in zip(maps, nodes, strict=True)])
    return Episodes(picked, nodes, actions, obs, maps)


# ------------------------------------------------------------------------- delay walks
# The walks of the long-delay loop-closure task (:mod:`hippo_rep.tasks.delay`), also used as
# training walks (``world.walk = "delay"``): tour a small *home* region until every home node
# is seen, make an excursion of D steps far from home, walk the shortest path back and tour
# home again; the first return visit to each home node is scored.

#: Side of the square home region, in nodes (a corner block of HOME_SIZE x HOME_SIZE).
HOME_SIZE = 3
#: Minimum length of the first home tour, in steps (it also runs until all home is seen).
HOME_STEPS = 32
#: Steps of the second home tour after the return (each home node is scored once).
RETURN_STEPS = 24
#: Excursion nodes are at least this many edges from the home region.
AWAY_DISTANCE = 2
#: Default longest excursion of :func:`sample_delay_episodes`, in steps.
DELAY_WALK_MAX_DELAY = 256
#: Walk phases, stored per step.
PHASES = ("tour", "excursion", "return_path", "home_again")


def _bfs(world: World, sources: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Distance (edges) from the nearest source and the node it came from, per node."""
    dist = np.full(world.n_nodes, -1, dtype=np.int64)
    parent = np.full(world.n_nodes, -1, dtype=np.int64)
    queue = deque(int(s) for s in sources)
    dist[list(sources)] = 0
    while queue:
        u = queue.popleft()
        for v in world.transitions[u, 1:]:
            if v >= 0 and dist[v] < 0:
                dist[v], parent[v] = dist[u] + 1, u
                queue.append(int(v))
    return dist, parent


def _action(world: World, u: int, v: int) -> int:
    return int(np.flatnonzero(world.transitions[u] == v)[0])


def _path_to(world: World, start: int, targets: np.ndarray) -> list[int]:
    """Shortest path (nodes after ``start``) from ``start`` to the nearest of ``targets``."""
    if targets[start]:
        return []
    dist, parent = _bfs(world, [start])
    reach = np.flatnonzero(targets & (dist >= 0))
    end = int(reach[np.argmin(dist[reach])])
    path = [end]
    while parent[path[-1]] != start:
        path.append(int(parent[path[-1]]))
    return path[::-1]


def home_region(world: World, size: int = HOME_SIZE) -> tuple[np.ndarray, np.ndarray]:
    """Home (the ``size`` x ``size`` corner at the smallest x, y) and away masks over nodes."""
    x, y = world.coords[:, 0], world.coords[:, 1]
    xs, ys = np.unique(np.round(x, 6)), np.unique(np.round(y, 6))
    if len(xs) < size + 2 * AWAY_DISTANCE + 1 or len(ys) < size + 2 * AWAY_DISTANCE + 1:
        raise WorldError(f"world {world.spec!r} is too small for a {size}x{size} home and "
                             f"an excursion {AWAY_DISTANCE} edges away")
    home = (np.round(x, 6) <= xs[size - 1]) & (np.round(y, 6) <= ys[size - 1])
    dist, _ = _bfs(world, np.flatnonzero(home))
    return home, dist >= AWAY_DISTANCE


def _constrained_walk(world: World, start: int, allowed: np.ndarray, n: int,
                      rng: np.random.Generator, until_all: bool = False) -> list[int]:
    """Random moves that stay inside ``allowed`` (nodes after ``start``); with ``until_all``,
    continue past ``n`` until every allowed node has been visited."""
    path, node, seen = [], start, {start}
    while len(path) < n or (until_all and len(seen) < int(allowed.sum())):
        nxt = [int(v) for v in world.transitions[node, 1:] if v >= 0 and allowed[v]]
        node = nxt[int(rng.integers(len(nxt)))]
        path.append(node)
        seen.add(node)
    return path


def delay_walk(world: World, delay: int, rng: np.random.Generator,
               home_size: int = HOME_SIZE) -> dict[str, np.ndarray]:
    """One walk of the task.

    Returns
    -------
    dict with ``nodes`` and ``actions`` (T,) as in :func:`~hippo_rep.worlds.random_walk`,
    ``phase`` (T,) indices into :data:`PHASES`, and ``scored`` (T,) bool: the first visit to
    each home node after the return.
    """
    if delay < 0:
        raise WorldError(f"delay must be ≥ 0; got {delay}")
    home, away = home_region(world, home_size)
    start = int(rng.choice(np.flatnonzero(home)))
    tour = [start] + _constrained_walk(world, start, home, HOME_STEPS - 1, rng, until_all=True)
    out_path = _path_to(world, tour[-1], away)
    excursion = _constrained_walk(world, out_path[-1], away, delay, rng) if delay else []
    back = _path_to(world, (out_path + excursion)[-1], home)
    again = _constrained_walk(world, back[-1], home, RETURN_STEPS - 1, rng)
    parts = [tour, out_path + excursion, back[:-1], [back[-1]] + again]
    nodes = np.array([n for p in parts for n in p], dtype=np.int64)
    phase = np.concatenate([np.full(len(p), i) for i, p in enumerate(parts)])
    actions = np.zeros(len(nodes), dtype=np.int64)
    for t in range(1, len(nodes)):
        actions[t] = _action(world, int(nodes[t - 1]), int(nodes[t]))
    scored = np.zeros(len(nodes), dtype=bool)
    seen: set[int] = set()
    for t in np.flatnonzero(phase == 3):
        if int(nodes[t]) not in seen:
            scored[t] = True
            seen.add(int(nodes[t]))
    return {"nodes": nodes, "actions": actions, "phase": phase, "scored": scored}


def sample_delay_episodes(worlds: Sequence[World], batch_size: int, n_steps: int, n_obs: int,
                          rng: np.random.Generator, max_delay: int = DELAY_WALK_MAX_DELAY
                          ) -> Episodes:
    """Training batches of delay walks (``world.walk = "delay"``).

    Per environment: a world (uniform from ``worlds``), fresh observations, a
    :func:`delay_walk` with ``D ~ U{0..max_delay}``, then a random walk from its last node up
    to ``n_steps`` (or the walk cut at ``n_steps``).
    """
    nodes = np.empty((batch_size, n_steps), dtype=np.int64)
    actions = np.empty_like(nodes)
    obs = np.empty_like(nodes)
    picked, maps = [], []
    for b in range(batch_size):
        w = worlds[int(rng.integers(len(worlds)))]
        m = random_observations(w, n_obs, rng)
        x = delay_walk(w, int(rng.integers(max_delay + 1)), rng)
        n, a = x["nodes"][:n_steps], x["actions"][:n_steps]
        if len(n) < n_steps:
            more_n, more_a = random_walk(w, n_steps - len(n) + 1, rng, start=int(n[-1]))
            n, a = np.concatenate([n, more_n[1:]]), np.concatenate([a, more_a[1:]])
        nodes[b], actions[b], obs[b] = n, a, m[n]
        picked.append(w)
        maps.append(m)
    return Episodes(picked, nodes, actions, obs, maps)
