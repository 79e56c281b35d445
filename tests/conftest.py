"""Shared fixtures: the real third-party data directory and an isolated state directory per test session."""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

# Services are real but isolated: a throw-away state dir (Prefect DB, MLflow DB) for the whole test session.
_STATE = Path(tempfile.mkdtemp(prefix="sluice-test-state-"))
# registered first, so it runs last at exit: after the session's temporary Prefect server has stopped
atexit.register(shutil.rmtree, _STATE, ignore_errors=True)
os.environ["SLUICE_STATE_DIR"] = str(_STATE)
os.environ["PREFECT_HOME"] = str(_STATE / "prefect")
os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{_STATE / 'mlflow.db'}"
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
# Nothing reaches for the Hugging Face Hub (lm-eval's local task, the exports): set before datasets and
# huggingface_hub read them at import
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

from prefect_database import MigratedPrefectDatabase  # noqa: E402  (tests/ is on the path; after the settings above)

_PREFECT_DATABASE = MigratedPrefectDatabase(_STATE / "prefect-template")


def pytest_sessionstart(session):
    _PREFECT_DATABASE.start()


@pytest.fixture(scope="session")
def prefect_database() -> MigratedPrefectDatabase:
    """A migrated Prefect database for the tests that start a Prefect server of their own: `copy_to(PREFECT_HOME)`."""
    return _PREFECT_DATABASE


@pytest.fixture(scope="session")
def data_dir() -> Path:
    from storage.locations import shared_data_dir

    return shared_data_dir()


@pytest.fixture(scope="session")
def lid_model(data_dir) -> str:
    return str(data_dir / "lid" / "lid.176.ftz")


@pytest.fixture(scope="session")
def small_corpus(data_dir, tmp_path_factory) -> Path:
    """The seeded `small` corpus, generated once per test session."""
    from dev.corpus.generate import generate_corpus

    out = tmp_path_factory.mktemp("corpus-small")
    generate_corpus(out, size="small", seed=0, data_dir=data_dir)
    return out


@pytest.fixture(scope="session")
def byte_shards(data_dir, tmp_path_factory) -> list[str]:
    """Token shards of four real speeches, bytes as tokens (vocabulary 512): training data without a tokenizer."""
    from storage.token_shard import TokenShardWriter

    out = tmp_path_factory.mktemp("bytes")
    bases = []
    for index, name in enumerate(["1861-Lincoln.txt", "1933-Roosevelt.txt", "1961-Kennedy.txt", "2005-Bush.txt"]):
        writer = TokenShardWriter(out / f"shard-{index}", vocab_size=512)
        text = (data_dir / "reference" / "speeches_nltk" / "inaugural" / name).read_bytes()
        for paragraph in text.split(b"\n\n"):
            if paragraph.strip():
                writer.add_document(list(paragraph) + [10])
        writer.close()
        bases.append(str(out / f"shard-{index}"))
    return bases


@pytest.fixture(scope="session")
def pages(data_dir) -> list[tuple[str, str]]:
    """(language, text) of real web pages in 15 languages (tests/tiny_models.py: `web_pages`)."""
    from tiny_models import web_pages

    return web_pages(data_dir)


@pytest.fixture(scope="session")
def split_pages(pages) -> tuple[list[tuple[str, str]], list[str]]:
    """Training pages and held-out lines (tests/tiny_models.py: `split_web_pages`)."""
    from tiny_models import split_web_pages

    return split_web_pages(pages)


@pytest.fixture(scope="session")
def logged_model(split_pages, tmp_path_factory) -> dict:
    """A tiny model trained for a few hundred steps on the training pages' tokens, saved by the trainer's
    checkpoint code and logged as training logs it (tests/tiny_models.py): its `uri`, `run_id`, `checkpoint`,
    `tokenizer`, last `loss` and `loaded` (flows.logged_model's model and tokenizer). Trained once a session,
    for the export's and the evaluation's tests."""
    from configs.tokenizer import TokenizerConfig
    from flows.logged_model import load_language_model
    from tiny_models import TRAINING_STEPS, log_tiny_model, train_sentencepiece, train_tiny_model

    folder = tmp_path_factory.mktemp("logged")
    tokenizer = train_sentencepiece(folder, split_pages[0], TokenizerConfig(vocab_size=2000, heldout_fraction=0.0))
    model, optimizer, loss = train_tiny_model(split_pages[0], tokenizer)
    logged = log_tiny_model(folder, model, optimizer, tokenizer, TRAINING_STEPS, "hf-export-test")
    return logged | {"loss": loss, "loaded": load_language_model(logged["uri"]), "tokenizer": tokenizer}


@pytest.fixture(scope="session")
def dask_address(prefect_database) -> str:
    """One Dask LocalCluster (2 workers) for the end-to-end runs that leave their cluster alone: a recipe's own
    cluster costs ~2.5 s to start in a process (its workers forked from a forkserver that imports the stages'
    libraries first), and the suite runs about ten. The test that kills workers and the
    `sluice run` test start their own, as a recipe without `dask.address` does. The session's Prefect API starts
    here, on the migrated database unless a test before started it."""
    from prefect import flow

    from configs.schema import DaskConfig
    from flows.dask_cluster import dask_cluster

    if not (_STATE / "prefect" / "prefect.db").exists():
        prefect_database.copy_to(_STATE / "prefect")
    flow(_nothing, name="start-the-session-api")()    # the session's Prefect API is up: its URL goes to the workers
    with dask_cluster(DaskConfig(n_workers=2)) as cluster:
        yield cluster.address


def _nothing() -> None:
    pass


@pytest.fixture(scope="session")
def demo_recipe(small_corpus, dask_address, tmp_path_factory):
    """configs/demo.yaml on the small corpus, in a store of the session's, on the session's Dask cluster."""
    from configs.schema import load_recipe, parse_recipe

    raw = load_recipe("configs/demo.yaml").model_dump()
    raw["input"]["paths"] = [str(small_corpus / "warc")]
    raw["dask"] = {"address": dask_address}
    raw["store"] = str(tmp_path_factory.mktemp("store"))
    raw["mlflow"]["experiment"] = "e2e"
    return parse_recipe(raw)


@pytest.fixture(scope="session")
def traced_demo_run(demo_recipe):
    """The demo recipe run once a session (every stage and the training), with the project modules each stage ran
    in this process (tests/stage_trace.py): test_flow_e2e checks it, test_server serves its store cached."""
    from flows.curation import curation_flow
    from stage_trace import StageTrace

    with StageTrace() as trace:
        return curation_flow(demo_recipe), trace


def pytest_sessionfinish(session, exitstatus):
    """Stop the temporary Prefect servers the flows started while pytest's output streams are still open: left to
    Prefect's atexit hook, the server logs its 'Stopping temporary server' line to a stream pytest has closed."""
    import sys

    _PREFECT_DATABASE.stop()

    if "prefect.server.api.server" in sys.modules:
        from prefect.events.worker import EventsWorker
        from prefect.logging.handlers import APILogWorker
        from prefect.server.api.server import SubprocessASGIServer

        APILogWorker.drain_all(timeout=30)      # logs and events still queued go out while the server is up
        EventsWorker.drain_all(timeout=30)
        for server in list(SubprocessASGIServer._instances.values()):
            server.stop()


def pytest_unconfigure(config):
    """The session is over: skip the full garbage collections interpreter shutdown runs over every object the suite
    made (seconds, with torch, Prefect and MLflow loaded). Exit handlers still run."""
    import gc

    gc.freeze()
