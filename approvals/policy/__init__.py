"""Gatehouse's policy core: pure Python, no Django.

What each program's words mean is its model's (`programs/`: one model per program, in one
registry); what a model does not recognise is never allowed by a class on its own
(`unverified.py`).

Rule policies decide one tool request (`compile_policy`, `evaluate`), are validated with
every problem listed (`policy_problems`), carry examples checked as tests (`check_examples`)
and export to agent-native formats (`export_policy`); session grants narrow
an ask to an allow; the run policy carries guardrails and approval routing; canonical JSON
and the approval hash bind a decision to exactly what a reviewer saw.
"""

from .canonical import JSONFloat, JSONInt, approval_hash, canonical_json, parse_json_strict, policy_version
from .classes import (
    CLASSES,
    DESTRUCTIVE,
    LOCAL,
    OUTSIDE,
    PROTECTED,
    READ_ONLY,
    REMOTE,
    classify_tool,
    classify_words,
)
from .confirm import confirmation_for, confirmation_word
from .edits import EDITABLE_KEYS, edited_request
from .errors import PolicyError
from .evaluate import PathUse, RunView, Segment, Verdict, classify, evaluate
from .example_requests import EXAMPLE_CONTEXT
from .examples import Example, ExampleFailure, check_examples, examples_of
from .export import EXPORT_FORMATS, PolicyExport, export_policy
from .floor_reads import denied_reads
from .grants import grant_covers, suggest_grant, validate_grant
from .modes import RUNTIME_MODES, apply_runtime_mode
from .options import Invocation, invocation
from .paths import PathContext
from .questions import (
    SECRET_MARK,
    answers_for_agent,
    answers_of,
    describe_answers,
    is_complete,
    mask_secrets,
    secrets_of,
    validate_questions,
)
from .readings import Reading, reading_of
from .request import validate_request
from .rules import DEFAULT_POLICY, CompiledPolicy, compile_policy, policy_problems
from .run_policy import RunPolicy, check_capabilities, confirm_requirements, materialise, parse_run_policy, resolve_run_policy
from .shell import parse_script
from .verdicts import Decision

__all__ = [
    "denied_reads",
    "EDITABLE_KEYS",
    "edited_request",
    "confirm_requirements",
    "confirmation_for",
    "confirmation_word",
    "CLASSES",
    "DESTRUCTIVE",
    "LOCAL",
    "OUTSIDE",
    "PROTECTED",
    "READ_ONLY",
    "REMOTE",
    "DEFAULT_POLICY",
    "EXAMPLE_CONTEXT",
    "EXPORT_FORMATS",
    "RUNTIME_MODES",
    "CompiledPolicy",
    "Decision",
    "Example",
    "ExampleFailure",
    "Invocation",
    "JSONFloat",
    "JSONInt",
    "PathContext",
    "PathUse",
    "PolicyError",
    "PolicyExport",
    "Reading",
    "RunPolicy",
    "RunView",
    "Segment",
    "Verdict",
    "SECRET_MARK",
    "answers_for_agent",
    "answers_of",
    "mask_secrets",
    "secrets_of",
    "apply_runtime_mode",
    "approval_hash",
    "canonical_json",
    "check_capabilities",
    "check_examples",
    "classify",
    "classify_tool",
    "classify_words",
    "compile_policy",
    "describe_answers",
    "evaluate",
    "examples_of",
    "export_policy",
    "grant_covers",
    "invocation",
    "is_complete",
    "materialise",
    "parse_json_strict",
    "parse_run_policy",
    "parse_script",
    "policy_problems",
    "policy_version",
    "reading_of",
    "resolve_run_policy",
    "suggest_grant",
    "validate_grant",
    "validate_questions",
    "validate_request",
]
