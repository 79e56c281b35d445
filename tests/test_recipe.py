import pytest

from configs.parsing import RecipeError
from configs.schema import load_recipe, parse_recipe


def test_demo_recipe_is_valid():
    recipe = load_recipe("configs/demo.yaml")
    assert recipe.name == "demo" and recipe.extract.html.engine == "resiliparse"


@pytest.mark.parametrize("patch, field", [
    ({"extract": {"langid": {"min_scor": 0.5}}}, "extract.langid.min_scor"),
    ({"extract": {"langid": {"min_score": 1.5}}}, "extract.langid.min_score"),
    ({"extract": {"max_payload_bytes": 0}}, "extract.max_payload_bytes"),
    ({"extract": {"html": {"engine": "lynx"}}}, "extract.html.engine"),
    ({"dask": {"n_workers": -1}}, "dask.n_workers"),
    ({"input": {"paths": []}}, "input: Value error, give `paths`"),
    ({"input": {"listing": {"url": "warc.paths.gz", "limit": 1, "sample": 1}}}, "input.listing"),
    ({"colour": "blue"}, "colour"),
])
def test_bad_values_fail_naming_the_field(patch, field):
    raw = {"name": "t", "input": {"paths": ["x"]}}
    for key, value in patch.items():
        raw[key] = {**raw.get(key, {}), **value} if isinstance(value, dict) else value
    with pytest.raises(RecipeError) as error:
        parse_recipe(raw, origin="t.yaml")
    assert field in str(error.value) and "t.yaml" in str(error.value)


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(RecipeError, match="does not exist"):
        load_recipe(tmp_path / "none.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed")
    with pytest.raises(RecipeError, match="not valid YAML"):
        load_recipe(bad)
