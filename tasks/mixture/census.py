"""The training tokens each source of a mixture could draw from: the mixture's count pass (`selection`) summed over
the token shards, without drawing anything. A mixture search takes the domains' natural shares and repetition
caps from it."""
from __future__ import annotations

from functools import partial

from configs.mixture import MixtureConfig
from storage.manifest import Manifest
from storage.stage_result import StageResult, stage_shard_urls
from tasks.fan_out import fan_out
from tasks.mixture.mix import CALL_SHARDS
from tasks.mixture.selection import count_shard


def token_document_pairs(tokens: StageResult) -> list[tuple[str, str]]:
    """(token shard base, document shard URL) per token shard: each token shard's manifest entry names the document
    shard it was made from, whose columns select the sources."""
    sources = [entry.source for entry in Manifest.load(tokens["manifest"]).shards]
    return list(zip(stage_shard_urls(tokens), sources))


def source_tokens(pairs: list[tuple[str, str]], config: MixtureConfig) -> list[int]:
    """Per source of `config`, its training tokens (validation documents excluded)."""
    counts = fan_out(partial(count_shard, config=config), pairs, CALL_SHARDS)
    return [sum(int(count.tokens[index].sum()) for count in counts) for index in range(len(config.sources))]
