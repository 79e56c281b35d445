"""`sluice eval` for real: the local lm-evaluation-harness task (`sluice_lastword`, built from WikiText-2's
validation split in the shared data) run offline on the tiny trained model's export (conftest.py's
`logged_model`), its metrics logged to the model's MLflow run. What can fail: the likelihood metrics are recomputed
by sluice's own model on the same items (a wrong export, a wrong gold choice or a misread sample moves them), and
the trained model must rank the answers better than the same architecture untrained."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from tiny_models import log_tiny_model, one_thread, train_tiny_model    # tests/tiny_models.py

from tasks.evaluation.lastword import SOURCE, TASK_NAME, LastWordSettings, lastword_items

LIMIT = 40


def test_the_task_items_are_deterministic_clean_and_not_in_the_demo_corpus(data_dir):
    items = lastword_items(data_dir)
    assert items == lastword_items(data_dir) and len(items) > 1000
    assert len({item["id"] for item in items}) == len(items)
    for item in items:
        assert item["choices"][item["label"]] == item["answer"] and len(set(item["choices"])) == 4
        assert {choice[0].isupper() for choice in item["choices"]} == {item["answer"][0].isupper()}
        assert "<unk>" not in item["context"] and " ," not in item["context"]
        assert LastWordSettings().min_context_words <= len(item["context"].split()) <= 120
    assert sorted(item["label"] for item in items[:400]).count(0) < 200      # the gold's place is drawn, not fixed
    assert lastword_items(data_dir, LastWordSettings(seed=1))[0]["id"] != items[0]["id"]
    # held out: the demo corpus writes its pages from these texts (dev/corpus/passages.py), and they hold none of
    # the contexts (compared without whitespace and '@': WikiText's raw test split keeps " @-@ " and spaced
    # punctuation)
    def bare(text: str) -> str:
        return "".join(text.replace("@", "").split())

    def text(path: Path) -> str:
        try:
            return path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            return path.read_text(encoding="latin-1")         # shakespeare-caesar.txt

    reference = data_dir / SOURCE.parent.parent
    trained = bare("\n".join(text(path) for path in [*sorted((reference / "gutenberg_nltk").glob("*.txt")),
                                                       *sorted((reference / "speeches_nltk").glob("*/*.txt")),
                                                       reference / "wikitext-2" / "wiki.test.raw"]))

    def found(some: list[dict]) -> int:
        return sum(bare(item["context"])[:100] in trained for item in some[:300])

    assert found(items) == 0
    # the check finds text that is trained on: the same items built from the test split are all there
    assert found(lastword_items(data_dir, source=SOURCE.with_name("wiki.test.raw"))) == 300


def _sluice_scores(loaded, items: list[dict]) -> list[list[float]]:
    """Each choice's log-probability after the context, by sluice's own model and SentencePiece, as lm-eval scores
    a choice: the context's ids are a prefix of the ids of context + " " + choice, the rest is the continuation,
    and the last seq_len + 1 ids are kept."""
    model, tokenizer, seq_len = loaded.model, loaded.tokenizer, loaded.model.config.seq_len
    scores = []
    with torch.no_grad(), one_thread():
        for item in items:
            context = tokenizer.encode(item["context"])
            row = []
            for choice in item["choices"]:
                whole = tokenizer.encode(f"{item['context']} {choice}")
                assert whole[:len(context)] == context
                continuation = len(whole) - len(context)
                ids = torch.tensor(whole[-(seq_len + 1):])
                logprobs = torch.log_softmax(model(ids[None, :-1])[0].float(), dim=-1)
                targets = ids[1:][-continuation:]
                row.append(logprobs[-continuation:].gather(1, targets[:, None]).sum().item())
            scores.append(row)
    return scores


@pytest.fixture(scope="module")
def untrained(logged_model, split_pages, tmp_path_factory) -> dict:
    """The same architecture and tokenizer, its seeded initialisation, logged as the trained one is."""
    folder = tmp_path_factory.mktemp("untrained")
    model, optimizer, _ = train_tiny_model(split_pages[0], logged_model["tokenizer"], steps=0)
    return log_tiny_model(folder, model, optimizer, logged_model["tokenizer"], 0, "eval-test")


def test_sluice_eval_logs_the_local_tasks_metrics_to_the_models_run(logged_model, untrained, data_dir, capsys):
    import mlflow

    from cli.main import main
    from flows.downstream_eval import evaluate_model

    capsys.readouterr()
    assert main(["eval", logged_model["uri"], "--tasks", TASK_NAME, "--limit", str(LIMIT)]) == 0
    printed = capsys.readouterr().out
    assert f"{TASK_NAME} ({LIMIT} items)" in printed and "gold_logprob" in printed and "acc_norm" in printed
    client = mlflow.MlflowClient()
    run = client.get_run(logged_model["run_id"])
    metrics = {key.split("/", 2)[2]: value for key, value in run.data.metrics.items()
               if key.startswith(f"eval/{TASK_NAME}/")}
    assert {"acc", "acc_stderr", "acc_norm", "gold_logprob", "gold_choice_prob", "items"} <= set(metrics)
    assert metrics["items"] == LIMIT and 0 <= metrics["acc"] <= 1 and 0 <= metrics["acc_norm"] <= 1
    assert metrics["gold_logprob"] < 0 and 0 < metrics["gold_choice_prob"] < 1
    model_id = logged_model["uri"].removeprefix("models:/")
    assert {metric.key for metric in mlflow.get_logged_model(model_id).metrics} >= {
        f"eval/{TASK_NAME}/acc", f"eval/{TASK_NAME}/gold_logprob"}
    artifact = f"lm_eval/results_{TASK_NAME}.json"
    assert artifact in {item.path for item in client.list_artifacts(logged_model["run_id"], "lm_eval")}
    logged = json.loads(Path(client.download_artifacts(logged_model["run_id"], artifact)).read_text())
    assert logged["results"][TASK_NAME]["acc,none"] == metrics["acc"] and "samples" not in logged
    assert logged["sluice_metrics"][TASK_NAME]["gold_logprob"] == pytest.approx(metrics["gold_logprob"])

    # the same items scored by sluice's model: lm-eval's likelihoods, its accuracy and the gold read from its samples
    items = lastword_items(data_dir)[:LIMIT]
    scores = _sluice_scores(logged_model["loaded"], items)
    gold = [row[item["label"]] for row, item in zip(scores, items)]
    assert metrics["gold_logprob"] == pytest.approx(sum(gold) / LIMIT, abs=1e-3)
    shares = [math.exp(row[item["label"]]) / sum(math.exp(score) for score in row) for row, item in zip(scores, items)]
    assert metrics["gold_choice_prob"] == pytest.approx(sum(shares) / LIMIT, abs=1e-4)
    correct = [max(range(4), key=row.__getitem__) == item["label"] for row, item in zip(scores, items)]
    assert metrics["acc"] == pytest.approx(sum(correct) / LIMIT)

    # trained beats untrained on the answer's log-probability (same items, same tokenizer, same architecture)
    baseline = evaluate_model(untrained["uri"], [TASK_NAME], limit=LIMIT)["tasks"][TASK_NAME]
    print(f"gold log-probability: trained {metrics['gold_logprob']:.3f}, untrained {baseline['gold_logprob']:.3f}; "
          f"gold share: {metrics['gold_choice_prob']:.3f} vs {baseline['gold_choice_prob']:.3f}; "
          f"acc {metrics['acc']:.3f} vs {baseline['acc']:.3f}")
    assert metrics["gold_logprob"] > baseline["gold_logprob"] + 2.0
    assert client.get_run(untrained["run_id"]).data.metrics[f"eval/{TASK_NAME}/gold_logprob"] == \
        pytest.approx(baseline["gold_logprob"])


def test_an_unknown_task_names_the_local_task_and_how_to_run_hub_tasks(logged_model, capsys):
    from cli.main import main

    capsys.readouterr()
    assert main(["eval", logged_model["uri"], "--tasks", f"{TASK_NAME},no_such_task"]) == 2
    error = capsys.readouterr().err
    assert "no_such_task" in error and TASK_NAME in error and "hellaswag,arc_easy,piqa" in error
    assert "network" in error


def test_a_name_in_no_lm_eval_task_file_is_refused_before_indexing_and_its_task_and_group_names_are_found():
    """The quick check before lm-eval's TaskManager indexes its 14k tasks (~8 s): it must pass every name lm-eval
    knows, tasks and groups alike."""
    from flows.downstream_eval import _in_no_lm_eval_task_file

    assert _in_no_lm_eval_task_file(["no_such_task", "hellaswag", "arc_easy", "mmlu"]) == ["no_such_task"]


def test_likelihood_metrics_read_multiple_choice_and_loglikelihood_samples():
    """The sample shapes of lm-eval's hub tasks (HellaSwag's target an index as text, ARC's the choice's index,
    LAMBADA's one request), without their data."""
    from tasks.evaluation.lm_eval_results import likelihood_metrics

    choices = [[[-3.0, False]], [[-1.0, True]]]
    multiple = [{"target": "1", "filtered_resps": [(-3.0, False), (-1.0, True)], "filter": "none"},
                {"target": 0, "filtered_resps": [(-2.0, True), (-4.0, False)], "filter": "none"},
                {"target": 0, "filtered_resps": [(-9.0, False), (-9.5, False)], "filter": "other"}]
    metrics = likelihood_metrics(multiple, "multiple_choice")
    assert metrics["gold_logprob"] == pytest.approx(-1.5) and metrics["items"] == 2
    assert metrics["gold_choice_prob"] == pytest.approx(1 / (1 + math.exp(-2)))
    lambada = [{"target": " word", "filtered_resps": [(-2.5, True)], "resps": [choices[0]], "filter": "none"}]
    assert likelihood_metrics(lambada, "loglikelihood") == {"gold_logprob": -2.5, "items": 1.0}
    rolling = [{"target": "", "filtered_resps": [-120.0], "filter": "none"}]
    assert likelihood_metrics(rolling, "loglikelihood_rolling") == {}
    generated = [{"target": "4", "filtered_resps": ["4"], "filter": "none"}]
    assert likelihood_metrics(generated, "generate_until") == {}
