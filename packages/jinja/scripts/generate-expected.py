#!/usr/bin/env python3
"""Generate (or --check) the expected outputs of the @svc/jinja differential corpus.

Every ``test/corpus/cases/<topic>.json`` file holds a JSON array of cases::

    {"name": "...", "template": "...", "context": {...},
     "options": {"trim_blocks": true, "lstrip_blocks": true, "keep_trailing_newline": true}}

Each case is rendered with Python Jinja2 3.1 ``jinja2.sandbox.SandboxedEnvironment``
(autoescape off, the other options from the case) and the result is written to
``test/corpus/expected/<topic>.json`` as an object keyed by case name:

    {"case name": {"output": "..."}}   or   {"case name": {"error": "UndefinedError"}}

Error classes are mapped onto the classes of @svc/jinja (see ``error_class``).

Usage:
    python3 packages/jinja/scripts/generate-expected.py          # (re)write expected/*.json
    python3 packages/jinja/scripts/generate-expected.py --check  # exit 1 if anything differs
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import jinja2
from jinja2 import exceptions as jexc
from jinja2.sandbox import SandboxedEnvironment, SecurityError

ROOT = Path(__file__).resolve().parent.parent
CASES_DIR = ROOT / "test" / "corpus" / "cases"
EXPECTED_DIR = ROOT / "test" / "corpus" / "expected"

ALLOWED_OPTIONS = {"trim_blocks", "lstrip_blocks", "keep_trailing_newline"}
ALLOWED_KEYS = {"name", "template", "context", "options", "note"}


def error_class(exc: BaseException) -> str:
    """Map a Python exception to the error class name @svc/jinja must throw."""
    # TemplateAssertionError (unknown filter/test at compile time) is a
    # TemplateSyntaxError subclass in Jinja2; the port reports it as a syntax error.
    if isinstance(exc, jexc.TemplateSyntaxError):
        return "TemplateSyntaxError"
    # A template Jinja2 accepts but whose generated Python does not compile
    # (e.g. a macro with a duplicate argument name) fails in from_string as well.
    if isinstance(exc, SyntaxError):
        return "TemplateSyntaxError"
    if isinstance(exc, SecurityError):
        return "SecurityError"
    if isinstance(exc, jexc.UndefinedError):
        return "UndefinedError"
    # range() over MAX_RANGE raises OverflowError; deep recursion RecursionError.
    if isinstance(exc, (OverflowError, RecursionError, MemoryError)):
        return "LimitExceededError"
    # Everything else (TemplateRuntimeError, FilterArgumentError, TypeError,
    # ValueError, ZeroDivisionError, KeyError, AttributeError, ...) is a runtime error.
    return "TemplateRuntimeError"


def render_case(case: dict) -> dict:
    opts = case.get("options") or {}
    env = SandboxedEnvironment(
        autoescape=False,
        trim_blocks=bool(opts.get("trim_blocks", False)),
        lstrip_blocks=bool(opts.get("lstrip_blocks", False)),
        keep_trailing_newline=bool(opts.get("keep_trailing_newline", False)),
    )
    try:
        tmpl = env.from_string(case["template"])
        return {"output": tmpl.render(case.get("context") or {})}
    except Exception as exc:  # noqa: BLE001 - every failure is a recorded outcome
        return {"error": error_class(exc)}


def load_cases(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        cases = json.load(fh)
    if not isinstance(cases, list):
        raise SystemExit(f"{path}: top level must be a JSON array of cases")
    seen: set[str] = set()
    for i, case in enumerate(cases):
        where = f"{path.name}[{i}]"
        if not isinstance(case, dict):
            raise SystemExit(f"{where}: case must be an object")
        extra = set(case) - ALLOWED_KEYS
        if extra:
            raise SystemExit(f"{where}: unknown keys {sorted(extra)}")
        name = case.get("name")
        if not isinstance(name, str) or not name:
            raise SystemExit(f"{where}: missing name")
        if name in seen:
            raise SystemExit(f"{where}: duplicate case name {name!r}")
        seen.add(name)
        if not isinstance(case.get("template"), str):
            raise SystemExit(f"{where} ({name}): template must be a string")
        if "context" in case and not isinstance(case["context"], dict):
            raise SystemExit(f"{where} ({name}): context must be an object")
        opts = case.get("options") or {}
        bad = set(opts) - ALLOWED_OPTIONS
        if bad:
            raise SystemExit(f"{where} ({name}): unknown options {sorted(bad)}")
    return cases


def render_file(path: Path) -> dict:
    results: dict[str, dict] = {}
    for case in load_cases(path):
        first = render_case(case)
        second = render_case(case)
        if first != second or " at 0x" in first.get("output", ""):
            raise SystemExit(
                f"{path.name}: case {case['name']!r} is nondeterministic; remove it from the corpus"
            )
        results[case["name"]] = first
    return dict(sorted(results.items()))


def dump(results: dict) -> str:
    return json.dumps(results, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="do not write; exit 1 when a checked-in expectation differs")
    args = parser.parse_args()

    if not jinja2.__version__.startswith("3.1."):
        print(f"warning: expectations are defined for Jinja2 3.1.x, found {jinja2.__version__}",
              file=sys.stderr)

    case_files = sorted(CASES_DIR.glob("*.json"))
    if not case_files:
        print(f"no case files in {CASES_DIR}", file=sys.stderr)
        return 1

    problems: list[str] = []
    total = 0
    expected_names = set()
    for path in case_files:
        results = render_file(path)
        total += len(results)
        target = EXPECTED_DIR / path.name
        expected_names.add(path.name)
        text = dump(results)
        if args.check:
            if not target.exists():
                problems.append(f"{target.name}: missing (run generate-expected.py)")
                continue
            current = json.loads(target.read_text(encoding="utf-8"))
            for name in sorted(set(results) | set(current)):
                if name not in current:
                    problems.append(f"{path.name}: {name!r} has no checked-in expectation")
                elif name not in results:
                    problems.append(f"{path.name}: {name!r} is expected but no longer a case")
                elif current[name] != results[name]:
                    problems.append(
                        f"{path.name}: {name!r} differs: checked in {json.dumps(current[name])[:200]}"
                        f" vs Jinja2 {jinja2.__version__} {json.dumps(results[name])[:200]}"
                    )
        else:
            EXPECTED_DIR.mkdir(parents=True, exist_ok=True)
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                target.write_text(text, encoding="utf-8")
                print(f"wrote {target.relative_to(ROOT)} ({len(results)} cases)")

    stale = [p for p in EXPECTED_DIR.glob("*.json") if p.name not in expected_names]
    for p in stale:
        if args.check:
            problems.append(f"{p.name}: expected file without a case file")
        else:
            p.unlink()
            print(f"removed stale {p.relative_to(ROOT)}")

    if args.check:
        if problems:
            print(f"{len(problems)} expectation(s) out of date (Jinja2 {jinja2.__version__}):",
                  file=sys.stderr)
            for line in problems:
                print("  " + line, file=sys.stderr)
            return 1
        print(f"ok: {total} cases in {len(case_files)} files match Jinja2 {jinja2.__version__}")
    else:
        print(f"{total} cases in {len(case_files)} files (Jinja2 {jinja2.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
