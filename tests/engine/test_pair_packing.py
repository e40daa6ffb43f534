"""A finished pair's records are held packed while the run's other pairs are asked (issue 34 item 4): unpacked,
every value is the one packed, of the same type (a JSON round trip would turn a tuple into a list and NaN into
null); records pickle cannot hold stay as they are."""

from __future__ import annotations

import math
import threading

from rescue.engine.outcome import PairResult
from rescue.tasks import get_task
from rescue.tasks.base import JudgeGrade, JudgeResults, Prediction, make_record


def _records(demo_samples, count=2500):
    task = get_task("rpp")
    instances = task.build(demo_samples)
    assert instances
    records = [make_record(task, "m", instances[n % len(instances)],
                           Prediction(instances[n % len(instances)].instance_id, "ok", value=["a", "b"], raw="a, b"))
               for n in range(count)]
    records[0].gold = ("a", "b")  # a tuple stays a tuple
    records[1].scores = {"mrr": math.nan, "recall_at_1": None}
    records[2].judge = JudgeResults(judges={"j": JudgeGrade(status="ok", scores={"empathy": 4.0})})
    records[3].prediction = {"nested": [1, 2.5, {"x": None}]}
    return records


def test_unpacked_records_are_the_packed_ones(demo_samples):
    records = _records(demo_samples)
    before = [(r.model_dump_json(), repr(r.gold), type(r.gold)) for r in records]
    pair = PairResult("m", "rpp", list(records))
    pair.pack()
    assert pair.records == [] and pair.packed is not None and len(pair.packed) == 3  # a thousand to a piece
    pair.pack()  # packing twice keeps the first
    pair.unpack()
    assert pair.packed is None and len(pair.records) == len(records)
    assert [(r.model_dump_json(), repr(r.gold), type(r.gold)) for r in pair.records] == before
    assert math.isnan(pair.records[1].scores["mrr"])
    assert pair.records[2].judge is not None and pair.records[2].judge.judges["j"].scores == {"empathy": 4.0}
    pair.records[5].scores = {"mrr": 0.25}  # an unpacked record is assigned like any other, and alone
    assert pair.records[6].scores != {"mrr": 0.25}
    pair.unpack()  # nothing packed: nothing changes
    assert len(pair.records) == len(records)


def test_records_pickle_cannot_hold_stay_as_they_are(demo_samples):
    records = _records(demo_samples, 10)
    records[4].prediction = threading.Lock()  # a model of one's own answering with an object pickle refuses
    pair = PairResult("m", "rpp", records)
    pair.pack()
    assert pair.packed is None and pair.records is records


def test_an_empty_pair_packs_and_unpacks(demo_samples):
    pair = PairResult("m", "rpp", [])
    pair.pack()
    pair.unpack()
    assert pair.records == []
