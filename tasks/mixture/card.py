"""The mixture's data card: requested vs realized weights as a table and a bar chart."""
from __future__ import annotations

import os

import numpy as np

from tracking.charts import default_style, new_figure, save_png


def card_markdown(result: dict) -> str:
    rows = [f"| {r['source']} | {r['weight_requested']:.4f} | {r['weight_realized']:.4f} | {r['tokens_requested']:,} "
            f"| {r['tokens_realized']:,} | {r['pieces_drawn']} of {r['pieces_available']} | {r['epochs']} |"
            for r in result["sources"]]
    return "\n".join([
        "## Data mixture", "",
        f"- training: {result['train_tokens']:,} tokens in {result['train_pieces']} pieces of documents "
        f"(repeats counted); validation: {result['validation_tokens']:,} tokens in "
        f"{result['validation_documents']} documents, none of them in training",
        f"- largest gap between requested and realized weight: {result['max_abs_weight_error']:.4f}", "",
        "| source | weight requested | weight realized | tokens requested | tokens realized | pieces drawn "
        "| epochs |", "|---|---|---|---|---|---|---|", *rows])


def weights_png(sources: list[dict], path: str | os.PathLike) -> str:
    """Requested against realized weight per source (the card's rows, `selection.card_rows`)."""
    names = [row["source"] for row in sources]
    positions = np.arange(len(names))
    with default_style():
        fig = new_figure((max(4.0, 1.4 * len(names) + 2), 3.5))
        axes = fig.add_subplot()
        axes.bar(positions - 0.2, [row["weight_requested"] for row in sources], 0.4, label="requested")
        axes.bar(positions + 0.2, [row["weight_realized"] for row in sources], 0.4, label="realized")
        axes.set_xticks(positions, names)
        axes.set_ylabel("share of training tokens")
        axes.set_title("Data mixture: requested vs realized weights")
        axes.legend()
        return save_png(fig, path)
