"""name_match (our deterministic validator for relational answers): hand-worked cases."""

from urbanarena.tasks.validators import NAME_MATCH, name_match


def test_exact_and_sentence_answers_are_read():
    r = name_match("Stockmann", "Stockmann")
    assert r.metric == NAME_MATCH and r.is_correct and r.score == 1.0
    # inside a sentence, other case and punctuation: the folded substring matches exactly
    assert name_match("The shop to its left is STOCKMANN.", "Stockmann").is_correct


def test_diacritics_and_one_typo_in_five_letters():
    # "Kahvila Sävy" folds to "kahvilasavy" (11 chars); one substitution -> 1/11 <= 0.2
    assert name_match("kahvila savu", "Kahvila Sävy").is_correct
    # three errors in 11 -> 0.27 > 0.2
    r = name_match("kahvola sovu", "Kahvila Sävy")
    assert not r.is_correct and r.score == 0.0
    assert abs(r.prediction["distance"] - 3 / 11) < 1e-4


def test_listing_a_distractor_is_wrong():
    r = name_match("Either Stockmann or Zara", "Stockmann", ["Zara Home", "Zara"])
    # "Zara Home" (8 folded chars) is not read: best substring "zara" needs 4 insertions -> 0.5;
    # "Zara" (4 chars) is read exactly
    assert not r.is_correct and r.prediction["distractors_read"] == ["Zara"]
    assert name_match("Stockmann", "Stockmann", ["Zara"]).is_correct


def test_short_or_overlapping_distractors_are_ignored():
    # "Bar" folds to 3 chars (< 4) and "Stockmann Herkku" contains the expected name: neither counts
    r = name_match("Stockmann bar", "Stockmann", ["Bar", "Stockmann Herkku"])
    assert r.is_correct


def test_empty_answer_is_wrong():
    assert not name_match("", "Stockmann").is_correct
