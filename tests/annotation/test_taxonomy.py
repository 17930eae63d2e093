"""Taxonomies: bundled files load, user files (YAML/JSON) load, bad files fail naming file, field and line."""

from __future__ import annotations

import json

import pytest

from gui_app.core.annotation import taxonomy
from gui_app.core.annotation.taxonomy import TaxonomyError


def test_bundled_taxonomies_load_and_are_keyed():
    names = set(taxonomy.bundled())
    assert {"agent_error_taxonomy", "mast", "gui_grounding", "computer_use"} <= names
    for name in names:
        tax = taxonomy.get(name)
        leaves = tax.leaves()
        assert leaves and all(lab.key and lab.key.isdigit() for lab in leaves), name
        keys = [lab.key for lab in leaves]
        assert len(set(keys)) == len(keys)


def test_mast_is_keyed_by_code_with_versioned_names():
    mast = taxonomy.get("mast")
    codes = [lab.code for lab in mast.leaves()]
    assert codes == ["1.1", "1.2", "1.3", "1.4", "1.5", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "3.1", "3.2", "3.3"]
    assert mast.label_id("1.3") == "mast:1.3"
    assert mast.get("mast:2.6").name == "Reasoning-action mismatch"
    # an older version's name still finds the label by code
    assert mast.resolve_name("action-reasoning mismatch").code == "2.6"
    assert mast.get("1.3").parent == "1"


def test_agent_error_taxonomy_modules_and_error_types():
    tax = taxonomy.get("agent_error_taxonomy")
    assert [g.code for g in tax.groups()] == ["memory", "reflection", "planning", "action", "system"]
    assert [c.code for c in tax.get("planning").children] == [
        "planning.constraint_ignorance", "planning.impossible_action", "planning.inefficient_plan"]
    assert tax.get("others") is not None and not tax.get("others").is_group
    assert tax.by_key("41").code == "action.misalignment"
    assert tax.is_key_prefix("4") and not tax.is_key_prefix("41")


def test_default_is_computer_use_and_hierarchical():
    tax = taxonomy.get()
    assert tax.name == "computer_use"
    assert tax.get("input.swapped_fields").parent == "input"
    assert {"grounding.wrong_element", "input.typo", "sequence.premature_stop", "recovery.wrong_recovery",
            "understanding.instruction_mismatch", "input.missed_checkbox", "input.extra_checkbox",
            "sequence.missed_step", "grounding.wrong_option"} <= {lab.code for lab in tax.leaves()}


def test_user_json_taxonomy_gets_keys_assigned(tmp_path):
    p = tmp_path / "mine.json"
    p.write_text(json.dumps({"name": "mine", "version": 1, "labels": [
        {"code": "a", "name": "A"}, {"code": "g", "name": "G", "children": [{"code": "g1", "name": "G1"}]}]}))
    tax = taxonomy.load(p)
    assert tax.get("a").key == "1" and tax.get("g1").key == "21"
    assert taxonomy.get(str(p)).name == "mine"


def test_missing_field_names_file_field_and_line(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("name: bad\nversion: '1'\nlabels:\n  - code: a\n    name: A\n  - code: b\n")
    with pytest.raises(TaxonomyError) as ei:
        taxonomy.load(p)
    e = ei.value
    assert e.path == str(p) and e.field == "labels[1].name" and e.line == 6
    assert "bad.yaml:6" in str(e) and "required" in str(e)


def test_duplicate_code_and_prefix_key_are_refused(tmp_path):
    p = tmp_path / "dup.yaml"
    p.write_text("name: dup\nversion: '1'\nlabels:\n  - {code: a, name: A}\n  - {code: a, name: B}\n")
    with pytest.raises(TaxonomyError, match=r"labels\[1\]\.code.*duplicate code 'a'"):
        taxonomy.load(p)
    p.write_text("name: pre\nversion: '1'\nlabels:\n  - {code: a, name: A, key: '1'}\n"
                 "  - {code: b, name: B, key: '12'}\n")
    with pytest.raises(TaxonomyError, match="prefix-free") as ei:
        taxonomy.load(p)
    assert ei.value.line == 5


def test_unknown_field_and_bad_syntax(tmp_path):
    p = tmp_path / "x.yaml"
    p.write_text("name: x\nversion: '1'\ncolour: red\nlabels:\n  - {code: a, name: A}\n")
    with pytest.raises(TaxonomyError, match="unknown field.*colour"):
        taxonomy.load(p)
    p.write_text("name: x\nlabels: [\n")
    with pytest.raises(TaxonomyError, match="invalid YAML"):
        taxonomy.load(p)
    j = tmp_path / "x.json"
    j.write_text('{"name": "x",\n "version": }')
    with pytest.raises(TaxonomyError, match="invalid JSON") as ei:
        taxonomy.load(j)
    assert ei.value.line == 2
    with pytest.raises(TaxonomyError, match="no such taxonomy"):
        taxonomy.get(str(tmp_path / "nope.yaml"))


def test_schema_is_valid_and_every_bundled_file_passes_it():
    import jsonschema
    import yaml

    schema = json.loads(taxonomy.SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    for path in taxonomy.bundled().values():
        jsonschema.validate(yaml.safe_load(path.read_text()), schema)


def test_every_collector_mistake_kind_maps_to_a_default_label():
    """The default taxonomy was designed from the scripted agent's failures: each recorded kind has its label."""
    from gui_app.recorders.agents import MISTAKE_TYPES

    tax = taxonomy.get()
    mapped = {kind: tax.resolve_name(kind) for kind in MISTAKE_TYPES}
    assert all(lab is not None and not lab.is_group for lab in mapped.values()), mapped
    assert mapped["missed_field"].code == "sequence.missed_step"
    assert mapped["wrong_then_recover"].code == "recovery.recovered_detour"
