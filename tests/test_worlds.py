import numpy as np
import pytest

from hippo_rep import worlds as W


@pytest.mark.parametrize("kind,width,height,n_edges", [
    ("square", 2, 2, 4),
    ("square", 8, 8, 2 * 8 * 7),
    ("square", 12, 9, 11 * 9 + 12 * 8),
    # offset hex rows: horizontal w-1 per row, and 2(w-1)+1 = 2w-1 links between two rows
    ("hex", 2, 2, 1 * 2 + 3),
    ("hex", 6, 5, 5 * 5 + (2 * 6 - 1) * 4),
])
def test_node_and_edge_counts(kind, width, height, n_edges):
    w = W.make_world(kind, width, height)
    assert w.n_nodes == width * height
    assert w.n_edges == n_edges
    assert w.n_actions == W.n_actions_for(kind)


@pytest.mark.parametrize("spec", ["square:5", "square:6x3", "hex:5", "hex:4x6",
                                  "square:5:holes=2,2;1,3"])
def test_inverse_actions_return_and_moves_have_unit_length(spec):
    w = W.parse_world(spec)
    inv = w.inverse_action
    for node in range(w.n_nodes):
        for a in range(w.n_actions):
            nxt = w.transitions[node, a]
            if nxt < 0:
                continue
            assert w.transitions[nxt, inv[a]] == node
            dist = np.linalg.norm(w.coords[nxt] - w.coords[node])
            assert dist == pytest.approx(0.0 if a == 0 else 1.0)


def test_hex_neighbours_at_distance_one_and_six_inside():
    w = W.make_world("hex", 7, 7)
    centre = int(np.flatnonzero((w.cells[:, 0] == 3) & (w.cells[:, 1] == 3))[0])
    nbrs = w.transitions[centre, 1:]
    assert (nbrs >= 0).all() and len(set(nbrs)) == 6
    d = np.linalg.norm(w.coords[nbrs] - w.coords[centre], axis=1)
    np.testing.assert_allclose(d, 1.0)
    # every pair of nodes at distance 1 is linked
    dist = np.linalg.norm(w.coords[:, None] - w.coords[None], axis=-1)
    linked = np.zeros_like(dist, dtype=bool)
    src, act = np.nonzero(w.transitions[:, 1:] >= 0)
    linked[src, w.transitions[src, act + 1]] = True
    np.testing.assert_array_equal(linked, np.isclose(dist, 1.0))


def test_square_action_directions():
    w = W.make_world("square", 3, 3)
    centre = 4  # (1, 1)
    for a, angle in enumerate(W.DIRECTIONS["square"], start=1):
        step = w.coords[w.transitions[centre, a]] - w.coords[centre]
        np.testing.assert_allclose(step, [np.cos(np.deg2rad(angle)), np.sin(np.deg2rad(angle))],
                                   atol=1e-12)


@pytest.mark.parametrize("spec", ["square:1", "square:0x4", "hex:1", "triangle:4",
                                  "square:2:holes=0,0;1,0;0,1;1,1", "square:3:holes=1,0;1,1;1,2",
                                  "square:3:holes=5,5", "square", "square:abc"])
def test_impossible_worlds_raise_clear_errors(spec):
    with pytest.raises(W.WorldError, match=spec.split(":")[0]):
        W.parse_world(spec)


def test_disconnected_error_message_names_problem():
    with pytest.raises(W.WorldError, match="disconnected"):
        W.make_world("square", 3, 3, holes=[(1, 0), (1, 1), (1, 2)])


def test_holes_removed_and_graph_connected():
    w = W.make_world("square", 4, 4, holes=[(1, 1), (2, 2)])
    assert w.n_nodes == 14
    assert not ((w.cells[:, 0] == 1) & (w.cells[:, 1] == 1)).any()
    assert W.parse_world(w.spec).n_nodes == 14


@pytest.mark.parametrize("spec", ["square:6", "hex:5", "square:7x4:holes=3,2"])
@pytest.mark.parametrize("keep", [0.0, 0.25, 0.9])
def test_walks_respect_edges(spec, keep):
    w = W.parse_world(spec)
    rng = np.random.default_rng(1)
    nodes, actions = W.random_walk(w, 500, rng, keep_heading=keep, stay_prob=0.1)
    assert actions[0] == 0
    for t in range(1, len(nodes)):
        assert w.transitions[nodes[t - 1], actions[t]] == nodes[t]


def test_keep_heading_increases_repeats():
    w = W.make_world("square", 20, 20)
    def repeats(keep):
        _, a = W.random_walk(w, 4000, np.random.default_rng(0), keep_heading=keep)
        return np.mean(a[1:] == a[:-1])
    assert repeats(0.8) > repeats(0.0) + 0.4


