"""ov3d_app.state: the key table, URL round trips, bad and unknown parameters."""

import pytest

from ov3d_app import state as S


def test_every_key_has_a_valid_default_and_unique_query_name():
    qnames = [k.query for k in S.KEYS if k.query]
    assert len(qnames) == len(set(qnames))
    assert len({k.name for k in S.KEYS}) == len(S.KEYS)
    for k in S.KEYS:
        if k.kind == "choice":
            assert k.default in k.choices, k.name
    d = S.defaults()
    assert d["protocol"] == "dataset-level" and d["runs"] == [] and d["min_score"] == 0.0


def test_defaults_are_fresh_copies():
    a, b = S.defaults(), S.defaults()
    a["runs"].append("x")
    assert b["runs"] == []


def test_default_state_gives_empty_query():
    assert S.state_to_query(S.defaults()) == {}


def test_round_trip_of_a_full_view():
    st = S.defaults()
    st.update(source="config", config_path="/data/bench.yaml", dataset="SUNRGBD_test", runs=["cubercnn", "detany3d"],
              protocol="target-aware", min_score=0.35, iou=0.5, category="chair", focus_run="cubercnn", image_id=1234,
              f_classes=["chair", "table"], f_errors=["FP", "FN"], f_min_score=0.2, color_by="class", show_3d=True,
              highlight="pred|cubercnn|17", conf_level="super", hide_diag=True, log_color=True, conf_norm=False,
              conf_classes=["chair"], conf_cell=("chair", "table"), templates=["S1", "O4"], template="S1",
              theta=0.42, split_k=5, split_n=300, presentation=True)
    q = S.state_to_query(st)
    assert all(isinstance(v, str) for v in q.values())
    back = S.query_to_state(q)
    for name in S.URL_KEYS:
        assert back[name] == st[name], name


def test_query_values_are_compact_strings():
    q = S.state_to_query({**S.defaults(), "runs": ["a", "b"], "conf_cell": ("sofa", "chair"), "hide_diag": True,
                          "min_score": 0.3})
    assert q == {"runs": "a,b", "cell": "sofa|chair", "nodiag": "1", "thr": "0.3"}


def test_config_path_only_written_for_config_source():
    q = S.state_to_query({**S.defaults(), "config_path": "/x.yaml"})
    assert "cfg" not in q
    q = S.state_to_query({**S.defaults(), "source": "config", "config_path": "/x.yaml"})
    assert q["cfg"] == "/x.yaml" and q["src"] == "config"


@pytest.mark.parametrize("params, key, expected", [
    ({"proto": "oracle"}, "protocol", "dataset-level"),      # not a choice
    ({"thr": "1.5"}, "min_score", 0.0),                     # out of range
    ({"thr": "nan"}, "min_score", 0.0),                     # not finite
    ({"thr": "abc"}, "min_score", 0.0),                     # not a number
    ({"img": "12.5"}, "image_id", None),                    # not an int
    ({"iou": "0.3"}, "iou", 0.25),                          # not an allowed IoU
    ({"iou": "0.5"}, "iou", 0.5),
    ({"nodiag": "maybe"}, "hide_diag", False),
    ({"nodiag": "true"}, "hide_diag", True),
    ({"cell": "chair"}, "conf_cell", None),                 # no separator
    ({"err": "FP,bogus,FN,FP"}, "f_errors", ["FP", "FN"]),  # unknown items dropped, duplicates removed
    ({"k": "0"}, "split_k", 10),                            # below the minimum
])
def test_bad_values_fall_back_to_defaults(params, key, expected):
    assert S.query_to_state(params)[key] == expected


def test_unknown_params_are_ignored_and_lists_take_the_last_value():
    st = S.query_to_state({"utm_source": "mail", "ds": ["A", "B"], "thr": 0.3})  # non-string value ignored
    assert st["dataset"] == "B"
    assert st["min_score"] == 0.0
    assert set(st) == set(S.URL_KEYS)


def test_sanitize_against_the_benchmark():
    runs = {"A": ["r1", "r2"], "B": ["r3"]}
    st = {**S.defaults(), "dataset": "C", "runs": ["r1", "r9"], "focus_run": "r9"}
    assert S.sanitize(st, datasets=["A", "B"], runs_of=runs.get) == {"dataset": "A", "runs": ["r1"],
                                                                        "focus_run": None}
    st = {**S.defaults(), "dataset": "B", "runs": ["r3"]}
    assert S.sanitize(st, datasets=["A", "B"], runs_of=runs.get) == {}


def test_active_runs_and_view_title():
    assert S.active_runs({"runs": []}, ["a", "b"]) == ["a", "b"]
    assert S.active_runs({"runs": ["b", "zz"]}, ["a", "b"]) == ["b"]
    title = S.view_title({"ds": "KITTI", "img": "7", "cell": "car|van"}, "Confusion")
    assert title == "Confusion · KITTI · image 7 · car→van"
