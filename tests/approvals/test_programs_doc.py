"""docs/programs.md says what the program models say: it is generated from them."""

from __future__ import annotations

from django.core.management import call_command

from approvals.management.commands.policy_docs import programs_doc_path
from approvals.policy.programs.catalogue_doc import programs_markdown
from approvals.policy.programs.registry import MODELS


def test_the_programs_catalogue_is_the_models_catalogue() -> None:
    assert programs_doc_path().read_text() == programs_markdown(), "run `manage.py policy_docs`"


def test_the_catalogue_names_every_model_and_what_its_options_do() -> None:
    text = programs_markdown()
    for name in MODELS:
        assert f"### `{name}`" in text
    assert "`--compress-program` runs code" in text and "`-o` writes FILE" in text


def test_policy_docs_writes_the_catalogue(tmp_path) -> None:
    target = tmp_path / "programs.md"
    call_command("policy_docs", output=str(target))
    assert target.read_text() == programs_markdown()
    call_command("policy_docs", output=str(target), check=True)