def test_walk_is_reproducible_from_rng():
    w = W.make_world("hex", 5)
    a = W.random_walk(w, 100, np.random.default_rng(7))
    b = W.random_walk(w, 100, np.random.default_rng(7))
    np.testing.assert_array_equal(a[0], b[0])


def test_step_types_and_ideal_agents_on_hand_made_walk():
    # 2x2 square: nodes 0=(0,0) 1=(1,0) 2=(0,1) 3=(1,1); actions 1:+x 2:+y 3:-x 4:-y
    w = W.make_world("square", 2, 2)
    nodes = np.array([0, 1, 0, 1, 3, 2, 0, 2])
    actions = np.array([0, 1, 3, 1, 2, 3, 4, 2])
    for t in range(1, len(nodes)):
        assert w.transitions[nodes[t - 1], actions[t]] == nodes[t]
    st = W.step_types(nodes, actions)
    F, K, N = W.FIRST_VISIT, W.REVISIT_KNOWN_EDGE, W.REVISIT_NEW_EDGE
    np.testing.assert_array_equal(st["code"], [F, F, N, K, F, F, N, N])
    # t=2 goes back the way it came: new directed edge, but the edge was crossed → not unseen
    # t=6 closes the loop 0→1→3→2→0 through the never-crossed edge 2–0; t=7 walks it back
    np.testing.assert_array_equal(st["revisit_unseen_edge"],
                                  [0, 0, 0, 0, 0, 0, 1, 0])
    ideal = W.ideal_agents(nodes, actions, n_obs=4)
    np.testing.assert_allclose(ideal["node_agent"], [.25, .25, 1, 1, .25, .25, 1, 1])
    np.testing.assert_allclose(ideal["edge_agent"], [.25, .25, .25, 1, .25, .25, .25, .25])


def test_proportion_visited():
    np.testing.assert_allclose(W.proportion_visited(np.array([0, 1, 0, 2]), 4),
                               [0, .25, .5, .5])


def test_observations_fresh_per_environment_and_in_range():
    w = W.make_world("square", 8)
    rng = np.random.default_rng(0)
    ep = W.sample_episodes([w, W.make_world("square", 5)], 6, 50, 45, rng)
    assert ep.observations.shape == (6, 50)
    assert (ep.observations >= 0).all() and (ep.observations < 45).all()
    for b in range(6):
        np.testing.assert_array_equal(ep.observations[b], ep.observation_maps[b][ep.nodes[b]])
    assert not np.array_equal(ep.observation_maps[0][:25], ep.observation_maps[1][:25])
    assert {wd.n_nodes for wd in ep.worlds} <= {64, 25}


def _scalar_walk(world, n_steps, rng, keep_heading, stay_prob):
    """random_walk's rule written out step by step, the batch walker's oracle."""
    node = int(rng.integers(world.n_nodes))
    u = rng.random((n_steps, 3))
    nodes, actions, prev = [node], [0], 0
    for t in range(1, n_steps):
        avail = np.flatnonzero(world.transitions[node, 1:] >= 0) + 1
        if u[t, 0] < stay_prob or len(avail) == 0:
            a = 0
        elif prev > 0 and u[t, 1] < keep_heading and world.transitions[node, prev] >= 0:
            a = prev
        else:
            a = int(avail[int(u[t, 2] * len(avail))])
        node = int(world.transitions[node, a])
        nodes.append(node)
        actions.append(a)
        prev = a if a > 0 else prev
    return np.array(nodes), np.array(actions)


@pytest.mark.parametrize("specs,keep,stay", [(["square:8"], 0.9, 0.0),
                                             (["square:6:holes=2,2;3,3", "square:9"], 0.5, 0.2),
                                             (["hex:7", "hex:4"], 0.0, 0.1),
                                             (["square:5", "hex:5"], 0.7, 0.1)])
def test_batched_walks_equal_the_step_by_step_rule(specs, keep, stay):
    """sample_episodes walks all environments at once; each walk must be the one the scalar
    rule makes from the same draws (world, observations, start, then the walk's numbers)."""
    worlds = [W.parse_world(s) for s in specs]
    ep = W.sample_episodes(worlds, 12, 150, 45, np.random.default_rng(4), keep, stay)
    rng = np.random.default_rng(4)
    for b in range(12):
        w = worlds[int(rng.integers(len(worlds)))] if len(worlds) > 1 else worlds[0]
        obs_map = W.random_observations(w, 45, rng)
        nodes, actions = _scalar_walk(w, 150, rng, keep, stay)
        assert ep.worlds[b] is w
        np.testing.assert_array_equal(ep.nodes[b], nodes)
        np.testing.assert_array_equal(ep.actions[b], actions)
        np.testing.assert_array_equal(ep.observations[b], obs_map[nodes])

