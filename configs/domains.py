"""Recipe model for the domain stage: a topic and a format for every kept document, from clusters fitted on a
seeded sample of the corpus (tasks/domains)."""
from __future__ import annotations

from pydantic import Field

from configs.base import StrictModel


class DomainsConfig(StrictModel):
    enabled: bool = Field(False, description="add `topic` and `format` columns to the final documents")
    topics: int = Field(24, ge=2, le=256, description="topic clusters (WebOrganizer's taxonomy has 24)")
    formats: int = Field(24, ge=2, le=256, description="format clusters (WebOrganizer's taxonomy has 24)")
    sample_documents: int = Field(20_000, ge=10, description=(
        "documents the clusters are fitted on, drawn by a hash of the seed and the document id"))
    hash_features: int = Field(1 << 16, ge=1024, description="hashed word features of the topic vectors")
    components: int = Field(64, ge=2, le=512, description="dimensions the topic vectors are reduced to (SVD)")
    seed: int = Field(0, ge=0, description="the sample drawn and the clusterings' initialisation")
