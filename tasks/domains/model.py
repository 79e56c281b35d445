"""The domain model: topic and format clusters fitted once, on a sample, then applied to every document.

Topics: TF-IDF of hashed word counts (sublinear counts, the sample's IDF), reduced by a truncated SVD, clustered by
k-means on unit vectors (so by cosine). Formats: the format statistics standardised by the sample's mean and
spread, clustered by k-means. Clusters are numbered by size in the sample, largest first. The fitted arrays are
saved as one .npz file; applying them is matrix arithmetic, so a document's domain depends on its text and the
model alone, whichever shard it is in.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy import sparse
from sklearn.cluster import KMeans
from sklearn.decomposition import TruncatedSVD

from configs.domains import DomainsConfig
from storage.arrays import load_arrays, save_arrays
from tasks.domains.features import FORMAT_FEATURES, format_matrix, word_vectorizer

TOP_TERMS = 10
EXAMPLES = 3
EXAMPLE_CHARS = 200


@dataclass
class DomainModel:
    idf: np.ndarray                 # (hash_features,)
    components: np.ndarray          # (components, hash_features): the SVD's basis
    topic_centroids: np.ndarray     # (topics, components), unit rows
    format_mean: np.ndarray         # (format features,)
    format_scale: np.ndarray
    format_centroids: np.ndarray    # (formats, format features), standardised

    def save(self, url: str) -> None:
        # uncompressed: the float64 SVD basis compresses only to 75% (25 of 33.5 MB at 65,536 features), and
        # compressing it took 1.3 s of the one fit call that the stage's workers wait on
        save_arrays(asdict(self), url, compressed=False)

    @classmethod
    def load(cls, url: str) -> DomainModel:
        return cls(**load_arrays(url))

    def assign(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(topic, format) of each text: the nearest centroid of each clustering."""
        return self.assign_features(word_vectorizer(self.idf.size).transform(texts), format_matrix(texts))

    def assign_features(self, counts: sparse.csr_matrix, formats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`assign` of texts given by their hashed word counts and format vectors (`sample_features`' first two)."""
        vectors = _unit(_unit_rows(_tf_idf(counts.astype(np.float64), self.idf)) @ self.components.T)
        topics = (vectors @ self.topic_centroids.T).argmax(1)
        standardised = (formats - self.format_mean) / self.format_scale
        distances = ((standardised[:, None, :] - self.format_centroids[None]) ** 2).sum(-1)
        return topics.astype(np.int32), distances.argmin(1).astype(np.int32)


@dataclass
class FittedDomains:
    """The model, and what it makes of the sample it was fitted on (the cards read these)."""
    model: DomainModel
    topic_vectors: np.ndarray       # (sample, components), unit rows: the sample's topic vectors
    formats: np.ndarray             # (sample, format features), standardised by the model


def fit_domains(counts: sparse.csr_matrix, formats: np.ndarray, config: DomainsConfig) -> FittedDomains:
    """The model fitted on the sample's hashed word counts and format vectors (`sample_features`, rows in a fixed
    order)."""
    counts = counts.astype(np.float64)
    documents = counts.shape[0]
    idf = np.log((1 + documents) / (1 + np.bincount(counts.indices, minlength=counts.shape[1]))) + 1
    weighted = _unit_rows(_tf_idf(counts, idf))
    components = min(config.components, documents - 1, counts.shape[1] - 1)
    svd = TruncatedSVD(components, algorithm="randomized", n_iter=7, random_state=config.seed).fit(weighted)
    vectors = _unit(weighted @ svd.components_.T)
    topics = _by_size(_kmeans(vectors, config.topics, config.seed))
    mean, scale = formats.mean(0), formats.std(0) + 1e-9
    standardised = (formats - mean) / scale
    format_centroids = _by_size(_kmeans(standardised, config.formats, config.seed))
    return FittedDomains(DomainModel(idf, svd.components_, _unit(topics), mean, scale, format_centroids), vectors,
                         standardised)


def cards(fitted: FittedDomains, texts: list[str], rows: list[dict], vocabulary: dict[str, tuple[int, int]]) -> dict:
    """Per topic and format: its share of the sample, top terms (topics) or most distinctive statistics (formats),
    and the sample documents nearest its centre (id, url, beginning of the text). `vocabulary`: each word of the
    sample with its count and its hashed feature (`tasks.domains.features.sample_features`)."""
    model, standardised = fitted.model, fitted.formats
    topic_scores = fitted.topic_vectors @ model.topic_centroids.T
    format_distances = ((standardised[:, None, :] - model.format_centroids[None]) ** 2).sum(-1)
    terms = _term_names(vocabulary)
    weights = model.topic_centroids @ model.components
    topic_cards = []
    for topic in range(len(model.topic_centroids)):
        members = np.flatnonzero(topic_scores.argmax(1) == topic)
        nearest = members[np.argsort(-topic_scores[members, topic], kind="stable")][:EXAMPLES]
        top = [terms[index] for index in np.argsort(-weights[topic], kind="stable")[:TOP_TERMS * 3]
               if index in terms][:TOP_TERMS]
        topic_cards.append({"topic": topic, "sample_documents": int(members.size), "top_terms": top,
                            "examples": [_example(rows[index], texts[index]) for index in nearest]})
    format_cards = []
    for format_ in range(len(model.format_centroids)):
        members = np.flatnonzero(format_distances.argmin(1) == format_)
        nearest = members[np.argsort(format_distances[members, format_], kind="stable")][:EXAMPLES]
        centre = model.format_centroids[format_]
        distinctive = np.argsort(-np.abs(centre), kind="stable")[:4]
        format_cards.append({"format": format_, "sample_documents": int(members.size),
                             "distinctive": [f"{FORMAT_FEATURES[index]} {centre[index]:+.1f} sd"
                                             for index in distinctive],
                             "examples": [_example(rows[index], texts[index]) for index in nearest]})
    return {"topics": topic_cards, "formats": format_cards}


def _tf_idf(counts: sparse.csr_matrix, idf: np.ndarray) -> sparse.csr_matrix:
    counts = counts.copy()
    counts.data = 1 + np.log(counts.data)
    return counts.multiply(idf[None, :]).tocsr()


def _unit_rows(matrix: sparse.csr_matrix) -> sparse.csr_matrix:
    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(1)).ravel())
    return sparse.diags(1 / np.maximum(norms, 1e-12)) @ matrix


def _unit(matrix: np.ndarray) -> np.ndarray:
    return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


def _kmeans(points: np.ndarray, clusters: int, seed: int) -> KMeans:
    return KMeans(min(clusters, len(points)), n_init=4, random_state=seed).fit(points)


def _by_size(fitted: KMeans) -> np.ndarray:
    """Centroids ordered by how many sample points they hold, largest first (ties by index)."""
    sizes = np.bincount(fitted.labels_, minlength=len(fitted.cluster_centers_))
    return fitted.cluster_centers_[np.argsort(-sizes, kind="stable")]


def _term_names(vocabulary: dict[str, tuple[int, int]]) -> dict[int, str]:
    """Each hashed feature's most frequent word in the sample (a feature may hold several; ties to the last word
    in sorted order)."""
    named: dict[int, str] = {}
    for word in sorted(vocabulary):
        count, index = vocabulary[word]
        if index not in named or (count, word) > (vocabulary[named[index]][0], named[index]):
            named[index] = word
    return named


def _example(row: dict, text: str) -> dict:
    return {"id": row["id"], "url": row["url"], "text": " ".join(text[:EXAMPLE_CHARS].split())}
