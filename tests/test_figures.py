import pytest

from hippo_rep.figures import FIGURES, FigureError, FigureInputs, build_figures, read_eval


def fake_eval(kind="temt", acc=0.9):
    types = ["first_visit", "revisit_known_edge", "revisit_new_edge", "revisit_unseen_edge",
             "revisit", "all"]
    x = [0.05 + 0.1 * i for i in range(10)]
    return {"model": dict.fromkeys(types, acc), "node_agent": dict.fromkeys(types, 1.0),
            "edge_agent": dict.fromkeys(types, 0.5),
            "curve": {"proportion_visited": x, "model": [acc * v for v in x],
                      "node_agent": x, "edge_agent": [v / 2 for v in x[:-1]] + [None]},
            "meta": {"world": "square:4x4", "envs": 2, "steps": 10, "model_kind": kind,
                     "chance": 0.1}}


@pytest.mark.parametrize("formats", [("png",), ("pdf", "svg", "png")])
def test_learning_figure_written_in_every_format(tmp_path, formats):
    inputs = FigureInputs(evals={"TEM-t": fake_eval(), "sinusoidal": fake_eval("sinusoidal",
                                                                               0.3)})
    report = build_figures(inputs, tmp_path, only=["learning"], formats=formats)
    assert [p.suffix[1:] for p in report["learning"]] == list(formats)
    for p in report["learning"]:
        assert p.stat().st_size > 1000
    if "png" in formats:
        assert (tmp_path / "learning.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if "svg" in formats:  # editable text, not paths
        assert "<text" in (tmp_path / "learning.svg").read_text() or \
            "proportion of nodes visited" in (tmp_path / "learning.svg").read_text()


def test_missing_input_skips_with_reason(tmp_path):
    report = build_figures(FigureInputs(), tmp_path, only=["learning"])
    assert report["learning"].startswith("skipped:") and "--eval" in report["learning"]
    assert not list(tmp_path.iterdir())


def test_unknown_figure_lists_known(tmp_path):
    with pytest.raises(FigureError, match="known: .*learning"):
        build_figures(FigureInputs(), tmp_path, only=["nope"])
    with pytest.raises(FigureError, match="format"):
        build_figures(FigureInputs(), tmp_path, formats=["bmp"])


def test_read_eval_rejects_other_json(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"a": 1}')
    with pytest.raises(FigureError, match="x.json"):
        read_eval(p)
    p.write_text("{")
    with pytest.raises(FigureError, match="cannot be read"):
        read_eval(p)


def test_registry_has_learning():
    assert "learning" in FIGURES


@pytest.fixture(scope="module")
def synthetic_analysis():
    from hippo_rep.analysis.pipeline import analyse
    from hippo_rep.analysis.synthetic_recording import synthetic_recording

    rec = synthetic_recording(n_env=2, n_steps=600, n_grid=4, n_place=4, n_random=2,
                              n_memory=8)
    return analyse(rec, shuffles=2, seed=0)


@pytest.mark.parametrize("name", ["grid_cells", "place_cells"])
def test_map_figures_from_synthetic_analysis(tmp_path, synthetic_analysis, name):
    report = build_figures(FigureInputs(analysis=synthetic_analysis), tmp_path, only=[name],
                           formats=("png", "svg"))
    assert all(p.stat().st_size > 1000 for p in report[name])


def test_map_figure_skipped_when_variable_missing(tmp_path, synthetic_analysis):
    report = build_figures(FigureInputs(analysis=synthetic_analysis.drop_vars("gridness_60")),
                           tmp_path, only=["grid_cells", "place_cells"], formats=("png",))
    assert "gridness_60" in report["grid_cells"]
    assert isinstance(report["place_cells"], list)
