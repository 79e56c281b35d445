"""Stop words per language for Gopher's "at least two stop words" rule.

English is Gopher's own list. The others are the same kind of list, chosen for this project: the most
frequent function words of each language (articles, the verb "to be", common prepositions and
conjunctions), so that ordinary prose of that language passes as English prose does under Gopher's list.
Languages not listed here skip the rule (counted as not applicable), rather than failing it.
"""
from __future__ import annotations

STOP_WORDS: dict[str, frozenset[str]] = {lang: frozenset(words.split()) for lang, words in {
    "en": "the be to of and that have with",
    "de": "der die das und ist zu den von mit nicht sich des auf für ein eine",
    "fr": "le la les de des et est que un une en du pour dans pas",
    "es": "el la los las de que y en un una es por con para del",
    "it": "il la di che e è un una per non con del della le",
    "pt": "o a os as de que e do da em um uma para com não é",
    "nl": "de het een en van is dat op te in niet met zijn",
    "sv": "och att det som en på är av för med till den inte",
    "da": "og at det som en på er af for med til den ikke",
    "no": "og i det som en på er av for med til den ikke",
    "pl": "i w na z że się nie do to jest jak o",
    "cs": "a v se na že je to s z do o jako",
    "ru": "и в не на что с как по это он она я быть",
    "uk": "і в не на що з як це та до від",
    "tr": "ve bir bu da de için ile gibi çok ne olarak",
    "fi": "ja on ei se että oli kun mutta myös joka",
    "hu": "a az és hogy nem egy is van meg ez",
    "ro": "și în de la cu nu că o un este pe",
    "id": "yang dan di ini itu dengan untuk dari tidak ke",
    "ca": "el la els les de i que en un una per amb",
}.items()}


def stop_words_for(lang: str | None) -> frozenset[str] | None:
    """The language's list, or None when the rule does not apply to it."""
    return STOP_WORDS.get((lang or "").split("_")[0])
